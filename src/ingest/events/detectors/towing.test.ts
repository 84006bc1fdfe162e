import { describe, expect, it } from 'vitest';
import { gps, north, OPTS, route, runOrdered, T0 } from '../events.testkit.js';

/** Moved while off: with the ignition off, a confirmed fix TOW_MIN_DISTANCE (300 m) from where it parked. */

describe('moved while off', () => {
  it('a vehicle towed with the ignition off is told once, where it was first seen that far, with the distance from its spot', () => {
    // Drive, park (ignition off), an hour parked, then towed north at 20 km/h with the ignition off for 3 minutes.
    const drive = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 1, kmh: 0, ign: 0 }, { seconds: 3600, kmh: 0, ign: 0, jitterM: 8 }]);
    const towed = route(drive.end, drive.lat, [{ seconds: 180, kmh: 20, ign: 0 }]);
    const d = runOrdered([...drive.fixes, ...towed.fixes]);
    const moved = d.events.filter((e) => e.event === 'moved_while_off');
    expect(moved).toHaveLength(1);
    // 300 m at 20 km/h is 54 s of towing; the spot is the ignition-off fix.
    expect(moved[0]!.time).toBe(towed.fixes[54]!.time);
    expect(moved[0]!.fields.distance_m).toBeGreaterThanOrEqual(300);
    expect(moved[0]!.fields.distance_m).toBeLessThan(310);
    expect(moved[0]!.fields.parked_lat).toBeCloseTo(drive.fixes[60]!.fields.lat!, 9);
  });

  it('GPS drift, however long, is no move; the ignition on ends the watch; a jump the track rejects is no move', () => {
    expect(OPTS.towMinDistanceM).toBe(300);
    const parked = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 8 * 3600, kmh: 0, ign: 0, jitterM: 40 }]);
    expect(runOrdered(parked.fixes).events.filter((e) => e.event === 'moved_while_off')).toEqual([]);
    // One fix 5 km off, then back: an outlier, no move.
    const jump = [...parked.fixes.slice(0, 200), gps(parked.fixes[200]!.time, 12.9 + north(5_000), 77, 0, 0), ...parked.fixes.slice(201, 400)];
    expect(runOrdered(jump).events.filter((e) => e.event === 'moved_while_off')).toEqual([]);
    // Driven away with the ignition on: a trip, not a tow.
    const driven = route(parked.fixes[399]!.time + 1000, 12.9, [{ seconds: 300, kmh: 36, ign: 1 }]);
    expect(runOrdered([...parked.fixes.slice(0, 400), ...driven.fixes]).events.filter((e) => e.event === 'moved_while_off')).toEqual([]);
  });
});
