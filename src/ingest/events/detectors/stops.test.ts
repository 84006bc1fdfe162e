import { describe, expect, it } from 'vitest';
import { north, OPTS, route, runOrdered, T0 } from '../events.testkit.js';

/** Stops: standing still STOP_MIN_DURATION (300 s, Traccar's) at least, by the confirmed fixes. */

const MIN = 60_000;

describe('stops', () => {
  it('a 10-minute stand between drives is one stop: where and how long it stood, and how long with the ignition on', () => {
    // Drive 2 min, stand 10 min (ignition on for the first 3, then off), drive 2 min.
    const { fixes } = route(T0, 12.9, [
      { seconds: 120, kmh: 36, ign: 1 },
      { seconds: 180, kmh: 0, ign: 1 },
      { seconds: 420, kmh: 0, ign: 0 },
      { seconds: 120, kmh: 36, ign: 1 },
    ]);
    const d = runOrdered(fixes);
    expect(d.stops).toHaveLength(1);
    const stop = d.stops[0]!;
    // It stood from the first fix at speed 0 to the first moving again.
    expect(stop).toMatchObject({ start: T0 + 120_000, end: T0 + 720_000, durationS: 600, ignitionOnS: 180 });
    expect(stop.lat).toBeCloseTo(12.9 + north(10 * 120), 6);
  });

  it('a stand shorter than STOP_MIN_DURATION is none, and parked jitter neither ends a stop nor starts a move', () => {
    expect(OPTS.stopMinDurationMs).toBe(5 * MIN);
    const short = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 240, kmh: 0, ign: 1 }, { seconds: 60, kmh: 36, ign: 1 }]);
    expect(runOrdered(short.fixes).stops).toEqual([]);
    // 30 minutes parked with 2 m of wander and no speed reported: one stop of 30 minutes.
    const parked = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 1800, kmh: 0, ign: 0, jitterM: 2 }, { seconds: 60, kmh: 36, ign: 1 }]);
    const withoutSpeed = parked.fixes.map((f, j) => (j >= 60 && j < 1860 ? { ...f, values: Float64Array.from(f.values, (x, i) => (i === 3 ? NaN : x)) } : f));
    expect(runOrdered(parked.fixes).stops.map((s) => [s.start, s.durationS])).toEqual([[T0 + 60_000, 1800]]);
    // Without speeds, the step into the spot is movement (10 m from a moving fix): the stop starts a fix later.
    expect(runOrdered(withoutSpeed).stops.map((s) => [s.start, s.durationS])).toEqual([[T0 + 61_000, 1799]]);
  });

  it('a gap longer than EVENTS_MAX_GAP ends the stop at the last record before it', () => {
    const before = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 600, kmh: 0, ign: 0 }]);
    const after = route(before.end + 3 * 3_600_000, before.lat, [{ seconds: 400, kmh: 0, ign: 0 }, { seconds: 60, kmh: 36, ign: 1 }]);
    const d = runOrdered([...before.fixes, ...after.fixes]);
    expect(d.stops.map((s) => [s.start, s.end])).toEqual([
      [T0 + 60_000, before.end - 1000],
      [after.fixes[0]!.time, after.fixes[400]!.time],
    ]);
  });
});
