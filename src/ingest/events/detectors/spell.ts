/**
 * A spell: a condition that counts once it has held a minimum time (idling's IDLE_MIN_DURATION,
 * overspeed's OVERSPEED_MIN_DURATION, a stop's STOP_MIN_DURATION, a charging session's
 * CHARGING_MIN_DURATION, a geofence's GEOFENCE_MIN_DWELL, an alarm's ALARM_MIN_DURATION, a trip's
 * TRIP_MIN_DURATION). `lasted` is their one measure: from the spell's first record to `time`, the
 * minimum included.
 */
export const lasted = (since: number, time: number, minMs: number): boolean => time - since >= minMs;

/**
 * A spell told at its start once it has lasted the minimum, stamped where it began, and told again at its
 * end (idling, overspeed): its two numbers, kept among the detector's own (their place in its flat slice
 * is the detector's).
 */
export interface Spell {
  /** Its start (NaN: none under way). */
  since: number;
  /** 1 once its start was told. */
  told: number;
}

/** The spell begins at `time`, unless one is under way; whether it began. */
export function spellBegin(s: Spell, time: number): boolean {
  if (s.since === s.since) return false;
  s.since = time;
  s.told = 0;
  return true;
}

/** Whether its start is to be told now: under way, not told, and it has lasted `minMs` by `time` (it is then told). */
export function spellDue(s: Spell, time: number, minMs: number): boolean {
  if (s.since !== s.since || s.told !== 0 || !lasted(s.since, time, minMs)) return false;
  s.told = 1;
  return true;
}

/**
 * The spell under way ends at `at`: `'short'`, it never lasted `minMs` and nothing is told; `'untold'`, it
 * lasted but its start was not told yet (it reached the minimum between two records: tell it now, then its
 * end); `'told'`, tell its end.
 */
export function spellEnd(s: Spell, at: number, minMs: number): 'short' | 'untold' | 'told' {
  const since = s.since;
  const told = s.told;
  s.since = NaN;
  s.told = 0;
  if (told !== 0) return 'told';
  return lasted(since, at, minMs) ? 'untold' : 'short';
}
