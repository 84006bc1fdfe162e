import { describe, expect, it } from 'vitest';
import { can, eventTimes, gps, OPTS, runOrdered, sorted, T0, type Named } from '../events.testkit.js';
import type { EventInput } from '../derive.js';

/** Idle at 40 %, then 600 s of charging at 50 V with the current rising 20 → 40 A (1000 → 2000 W), then idle. */
function charge(extra: Partial<{ sign: number; withLoad: boolean }> = {}): Named[] {
  const sign = extra.sign ?? 1;
  const withLoad = extra.withLoad ?? true;
  const rs: Named[] = [can(T0, { soc: 40, current: -0.4 * sign, ...(withLoad ? { load_status: 0 } : {}) })];
  for (let j = 0; j <= 60; j++) {
    const t = T0 + 10_000 + j * 10_000;
    const f: Record<string, number> = { soc: 40 + Math.floor(j / 3), battery_voltage: 50, current: sign * (20 + j / 3) };
    if (withLoad) f.load_status = 2;
    if (j === 31) delete f.battery_voltage; // a record without voltage: the trapezoid spans it
    rs.push(can(t, f));
  }
  rs.push(can(T0 + 620_000, { soc: 61, current: -0.4 * sign, battery_voltage: 50, ...(withLoad ? { load_status: 0 } : {}) }));
  return rs;
}

const HOUR = 3_600_000;

