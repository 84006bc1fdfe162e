import { describe, expect, it } from 'vitest';
import { eventTimes, gps, north, OPTS, route, runOrdered, T0 } from '../events.testkit.js';

/** Overspeed: over SPEED_LIMIT for OVERSPEED_MIN_DURATION (10 s) at least; a trip counts it. */

const LIMITED = { ...OPTS, speedLimitKmh: 60 };

describe('overspeed', () => {
  it('is told from the first fix over the limit to the first under it, with the limit, the top speed, the time and the distance over', () => {
    const { fixes } = route(T0, 12.9, [
      { seconds: 60, kmh: 50, ign: 1 },
      { seconds: 20, kmh: 72, ign: 1 },
      { seconds: 10, kmh: 90, ign: 1 },
      { seconds: 60, kmh: 50, ign: 1 },
      { seconds: 5, kmh: 0, ign: 0 },
    ]);
    const d = runOrdered(fixes, LIMITED);
    const over = d.events.filter((e) => e.event.startsWith('overspeed_'));
    expect(eventTimes({ ...d, events: over })).toEqual([
      ['overspeed_started', T0 + 60_000],
      ['overspeed_ended', T0 + 90_000],
    ]);
    expect(over[0]!.fields).toMatchObject({ limit: 60, speed: 72 });
    expect(over[1]!.fields).toMatchObject({ limit: 60, max_speed: 90, duration_s: 30 });
    // The steps between the fixes over the limit: 19 at 20 m/s, one into the 90s, 9 at 25 m/s.
    expect(over[1]!.fields.distance_m).toBeCloseTo(19 * 20 + 20 + 9 * 25, 0);
    expect(d.trips[0]).toMatchObject({ overspeedS: 30, idleS: 0 });
  });

  it('a burst shorter than OVERSPEED_MIN_DURATION is none, and with no SPEED_LIMIT none is told', () => {
    expect(OPTS).toMatchObject({ speedLimitKmh: 0, overspeedMinDurationMs: 10_000 });
    const burst = route(T0, 12.9, [{ seconds: 60, kmh: 50, ign: 1 }, { seconds: 8, kmh: 80, ign: 1 }, { seconds: 60, kmh: 50, ign: 1 }]);
    expect(runOrdered(burst.fixes, LIMITED).events.filter((e) => e.event.startsWith('overspeed_'))).toEqual([]);
    const long = route(T0, 12.9, [{ seconds: 60, kmh: 50, ign: 1 }, { seconds: 120, kmh: 80, ign: 1 }, { seconds: 60, kmh: 50, ign: 1 }]);
    expect(runOrdered(long.fixes).events.filter((e) => e.event.startsWith('overspeed_'))).toEqual([]);
    expect(runOrdered(long.fixes, LIMITED).events.filter((e) => e.event.startsWith('overspeed_'))).toHaveLength(2);
  });

  it('an outlier fix reporting a high speed alone is no overspeed; a fix without speed neither starts nor ends one', () => {
    const { fixes } = route(T0, 12.9, [{ seconds: 60, kmh: 50, ign: 1 }, { seconds: 30, kmh: 80, ign: 1 }, { seconds: 60, kmh: 50, ign: 1 }]);
    // Every third fix over the limit reports no speed: the overspeed still runs 30 s.
    const gappy = fixes.map((f, j) => (j >= 60 && j < 90 && j % 3 === 1 ? { ...f, values: Float64Array.from(f.values, (x, i) => (i === 3 ? NaN : x)) } : f));
    const d = runOrdered(gappy, LIMITED);
    expect(d.events.filter((e) => e.event === 'overspeed_ended').map((e) => e.fields.duration_s)).toEqual([30]);
  });

  it('a spell over the limit between two sparse fixes is told at its first fix over, both ends, when the fix under comes', () => {
    // A fix every 20 s: one at 80 km/h, then under the limit again.
    const fixes = [50, 50, 80, 50, 50].map((kmh, k) => gps(T0 + k * 20_000, 12.9 + north(300 * k), 77, kmh, 1));
    const d = runOrdered(fixes, LIMITED);
    expect(eventTimes({ ...d, events: d.events.filter((e) => e.event.startsWith('overspeed_')) })).toEqual([
      ['overspeed_started', T0 + 40_000],
      ['overspeed_ended', T0 + 60_000],
    ]);
  });
});
