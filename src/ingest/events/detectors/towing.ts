import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { haversineM } from '../../../telemetry/geo.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';
import { TRACK_SLICE, type Step, type TrackState } from './track.js';
import { detector } from './detector.js';

/**
 * Moved while off (Geotab's and Samsara's towing; a theft as much): with the ignition off, a confirmed
 * fix at least TOW_MIN_DISTANCE (default 300 m) from where the vehicle was parked. Measured as the
 * straight line from the parking spot, not as a sum of steps, so GPS drift never adds up to it and a
 * tow the track re-anchors on (two agreeing fixes far from the last: no step) still counts.
 *
 * - The parking spot: the track's last confirmed fix when the ignition goes off (the ignition-off fix,
 *   once the trip has settled it), else the first confirmed fix after.
 * - `moved_while_off` once an off period, at the fix that first lies that far, with `distance_m` from the
 *   spot, its position and the spot's (`parked_lat`, `parked_lng`). The ignition on again ends the period.
 */
export interface TowingState {
  /** 1 while the ignition is known off. */
  off: number;
  parkedLat: number;
  parkedLng: number;
  /** 1 once emitted this off period. */
  told: number;
}

/** A GPS record, in order, after the trips settled the track (so the ignition-off fix is confirmed). */
export function towingRecord(ctx: Context, s: TowingState, track: TrackState, r: StreamRecord, plan: StreamPlan, steps: readonly Step[]): void {
  if (s.off === 1) {
    for (const step of steps) {
      const f = step.fix;
      if (s.parkedLat !== s.parkedLat) {
        s.parkedLat = f.lat;
        s.parkedLng = f.lng;
        continue;
      }
      const d = haversineM(s.parkedLat, s.parkedLng, f.lat, f.lng);
      if (s.told === 0 && d >= ctx.opts.towMinDistanceM) {
        s.told = 1;
        emitEvent(ctx, 'moved_while_off', f.time, 1, { distance_m: d, lat: f.lat, lng: f.lng, parked_lat: s.parkedLat, parked_lng: s.parkedLng });
      }
    }
  }
  const ign = valueOf(r, plan.ignitionAt);
  if (ign === 0 && s.off !== 1) {
    s.off = 1;
    s.told = 0;
    s.parkedLat = track.anchor?.lat ?? NaN;
    s.parkedLng = track.anchor?.lng ?? NaN;
  } else if (ign === 1) s.off = 0;
}

export const TOWING_SLICE: Slice<TowingState> = flatSlice(10, 'towing', ['off', 'parkedLat', 'parkedLng', 'told'], () => ({ off: 0, parkedLat: NaN, parkedLng: NaN, told: 0 }));

/** The towing detector, declared once (detector.ts); ../kinds.ts lists it. */
export const TOWING_DETECTOR = detector({
  key: 'towing',
  slice: TOWING_SLICE,
  fields: ['ignitionAt'],
  reads: { track: TRACK_SLICE },
  // Where it parked is the track's last fix once the trips settled it at the ignition-off (trips.ts `amends`), and the fixes as the trips leave them: at a trip's end the trips settle the track's last fix, and its confirmation takes the place of the first of `steps` (track.ts reuses its two Step objects).
  after: ['trips'],
  on: { position: (ctx, s, r, plan, steps) => towingRecord(ctx, s.towing, s.track, r, plan, steps) },
  input: "the track, GPS `ignstatus`",
  settings: ["TOW_MIN_DISTANCE"],
  derives: "`moved_while_off` (`distance_m`, `lat`, `lng`, `parked_lat`, `parked_lng`)",
  rules: "with the ignition off, a confirmed fix at least `TOW_MIN_DISTANCE` (300 m) in a straight line from where it parked (the ignition-off fix once the trip settled it): drift never sums up to it, and a tow the track re-anchors on still counts; once an off period; paged by `TelematicsVehicleMovedWhileOff`",
  outputs: [
    { events: ['moved_while_off'], shown: "`moved_while_off`", measurement: VEHICLE_EVENTS, fields: [{ name: 'distance_m', meaning: "from where it was parked" }, { name: 'lat', meaning: "where it was seen" }, { name: 'lng', meaning: "the same, longitude" }, { name: 'parked_lat', meaning: "where it was parked" }, { name: 'parked_lng', meaning: "the same, longitude" }], what: "with the ignition off, a confirmed fix `TOW_MIN_DISTANCE` from where it parked (towing, theft); pages (`TelematicsVehicleMovedWhileOff`)" },
  ],
});
