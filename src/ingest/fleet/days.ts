import { DateTime } from 'luxon';

/**
 * A vehicle's days in the fleet's time zone (FLEET_TIMEZONE, an IANA name), from its derived history.
 * A day is local midnight to local midnight, so 23 or 25 hours on the days clocks change. Everything
 * counts to the day its point is stamped in: a trip, a stop and a charging session to the day it started
 * (a trip across midnight is the day it set off), an event to the day it happened (an idle to the day it
 * ended, whose `idle_ended` carries its length).
 */
export interface LocalDay {
  /** The local date, YYYY-MM-DD. */
  day: string;
  /** Local midnight to the next, epoch ms; `end` excluded. */
  start: number;
  end: number;
}

/** The local days from the one holding `since` to the one holding `until`, in `zone`. */
export function localDays(since: number, until: number, zone: string): LocalDay[] {
  const days: LocalDay[] = [];
  let d = DateTime.fromMillis(since, { zone }).startOf('day');
  while (d.toMillis() <= until) {
    const next = d.plus({ days: 1 });
    days.push({ day: d.toISODate()!, start: d.toMillis(), end: next.toMillis() });
    d = next;
  }
  return days;
}

/** The derived history of one vehicle over the days asked, as read from InfluxDB (times epoch ms). */
export interface DayInputs {
  trips: Array<{ time: number; duration_s: number | null; distance_m: number | null; soc_start: number | null; soc_end: number | null; overspeed_s: number | null }>;
  stops: Array<{ time: number; duration_s: number | null }>;
  charging: Array<{ time: number; energy_wh: number | null }>;
  events: Array<{ time: number; event: string; duration_s: number | null }>;
  /** Each day's first and last GPS fix (the vehicle's first and last report), by `LocalDay.day`. */
  reports: Map<string, { first: number; last: number }>;
}

export interface DaySummary {
  day: string;
  start: number;
  end: number;
  /** Trips started that day: how many, how far (m), how long (s). */
  trips: number;
  distance_m: number;
  driving_s: number;
  /** Idling ended that day (s), from `idle_ended`'s `duration_s`. */
  idle_s: number;
  stops: number;
  /** State of charge used by the day's trips: the sum of each one's fall, percentage points (trips with both known). */
  soc_used: number;
  /** Charging sessions started that day, and the energy they charged (Wh, of those that know it). */
  charging_sessions: number;
  energy_charged_wh: number;
  overspeeds: number;
  overspeed_s: number;
  /** Alarms raised (`alert_*_raised`), fuel drops and refuels that day. */
  alarms: number;
  fuel_drops: number;
  refuels: number;
  first_report: number | null;
  last_report: number | null;
}

const n = (v: number | null): number => (v === null || !Number.isFinite(v) ? 0 : v);

export function summarizeDays(days: readonly LocalDay[], input: DayInputs): DaySummary[] {
  const out = days.map(
    (d): DaySummary => ({
      ...d,
      trips: 0,
      distance_m: 0,
      driving_s: 0,
      idle_s: 0,
      stops: 0,
      soc_used: 0,
      charging_sessions: 0,
      energy_charged_wh: 0,
      overspeeds: 0,
      overspeed_s: 0,
      alarms: 0,
      fuel_drops: 0,
      refuels: 0,
      first_report: input.reports.get(d.day)?.first ?? null,
      last_report: input.reports.get(d.day)?.last ?? null,
    }),
  );
  const dayOf = (t: number): DaySummary | undefined => out.find((d) => t >= d.start && t < d.end);
  for (const t of input.trips) {
    const d = dayOf(t.time);
    if (!d) continue;
    d.trips++;
    d.distance_m += n(t.distance_m);
    d.driving_s += n(t.duration_s);
    d.overspeed_s += n(t.overspeed_s);
    if (t.soc_start !== null && t.soc_end !== null && t.soc_start > t.soc_end) d.soc_used += t.soc_start - t.soc_end;
  }
  for (const s of input.stops) {
    const d = dayOf(s.time);
    if (d) d.stops++;
  }
  for (const c of input.charging) {
    const d = dayOf(c.time);
    if (!d) continue;
    d.charging_sessions++;
    d.energy_charged_wh += n(c.energy_wh);
  }
  for (const e of input.events) {
    const d = dayOf(e.time);
    if (!d) continue;
    if (e.event === 'idle_ended') d.idle_s += n(e.duration_s);
    else if (e.event === 'overspeed_started') d.overspeeds++;
    else if (e.event === 'fuel_drop') d.fuel_drops++;
    else if (e.event === 'fuel_refuel') d.refuels++;
    else if (/^alert_.+_raised$/.test(e.event)) d.alarms++;
  }
  return out;
}
