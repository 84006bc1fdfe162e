import { describe, expect, it } from 'vitest';
import { chargingCurrent, SIGNED_POSITIVE_CHARGING } from './current.js';
import { SETTING_DEFAULTS } from '../config/index.js';

describe("the current's direction", () => {
  it('by default is the signed current as sent, charging positive (nothing changes for the fleets before the setting)', () => {
    expect({ from: SETTING_DEFAULTS.CURRENT_SIGN_FROM, charging: SETTING_DEFAULTS.CHARGING_CURRENT_SIGN }).toEqual(SIGNED_POSITIVE_CHARGING);
    expect([chargingCurrent(30, 1, SIGNED_POSITIVE_CHARGING), chargingCurrent(-12.5, undefined, SIGNED_POSITIVE_CHARGING)]).toEqual([30, -12.5]);
    expect(chargingCurrent(30, undefined, { from: 'signed', charging: 'negative' })).toBe(-30);
  });

  it('from load_status: a magnitude given its direction by the record, nothing without it', () => {
    const sign = { from: 'load_status', charging: 'positive' } as const;
    expect([2, 1, 0].map((load) => chargingCurrent(-30, load, sign))).toEqual([30, -30, 0]);
    expect([2, 1].map((load) => chargingCurrent(30, load, sign))).toEqual([30, -30]);
    expect(chargingCurrent(30, undefined, sign)).toBeNaN();
    expect(chargingCurrent(30, 7, sign)).toBeNaN();
  });
});
