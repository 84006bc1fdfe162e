/**
 * The direction of a pack's `current`, one rule for every reader that derives from it (charging sessions,
 * the command ledger's charging / discharging, and whatever counts charge in and out). The spec does not
 * say which sign charges; most packs send `current` signed (`CHARGING_CURRENT_SIGN` says which sign is
 * charging), some send a magnitude and tell the direction only by `load_status` (the schema's 0 idle,
 * 1 discharging, 2 charging; the spec has no other direction field): `CURRENT_SIGN_FROM=load_status`.
 */
export interface CurrentSign {
  /** CURRENT_SIGN_FROM: `signed`, the current's own sign; `load_status`, a magnitude whose direction the record's `load_status` gives. */
  from: 'signed' | 'load_status';
  /** CHARGING_CURRENT_SIGN: the sign a signed current has while charging. */
  charging: 'positive' | 'negative';
}

/** As the spec's packs send it, and the emulator. */
export const SIGNED_POSITIVE_CHARGING: CurrentSign = Object.freeze({ from: 'signed', charging: 'positive' });

/**
 * A record's `current` in amperes, positive charging and negative discharging; `loadStatus` undefined
 * when the record has none. NaN when the record does not tell the direction (CURRENT_SIGN_FROM
 * `load_status` and no `load_status` 1 or 2 in it; idle, 0, is 0 A): such a reading says nothing of
 * charging either way.
 */
export function chargingCurrent(current: number, loadStatus: number | undefined, sign: CurrentSign): number {
  if (sign.from === 'signed') return sign.charging === 'positive' ? current : -current;
  return loadStatus === 2 ? Math.abs(current) : loadStatus === 1 ? -Math.abs(current) : loadStatus === 0 ? 0 : NaN;
}
