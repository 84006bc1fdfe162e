import { describe, expect, it } from 'vitest';
import { can, eventTimes, gps, OPTS, runAt, runOrdered, sorted, T0, type Named } from '../events.testkit.js';

/** Charge draining while parked: SOC_DRAIN_MIN (5 points) within SOC_DRAIN_WINDOW (6 h), the ignition off, standing, not charging. */

const MIN = 60_000;
/** Parked (a fix a minute, ignition `ign`, standing) for `minutes`, the soc read each minute from `soc(j)`. */
function parked(minutes: number, ign: number, soc: (j: number) => number, extra: Record<string, number> = {}): Named[] {
  const out: Named[] = [];
  for (let j = 0; j <= minutes; j++) {
    out.push(gps(T0 + j * MIN, 12.9, 77, 0, ign));
    out.push(can(T0 + j * MIN + 500, { soc: soc(j), ...extra }));
  }
  return sorted(out);
}

describe('charge draining while parked', () => {
  it('is told once at the record where the soc has fallen SOC_DRAIN_MIN since the highest within the window', () => {
    expect(OPTS).toMatchObject({ socDrainMinPercent: 5, socDrainWindowMs: 6 * 3_600_000 });
    // 80 % falling a point every 30 minutes for 4 hours.
    const d = runOrdered(parked(240, 0, (j) => 80 - Math.floor(j / 30)));
    expect(eventTimes(d)).toEqual([['soc_drain_while_parked', T0 + 150 * MIN + 500]]);
    // Over the time since it last read 80 (minute 29).
    expect(d.events[0]!.fields).toEqual({ soc_from: 80, soc_to: 75, over_s: (150 - 29) * 60 });
  });

  it('an older high leaving the window never hides a fall from a lower one', () => {
    // 80 at minute 0, 79 to minute 360, 74 from 361: at 361 the 80 has left the 6-hour window, the 79 of minute 360 has not.
    const d = runOrdered(parked(400, 0, (j) => (j === 0 ? 80 : j <= 360 ? 79 : 74)));
    expect(eventTimes(d)).toEqual([['soc_drain_while_parked', T0 + 361 * MIN + 500]]);
    expect(d.events[0]!.fields).toEqual({ soc_from: 79, soc_to: 74, over_s: 60 });
  });

  it('not with the ignition on, not while charging, not slower than the window allows', () => {
    expect(runOrdered(parked(240, 1, (j) => 80 - Math.floor(j / 30))).events.filter((e) => e.event.startsWith('soc_drain'))).toEqual([]);
    expect(runOrdered(parked(240, 0, (j) => 80 - Math.floor(j / 30), { load_status: 2 })).events.filter((e) => e.event.startsWith('soc_drain'))).toEqual([]);
    // 5 points over 8 hours: never 5 within 6.
    expect(runOrdered(parked(480, 0, (j) => 80 - Math.floor(j / 96))).events.filter((e) => e.event.startsWith('soc_drain'))).toEqual([]);
  });

  it('the same with the CAN stream in 5-minute bulks behind the GPS stream', () => {
    const rs = parked(240, 0, (j) => 80 - Math.floor(j / 30));
    const deliveries: Array<[number, Named[]]> = [];
    for (let m = 0; m <= 240; m += 5) {
      deliveries.push([T0 + m * MIN, rs.filter((r) => r.type === 'gps' && r.time >= T0 + m * MIN && r.time < T0 + (m + 5) * MIN)]);
      if (m >= 5) deliveries.push([T0 + m * MIN + 1, rs.filter((r) => r.type === 'can' && r.time >= T0 + (m - 5) * MIN && r.time < T0 + m * MIN)]);
    }
    deliveries.push([T0 + 246 * MIN, rs.filter((r) => r.type === 'can' && r.time >= T0 + 240 * MIN)]);
    expect(eventTimes(runAt(deliveries))).toEqual([['soc_drain_while_parked', T0 + 150 * MIN + 500]]);
  });
});