describe('charging', () => {
  it('a session: ends, soc at each, energy as by hand', () => {
    const d = runOrdered(charge());
    // Power rises linearly 1000 → 2000 W over the 600 s from the first charging record to the last: the
    // trapezoids are exact, 1500 W × 600 s = 900 kJ = 250 Wh.
    expect(d.chargingSessions).toHaveLength(1);
    const s = d.chargingSessions[0]!;
    expect(s).toMatchObject({ vehicleno: 'KA01AB1234', start: T0 + 10_000, end: T0 + 620_000, durationS: 610, socStart: 40, socEnd: 61 });
    expect(s.energyWh).toBeCloseTo(250, 9);
    expect(eventTimes(d)).toEqual([
      ['charging_started', T0 + 10_000],
      ['charging_stopped', T0 + 620_000],
    ]);
    expect(d.events[0]!.fields).toEqual({ soc: 40, battery_voltage: 50, current: 20 });
    expect(d.events[1]!.fields.durationS).toBe(610);
    expect(d.events[1]!.fields.energyWh).toBeCloseTo(250, 9);
  });

  it('without load_status, the current decides for a vehicle standing still, once it has lasted the minimum; stamped at its first record', () => {
    const d = runOrdered(charge({ withLoad: false }));
    expect(d.chargingSessions[0]).toMatchObject({ start: T0 + 10_000, end: T0 + 620_000 });
    expect(d.chargingSessions[0]!.energyWh).toBeCloseTo(250, 9);
    expect(eventTimes(d)).toEqual([
      ['charging_started', T0 + 10_000],
      ['charging_stopped', T0 + 620_000],
    ]);
    expect(runOrdered(charge({ withLoad: false, sign: -1 })).chargingSessions).toEqual([]);
    const negative = { ...OPTS, currentSign: { from: 'signed' as const, charging: 'negative' as const } };
    expect(runOrdered(charge({ withLoad: false }), negative).chargingSessions).toEqual([]);
    expect(runOrdered(charge({ withLoad: false, sign: -1 }), negative).chargingSessions[0]!.energyWh).toBeCloseTo(250, 9);
    // load_status wins over the current's sign.
    expect(runOrdered(charge({ sign: -1 })).chargingSessions).toHaveLength(1);
    // Below the minimum current: idle, not charging.
    const trickle = [can(T0, { current: 0.3 }), can(T0 + 100_000, { current: 0.4 }), can(T0 + 200_000, { current: -1 })];
    expect(runOrdered(trickle).events).toEqual([]);
  });

  it('a pack sending the current unsigned (CURRENT_SIGN_FROM=load_status): load_status tells charging, the current alone nothing', () => {
    const unsigned = { ...OPTS, currentSign: { from: 'load_status' as const, charging: 'positive' as const } };
    const magnitudes = (rs: Named[]) => rs.map((r) => (r.type === 'can' && typeof r.fields.current === 'number' ? can(r.time, { ...r.fields, current: Math.abs(r.fields.current) }) : r));
    // Signed, a magnitude of 0.4 A idling and 20–40 A charging reads as charging throughout when load_status is missing...
    expect(runOrdered(magnitudes(charge({ withLoad: false, sign: -1 }))).chargingSessions).toHaveLength(1);
    // ...from load_status, it says nothing: no session without load_status, and the same session as signed with it.
    expect(runOrdered(magnitudes(charge({ withLoad: false, sign: -1 })), unsigned).events).toEqual([]);
    const withLoad = runOrdered(magnitudes(charge({ sign: -1 })), unsigned);
    expect(withLoad.chargingSessions).toEqual(runOrdered(charge()).chargingSessions);
    // A record without load_status amid a session neither stops nor extends it.
    const gap = charge().map((r) => (r.time === T0 + 300_000 ? can(r.time, { current: 25 }) : r));
    expect(runOrdered(magnitudes(gap), unsigned).chargingSessions).toEqual(runOrdered(charge()).chargingSessions);
  });

  it('regenerative braking is not charging: +5 A bursts while driving, without load_status, start no session', () => {
    const rs: EventInput[] = [];
    for (let j = 0; j < 600; j++) {
      const t = T0 + j * 1000;
      rs.push(gps(t, 12.97 + j * 0.0001, 77.59, 40, 1));
      // Every 25 s, 4 s of braking: +5 A; else discharging.
      rs.push(can(t + 500, { current: j % 25 < 4 ? 5 : -30, battery_voltage: 51, soc: 70 }));
    }
    rs.push(gps(T0 + 600_000, 12.97 + 0.06, 77.59, 0, 0));
    const d = runOrdered(sorted(rs));
    expect(d.events.filter((e) => e.event.startsWith('charging'))).toEqual([]);
    // A minute of braking downhill while driving is still not charging (the vehicle moves).
    const downhill = rs.map((r) => (r.type === 'can' && r.time < T0 + 100_000 ? can(r.time, { current: 5, battery_voltage: 51 }) : r));
    expect(runOrdered(sorted(downhill)).events.filter((e) => e.event.startsWith('charging'))).toEqual([]);
  });

  it('shorter than the minimum: dropped, its events kept when load_status told them; no energy without two powers', () => {
    const d = runOrdered([can(T0, { load_status: 2, soc: 50 }), can(T0 + 30_000, { load_status: 2 }), can(T0 + 50_000, { load_status: 0 })]);
    expect(d.chargingSessions).toEqual([]);
    expect(d.events.map((e) => e.event)).toEqual(['charging_started', 'charging_stopped']);
    const long = runOrdered([can(T0, { load_status: 2, soc: 50 }), can(T0 + 90_000, { load_status: 0 })]);
    expect(long.chargingSessions).toEqual([{ vehicleno: 'KA01AB1234', start: T0, end: T0 + 90_000, durationS: 90, socStart: 50, socEnd: 50 }]);
  });

  it('a gap longer than EVENTS_MAX_GAP ends the session at its last record; no energy across it', () => {
    // 10 min at 1 kW, 3 h of silence, one more charging record, then idle.
    const rs: EventInput[] = [];
    for (let j = 0; j <= 60; j++) rs.push(can(T0 + j * 10_000, { load_status: 2, battery_voltage: 50, current: 20, soc: 40 + j / 10 }));
    rs.push(can(T0 + 600_000 + 3 * HOUR, { load_status: 2, battery_voltage: 50, current: 20, soc: 80 }));
    rs.push(can(T0 + 660_000 + 3 * HOUR, { load_status: 0, soc: 80 }));
    const d = runOrdered(rs);
    expect(d.chargingSessions[0]).toMatchObject({ start: T0, end: T0 + 600_000, socStart: 40, socEnd: 46 });
    expect(d.chargingSessions[0]!.energyWh).toBeCloseTo(1000 / 6, 6); // 1 kW × 10 min
    expect(d.chargingSessions[1]).toMatchObject({ start: T0 + 600_000 + 3 * HOUR, end: T0 + 660_000 + 3 * HOUR });
    expect(d.chargingSessions[1]!.energyWh).toBeUndefined();
    expect(eventTimes(d).map(([e]) => e)).toEqual(['charging_started', 'charging_stopped', 'charging_started', 'charging_stopped']);
  });
});
