import { describe, expect, it } from 'vitest';
import { gps, north, OPTS, runOrdered, T0 } from '../events.testkit.js';
import type { EventInput } from '../derive.js';

/** The track's rules as a trip measures them (Traccar's FilterHandler and DistanceHandler, and more). */

const HOUR = 3_600_000;

/** Northward at `kmh` from `lat0` for `seconds`, a fix a second, ignition on (off at the last). */
function driveNorth(t0: number, lat0: number, seconds: number, kmh: number): EventInput[] {
  return Array.from({ length: seconds + 1 }, (_, j) => gps(t0 + j * 1000, lat0 + north((kmh / 3.6) * j), 77, kmh, j === seconds ? 0 : 1));
}

describe('the track', () => {
  it('a parked vehicle’s GPS jitter is no distance: 30 min with ignition on, 2 m of jitter, speed 0', () => {
    const rs: EventInput[] = [];
    for (let j = 0; j <= 1800; j++) {
      const a = (j * 2.39996) % (2 * Math.PI); // 2 m around the spot, in every direction
      rs.push(gps(T0 + j * 1000, 12.97 + north(2 * Math.cos(a)), 77.59 + north(2 * Math.sin(a)) / Math.cos((12.97 * Math.PI) / 180), 0, j === 1800 ? 0 : 1));
    }
    const d = runOrdered(rs);
    // Kept by its duration (Traccar keeps a trip of 300 s or 500 m), with no distance.
    expect(d.trips).toHaveLength(1);
    expect(d.trips[0]!.distanceM).toBe(0);
    // Without the rule (GPS_MIN_ERROR 0) every step counts: kilometres.
    expect(runOrdered(rs, { ...OPTS, gpsMinErrorM: 0 }).trips[0]!.distanceM).toBeGreaterThan(3_000);
  });

  it('a fix reporting speed counts even when the step is short: a slow, real move is not jitter', () => {
    const rs = driveNorth(T0, 12.97, 600, 5); // 5 km/h for 10 min: 1.39 m a fix
    expect(runOrdered(rs).trips[0]!.distanceM).toBeCloseTo((5 / 3.6) * 600, 0);
  });

  it('a cold start’s first fix 2 km off is the outlier, though plausible from where the vehicle parked 8 h before', () => {
    const park = T0;
    const start = park + 8 * HOUR;
    const rs: EventInput[] = [gps(park, 12.97, 77.59, 0, 0)];
    rs.push(gps(start, 12.97 + north(2_000), 77.59, 0, 1)); // ignition on, the fix 2 km off
    // Then the true fixes: 1.5 km north from the parking spot in 90 s (60 km/h).
    for (let j = 1; j <= 90; j++) rs.push(gps(start + j * 1000, 12.97 + north((1_500 * j) / 90), 77.59, 60, j === 90 ? 0 : 1));
    const trip = runOrdered(rs).trips[0]!;
    expect(trip.distanceM).toBeCloseTo(1_500 - 1_500 / 90, 0); // from the first true fix in the trip to the last
    expect(trip.startLat).toBeCloseTo(12.97 + north(1_500 / 90), 9);
    expect(trip.start).toBe(start);
  });

  it('one spike mid-drive is dropped, the fixes either side kept', () => {
    const plain = driveNorth(T0, 10, 300, 60);
    const spiked = [...plain];
    spiked.splice(150, 0, gps(T0 + 149_500, 10.5, 77, 60, 1));
    const a = runOrdered(plain).trips[0]!;
    const b = runOrdered(spiked).trips[0]!;
    expect(b.distanceM).toBeCloseTo(a.distanceM, 3);
    expect(b.maxSpeedKmh).toBe(a.maxSpeedKmh);
    expect(b.endLat).toBeCloseTo(a.endLat!, 9);
  });

  it('two agreeing fixes far from the track are the truth (a tow): re-anchored there, the step not added', () => {
    const rs = driveNorth(T0, 10, 120, 60);
    rs.pop();
    // 10 km east in one second, then on from there.
    const lng = 77 + north(10_000);
    for (let j = 0; j <= 60; j++) rs.push(gps(T0 + 121_000 + j * 1000, 10 + north((60 / 3.6) * (120 + j)), lng, 60, j === 60 ? 0 : 1));
    const trip = runOrdered(rs).trips[0]!;
    expect(trip.distanceM).toBeCloseTo((60 / 3.6) * 119 + (60 / 3.6) * 60, 0); // to the last fix before the tow, then on from the next
    expect(trip.endLng).toBeCloseTo(lng, 9);
  });
});
