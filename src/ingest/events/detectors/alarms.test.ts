import { describe, expect, it } from 'vitest';
import { ALARM_FIELDS } from '../../../telemetry/fields.js';
import { flush, ingest, newState } from '../derive.js';
import { can, OPTS, runAt, runOrdered, T0, V } from '../events.testkit.js';

/** ALARM_MIN_DURATION=0: every alarm told the moment it flips. */
const AT_ONCE = { ...OPTS, alarmMinDurationMs: 0 };

describe('alarms', () => {
  it('raises what a first record has at 1, then each flip exactly once', () => {
    const rs = [
      can(T0, { alert_over_temp: 1, alert_short_circuit: 0, soc: 50 }),
      can(T0 + 1000, { alert_over_temp: 1 }),
      can(T0 + 2000, { soc: 49 }), // carries no flag: flips nothing (absent is not 0)
      can(T0 + 3000, { alert_over_temp: 0, alert_short_circuit: 1, battery_voltage: 51.5, current: -3 }),
      can(T0 + 4000, { alert_short_circuit: 0 }),
      can(T0 + 5000, { alert_short_circuit: 1, alert_under_temp: 0 }),
    ];
    const d = runOrdered(rs, AT_ONCE);
    expect(d.events).toEqual([
      { vehicleno: V, event: 'alert_over_temp_raised', time: T0, value: 1, fields: { soc: 50 } },
      { vehicleno: V, event: 'alert_over_temp_cleared', time: T0 + 3000, value: 0, fields: { soc: 49, battery_voltage: 51.5, current: -3 } },
      { vehicleno: V, event: 'alert_short_circuit_raised', time: T0 + 3000, value: 1, fields: { soc: 49, battery_voltage: 51.5, current: -3 } },
      { vehicleno: V, event: 'alert_short_circuit_cleared', time: T0 + 4000, value: 0, fields: { soc: 49 } },
      { vehicleno: V, event: 'alert_short_circuit_raised', time: T0 + 5000, value: 1, fields: { soc: 49 } },
    ]);
  });

  it('knows all fifteen flags of the schema', () => {
    expect(ALARM_FIELDS).toHaveLength(15);
    const all = Object.fromEntries(ALARM_FIELDS.map((a) => [a, 1]));
    const d = runOrdered([can(T0, all), can(T0 + 1000, Object.fromEntries(ALARM_FIELDS.map((a) => [a, 0])))], AT_ONCE);
    expect(d.events.map((e) => e.event)).toEqual([...ALARM_FIELDS.map((a) => `${a}_raised`), ...ALARM_FIELDS.map((a) => `${a}_cleared`)]);
  });

  it('a record too late for its window changes nothing live: a correction is due from its time (corrections/ tells its alarm)', () => {
    const s = newState();
    const rs = Array.from({ length: 61 }, (_, j) => can(T0 + j * 1000, { soc: 50, alert_thermal_runaway: 0 }));
    ingest(V, s, rs, T0 + 61_000);
    // 60 s of records, W = 30 s: T0 … T0 + 30 s committed. A record at T0 + 20.5 s, with the runaway raised, arrives now.
    const late = ingest(V, s, [can(T0 + 20_500, { alert_thermal_runaway: 1, load_status: 2 })], T0 + 61_001);
    expect(late).toMatchObject({ late: 1, duplicates: 0, events: [] });
    expect(s.alarms.raised).toBe(0);
    expect(s.late.correctFrom).toBe(T0 + 20_500);
    // The next record in order carrying the flag at 0 clears nothing: the live state never held it.
    expect(flush(V, s, T0 + 61_001 + OPTS.streamQuietMs).events).toEqual([]);
  });

  it('two records of one instant are merged: an alarm in either is seen, whatever their order', () => {
    // A CAN bulk without times: both stamped with the receive time.
    const a = can(T0 + 1000, { soc: 60, alert_short_circuit: 1 });
    const b = can(T0 + 1000, { soc: 61, battery_voltage: 52, alert_short_circuit: 0 });
    const first = can(T0, { soc: 60, alert_short_circuit: 0 });
    for (const pair of [
      [a, b],
      [b, a],
    ]) {
      const d = runAt([[T0 + 1000, [first, ...pair]]]);
      expect(d.events.map((e) => e.event)).toEqual(['alert_short_circuit_raised']);
      expect(d.duplicates).toBe(0);
    }
  });

  describe('ALARM_MIN_DURATION: noise bounded, safety never held back', () => {
    const MIN = OPTS.alarmMinDurationMs;
    it('tells a flag that flips every record nothing, and one that held the minimum once, at the record that shows it, with its raise as `since`', () => {
      const flapping = Array.from({ length: 60 }, (_, j) => can(T0 + j * 1000, { alert_over_temp: j % 2, soc: 50 }));
      expect(runOrdered(flapping).events).toEqual([]);
      const held = [
        can(T0, { alert_over_temp: 1, soc: 50 }),
        can(T0 + 10_000, { soc: 50 }), // carries no flag: neither clears nor confirms it
        can(T0 + MIN - 1, { alert_over_temp: 1 }),
        can(T0 + MIN, { soc: 49 }),
        can(T0 + MIN + 5_000, { alert_over_temp: 1 }),
        can(T0 + MIN + 10_000, { alert_over_temp: 0 }),
      ];
      expect(runOrdered(held).events.map((e) => [e.event, e.time - T0, e.fields.since === undefined ? undefined : e.fields.since - T0])).toEqual([
        ['alert_over_temp_raised', MIN, 0],
        ['alert_over_temp_cleared', MIN + 10_000, undefined],
      ]);
    });

    it('tells a flag at most twice per ALARM_MIN_DURATION, however it flips', () => {
      // Up for 31 s, down for 1 s, over and over, for ten minutes.
      const rs = Array.from({ length: 600 }, (_, j) => can(T0 + j * 1000, { alert_over_temp: j % 32 === 31 ? 0 : 1 }));
      const told = runOrdered(rs).events;
      expect(told.length).toBeGreaterThan(0);
      expect(told.length).toBeLessThanOrEqual(2 * Math.ceil(600_000 / MIN));
      const raises = told.filter((e) => e.event.endsWith('_raised')).map((e) => e.time);
      for (let i = 1; i < raises.length; i++) expect(raises[i]! - raises[i - 1]!).toBeGreaterThanOrEqual(MIN);
    });

    it('tells a safety alarm the moment it is raised, however briefly, and its clearing', () => {
      const rs = [can(T0, { alert_thermal_runaway: 0, alert_short_circuit: 0 }), can(T0 + 1000, { alert_thermal_runaway: 1 }), can(T0 + 2000, { alert_thermal_runaway: 0, alert_short_circuit: 1 }), can(T0 + 3000, { alert_short_circuit: 0 })];
      expect(runOrdered(rs).events.map((e) => [e.event, e.time - T0])).toEqual([
        ['alert_thermal_runaway_raised', 1000],
        ['alert_short_circuit_raised', 2000],
        ['alert_thermal_runaway_cleared', 2000],
        ['alert_short_circuit_cleared', 3000],
      ]);
    });

    it('holds what it waits for across a stored state, and tells the same as one run', () => {
      const rs = Array.from({ length: 90 }, (_, j) => can(T0 + j * 1000, { alert_over_temp: j >= 10 && j < 70 ? 1 : 0, alert_under_temp: j >= 20 && j < 35 ? 1 : 0 }));
      const whole = runOrdered(rs).events;
      expect(whole.map((e) => [e.event, e.time - T0])).toEqual([
        ['alert_over_temp_raised', 40_000],
        ['alert_over_temp_cleared', 70_000],
      ]);
      expect(runOrdered(rs, OPTS, true).events).toEqual(whole);
    });
  });
});
