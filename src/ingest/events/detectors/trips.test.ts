import { describe, expect, it } from 'vitest';
import { can, eventTimes, gps, north, OPTS, runOrdered, sorted, T0 } from '../events.testkit.js';
import type { EventInput } from '../derive.js';

/** Trips by ignition: Traccar's filter, gaps, and where a trip starts. */

const HOUR = 3_600_000;

/** `seconds` of fixes a second northward at `kmh` from `lat0`, ignition as given. */
const fixes = (t0: number, lat0: number, seconds: number, kmh: number, ign: (j: number) => number): EventInput[] =>
  Array.from({ length: seconds + 1 }, (_, j) => gps(t0 + j * 1000, lat0 + north((kmh / 3.6) * j), 77, kmh, ign(j)));

describe('trips', () => {
  it('are kept when they last TRIP_MIN_DURATION or cover TRIP_MIN_DISTANCE, as Traccar keeps them (defaults 300 s, 500 m)', () => {
    expect(OPTS).toMatchObject({ tripMinDurationMs: 300_000, tripMinDistanceM: 500 });
    const last = (n: number) => (j: number) => (j === n ? 0 : 1);
    const rs = [
      ...fixes(T0, 10, 60, 20, last(60)), // 60 s, 333 m: both short, dropped
      ...fixes(T0 + 100_000, 10.01, 60, 40, last(60)), // 60 s, 667 m: kept by distance
      ...fixes(T0 + 200_000, 10.02, 400, 2, last(400)), // 400 s, 222 m: kept by duration
    ];
    const d = runOrdered(rs);
    expect(d.trips.map((t) => t.start)).toEqual([T0 + 100_000, T0 + 200_000]);
    expect(d.trips[0]!.distanceM).toBeCloseTo((40 / 3.6) * 60, 0);
    // Its ignition events are told either way.
    expect(d.events.filter((e) => e.event === 'ignition_on')).toHaveLength(3);
  });

  it('a gap longer than EVENTS_MAX_GAP ends the trip at the last fix before it; ignition still on after it starts another', () => {
    // Driving, then 9 h of silence (the ignition-off was lost), then driving on with ignition on.
    const rs = [...fixes(T0, 10, 600, 36, () => 1), ...fixes(T0 + 600_000 + 9 * HOUR, 10.2, 600, 36, (j) => (j === 600 ? 0 : 1))];
    const d = runOrdered(rs);
    expect(d.trips.map((t) => [t.start, t.end, t.gapEnded])).toEqual([
      [T0, T0 + 600_000, 1],
      [T0 + 600_000 + 9 * HOUR, T0 + 1_200_000 + 9 * HOUR, undefined],
    ]);
    expect(d.trips[0]!.distanceM).toBeCloseTo(6_000, 0);
    expect(d.trips[1]!.distanceM).toBeCloseTo(6_000, 0);
    // No ignition event was lost or made up: the device said on throughout.
    expect(eventTimes(d)).toEqual([
      ['ignition_on', T0],
      ['ignition_off', T0 + 1_200_000 + 9 * HOUR],
    ]);
    // Within the gap setting, one trip across the silence, its distance only what was driven.
    const one = runOrdered(rs, { ...OPTS, maxGapMs: 10 * HOUR });
    expect(one.trips).toHaveLength(1);
  });

  it('starts at its first fix: not at an old parking spot, nor lost when ignition came on without one', () => {
    // An old fix far away, hours before; then ignition on (its record's position refused) and a drive.
    const noFix = { ...gps(T0 + 5 * HOUR, 0, 0, 0, 1) };
    const values = Float64Array.from(noFix.values as ArrayLike<number>);
    values[0] = values[1] = NaN; // lat and lng are the first fields derivation reads
    const rs = [gps(T0, 11, 78, 0, 0), { ...noFix, values }, ...fixes(T0 + 5 * HOUR + 1000, 10, 300, 36, (j) => (j === 300 ? 0 : 1))];
    const trip = runOrdered(rs).trips[0]!;
    expect(trip.start).toBe(T0 + 5 * HOUR);
    expect(trip.startLat).toBe(10);
    expect(trip.distanceM).toBeCloseTo(3_000, 0);
  });

  it('soc at the start is the CAN stream’s at it, else the first within the trip', () => {
    const rs: EventInput[] = fixes(T0, 10, 400, 36, (j) => (j === 400 ? 0 : 1));
    const late = runOrdered(sorted([...rs, can(T0 + 30_500, { soc: 70 }), can(T0 + 360_500, { soc: 69 })])).trips[0]!;
    expect(late).toMatchObject({ socStart: 70, socEnd: 69 });
    const before = runOrdered(sorted([...rs, can(T0 - 5_000, { soc: 71 }), can(T0 + 30_500, { soc: 70 })])).trips[0]!;
    expect(before).toMatchObject({ socStart: 71, socEnd: 70 });
  });
});
