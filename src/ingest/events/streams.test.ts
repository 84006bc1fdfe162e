import { describe, expect, it } from 'vitest';
import { flush, ingest, newState, type Derived, type EventInput } from './derive.js';
import { can, collect, eventTimes, gps, north, OPTS, quiet, T0, V } from './events.testkit.js';

/** Each record type its own ordered stream: as a fleet's data really arrives. */

/** Delivers each [wall time, records] in turn, with the sweep's flush between deliveries (every 5 s of wall time). */
function play(deliveries: ReadonlyArray<readonly [number, readonly EventInput[]]>): ReturnType<typeof collect> {
  const s = newState();
  const parts: Derived[] = [];
  let now = deliveries[0]![0];
  for (const [at, records] of [...deliveries].sort((a, b) => a[0] - b[0])) {
    for (; now + 5_000 < at; now += 5_000) parts.push(flush(V, s, now));
    now = at;
    parts.push(ingest(V, s, records, at));
  }
  parts.push(flush(V, s, now + quiet(OPTS)));
  return collect(parts);
}

/** A 10-minute drive: GPS and CAN a second each, the pack over temperature for 20 s from 240 s, a thermal runaway for 3 s at 400 s. */
function drive(): { gps: EventInput[]; can: EventInput[] } {
  const g: EventInput[] = [];
  const c: EventInput[] = [];
  for (let j = 0; j <= 600; j++) {
    const t = T0 + j * 1000;
    g.push(gps(t, 12.97 + north(10 * j), 77.59, j === 0 || j === 600 ? 0 : 36, j === 600 ? 0 : 1));
    c.push(can(t + 300, { soc: 80 - Math.floor(j / 60), current: -25, battery_voltage: 51, alert_over_temp: j >= 240 && j < 260 ? 1 : 0, alert_thermal_runaway: j >= 400 && j < 403 ? 1 : 0 }));
  }
  return { gps: g, can: c };
}

describe('streams', () => {
  it('CAN pushed in 60-s or 5-min bulks behind a realtime GPS stream loses no alarm, each told at its record time', () => {
    const { gps: g, can: c } = drive();
    const inStep = play([...g, ...c].map((r) => [r.time + 500, [r]] as const));
    // The over-temperature flag held 20 s, under ALARM_MIN_DURATION (30 s): not told. The thermal runaway, a
    // safety alarm, is told at once however short.
    expect(eventTimes(inStep).filter(([e]) => e.startsWith('alert_'))).toEqual([
      ['alert_thermal_runaway_raised', T0 + 400_300],
      ['alert_thermal_runaway_cleared', T0 + 403_300],
    ]);
    for (const bulkMs of [60_000, 300_000]) {
      const bulks = new Map<number, EventInput[]>();
      for (const r of c) {
        const end = T0 + (Math.floor((r.time - T0) / bulkMs) + 1) * bulkMs;
        bulks.set(end, [...(bulks.get(end) ?? []), r]);
      }
      const d = play([...g.map((r) => [r.time + 500, [r]] as const), ...[...bulks].map(([end, rs]) => [end + 2_000, rs] as const)]);
      expect(d.late).toBe(0);
      expect(eventTimes(d).sort()).toEqual(eventTimes(inStep).sort());
      expect(d.trips).toEqual(inStep.trips);
      expect(d.trips[0]).toMatchObject({ socStart: 80, socEnd: 71 });
    }
  });

  it('one record stamped 10 min ahead neither makes the records after it late nor erases a trip', () => {
    // A vehicle reporting every 50 s: parked, a 7-minute drive, parked again; each record sent as it is
    // taken, the sweep flushing between them. One parked record's clock is 10 minutes ahead.
    const records: Array<[number, EventInput]> = [];
    for (let j = 0; j <= 20; j++) {
      const t = T0 + j * 50_000;
      const driving = j >= 2 && j < 11; // 100 s → 550 s: 7.5 minutes
      const ign = driving ? 1 : 0;
      records.push([t + 1_000, gps(t, 12.97 + north(driving ? 500 * (j - 2) : j < 2 ? 0 : 4_500), 77.59, driving ? 36 : 0, ign)]);
    }
    const ahead = gps(T0 + 50_000 + 600_000 + 7, 12.97, 77.59, 0, 0);
    const plain = play(records.map(([at, r]) => [at, [r]] as const));
    expect(plain.trips).toHaveLength(1);
    expect(plain.trips[0]).toMatchObject({ start: T0 + 100_000, end: T0 + 550_000 });
    const withAhead = play([...records.map(([at, r]) => [at, [r]] as const), [T0 + 51_500, [ahead]]]);
    expect(withAhead.late).toBe(0);
    expect(withAhead.trips).toEqual(plain.trips);
    expect(eventTimes(withAhead)).toEqual(eventTimes(plain));
  });
});
