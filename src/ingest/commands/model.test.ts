import { describe, expect, it } from 'vitest';
import { canMove, FINAL, judge, MOVES, snapshotOf, STATES, unsafeBecause, waitsForSafety, type LatestValues } from './model.js';

const T = Date.UTC(2026, 0, 5, 10, 0, 0);
const safety = { maxFixAgeMs: 120_000, motionSpeedKmh: 3 };
const gps = (t: number, speed: number, ign: number): LatestValues['fields'] => ({ lat: [t, 12.97], lng: [t, 77.59], speed: [t, speed], ignstatus: [t, ign] });

describe('the state machine', () => {
  it('moves forward only: requested → waiting → sending → sent → an end, and nothing leaves an end', () => {
    expect(canMove('requested', 'waiting')).toBe(true);
    expect(canMove('waiting', 'sending')).toBe(true);
    expect(canMove('sending', 'sent')).toBe(true);
    expect(canMove('sent', 'confirmed')).toBe(true);
    expect(canMove('sent', 'not_confirmed')).toBe(true);
    expect(canMove('waiting', 'expired')).toBe(true);
    expect(canMove('sending', 'failed')).toBe(true);
    for (const end of FINAL) for (const s of STATES) expect(canMove(end, s), `${end} → ${s}`).toBe(false);
    // Never back to waiting once sent, never sent twice, never expired once in the upstream's hands.
    expect(canMove('sent', 'waiting')).toBe(false);
    expect(canMove('sent', 'sending')).toBe(false);
    expect(canMove('sending', 'expired')).toBe(false);
    expect(canMove('sending', 'cancelled')).toBe(false);
  });

  it('every state is reachable from requested', () => {
    const seen = new Set(['requested']);
    for (let grew = true; grew; ) {
      grew = false;
      for (const s of [...seen]) for (const n of MOVES[s as keyof typeof MOVES]) if (!seen.has(n)) grew = seen.add(n) !== undefined;
    }
    expect([...seen].sort()).toEqual([...STATES].sort());
  });
});

describe('safe by default', () => {
  it('an immobilise of a type that can stop a moving vehicle waits; charge, mobilise and immediate do not', () => {
    for (const t of ['ignition', 'crank', 'movement', 'can', 'discharge', 'chargendischarge'] as const) expect(waitsForSafety('immobilize', t, false), t).toBe(true);
    expect(waitsForSafety('immobilize', 'charge', false)).toBe(false);
    expect(waitsForSafety('immobilize', 'movement', true)).toBe(false);
    expect(waitsForSafety('mobilize', 'movement', false)).toBe(false);
  });

  it('is safe only standing, ignition off, on a recent fix', () => {
    expect(unsafeBecause(undefined, T, safety)).toMatch(/no GPS fix/);
    expect(unsafeBecause({ fields: gps(T - 1000, 60, 1) }, T, safety)).toBe('moving at 60 km/h');
    expect(unsafeBecause({ fields: gps(T - 1000, 0, 1) }, T, safety)).toBe('ignition on');
    expect(unsafeBecause({ fields: gps(T - 1000, 2, 0) }, T, safety)).toBeUndefined();
    expect(unsafeBecause({ fields: gps(T - 121_000, 0, 0) }, T, safety)).toMatch(/121 s old/);
  });
});

describe('confirmed from the vehicle’s own data', () => {
  const sentAt = T;
  it('movement: a fix after sending, standing with the ignition off, and no active fix after it', () => {
    const c = { op: 'immobilize' as const, type: 'movement' as const, sentAt };
    expect(judge(c, { fields: gps(T - 1, 0, 0) })).toBeUndefined();
    expect(judge(c, { fields: gps(T + 5_000, 0, 0) })).toMatchObject({ confirmed: true });
    expect(judge(c, { fields: gps(T + 5_000, 0, 0), active: [T + 2_000, 0, 0, 20, 1] })).toBeUndefined();
  });

  it('mobilise movement: the ignition on or moving after sending', () => {
    const c = { op: 'mobilize' as const, type: 'ignition' as const, sentAt };
    expect(judge(c, { fields: gps(T + 5_000, 0, 0) })).toBeUndefined();
    expect(judge(c, { fields: gps(T + 5_000, 0, 1), active: [T + 5_000, 0, 0, 0, 1] })).toMatchObject({ confirmed: true, because: expect.stringMatching(/ignition on/) });
  });

  it('charge: allow_charging 0, or a current after sending that is not charging', () => {
    const c = { op: 'immobilize' as const, type: 'charge' as const, sentAt };
    expect(judge(c, { fields: { allow_charging: [T + 1, 0] } })).toMatchObject({ confirmed: true });
    expect(judge(c, { fields: { current: [T + 1, 30] }, charging: T + 1 })).toBeUndefined();
    expect(judge(c, { fields: { current: [T + 9, -0.4] }, charging: T + 1 })).toMatchObject({ confirmed: true });
    expect(judge(c, { fields: { current: [T - 9, -0.4] } })).toBeUndefined();
  });

  it('discharge: allow_discharging 0, or no discharging current; chargendischarge: both', () => {
    const c = { op: 'immobilize' as const, type: 'discharge' as const, sentAt };
    expect(judge(c, { fields: { allow_discharging: [T + 1, 0] } })).toMatchObject({ confirmed: true });
    expect(judge(c, { fields: { current: [T + 1, -20] }, discharging: T + 1 })).toBeUndefined();
    const both = { ...c, type: 'chargendischarge' as const };
    expect(judge(both, { fields: { allow_discharging: [T + 1, 0] } })).toBeUndefined();
    expect(judge(both, { fields: { allow_discharging: [T + 1, 0], allow_charging: [T + 1, 0] } })).toMatchObject({ confirmed: true });
  });

  it('records the vehicle’s state when asked', () => {
    expect(snapshotOf({ fields: { ...gps(T, 0, 0), soc: [T, 55], allow_discharging: [T, 1] } })).toEqual({ fixTime: T, lat: 12.97, lng: 77.59, speed: 0, ignition: 0, soc: 55, allowDischarging: 1 });
  });
});
