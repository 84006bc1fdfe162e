import { describe, expect, it } from 'vitest';
import { ALARM_FIELDS } from '../../../telemetry/fields.js';
import { flush, ingest, newState } from '../derive.js';
import { can, OPTS, runAt, runOrdered, T0, V } from '../events.testkit.js';

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
    const d = runOrdered(rs);
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
    const d = runOrdered([can(T0, all), can(T0 + 1000, Object.fromEntries(ALARM_FIELDS.map((a) => [a, 0])))]);
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
    expect(flush(V, s, T0 + 61_001 + OPTS.idleMs).events).toEqual([]);
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
});
