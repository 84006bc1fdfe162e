import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, gpsLastTimeCopy, type Context, type Slice } from './context.js';
import { TRACK_SLICE, type Step } from './track.js';
import { tripAddTime, TRIPS_SLICE, type TripsState } from './trips.js';
import { detector } from './detector.js';
import { gapBefore, gapFrom } from './gap.js';
import { spellBegin, spellDue, spellEnd } from './spell.js';

/**
 * Overspeed (Traccar's OverspeedEventHandler, `event.overspeed.minimalDuration`): the speed the track's
 * confirmed fixes report (an outlier's position never counts; its speed is the device's) above
 * SPEED_LIMIT for at least OVERSPEED_MIN_DURATION. SPEED_LIMIT 0, the default, tells none.
 *
 * - `overspeed_started`, stamped at the first fix over the limit, emitted once the speed has stayed over
 *   it OVERSPEED_MIN_DURATION (Traccar tells one event then; it has no end). Fields: the limit, that
 *   fix's speed and position.
 * - `overspeed_ended` at the first fix at or under the limit (or the ignition going off, or the last
 *   record before a gap longer than EVENTS_MAX_GAP), with the limit, the highest speed, `duration_s` and
 *   `distance_m` (the confirmed steps while over).
 * - A trip counts its time over the limit (`overspeed_s`).
 */
export interface OverspeedState {
  /** Its start (NaN: not over the limit), and 1 once `overspeed_started` was emitted: a spell (spell.ts). */
  since: number;
  told: number;
  /** The limit it broke, the highest speed, the distance while over, and where it started. */
  limit: number;
  maxSpeed: number;
  distanceM: number;
  lat: number;
  lng: number;
  startSpeed: number;
  /** The last confirmed fix's time while over. */
  lastOver: number;
}

/** Before a GPS record, and before the trips see its gap: a gap longer than EVENTS_MAX_GAP ends an overspeed at its last fix over the limit. */
export function overspeedGap(ctx: Context, s: OverspeedState, trips: TripsState, time: number): void {
  if (s.since === s.since && gapBefore(ctx, ctx.previousTime, time)) end(ctx, s, trips, s.lastOver);
}

/**
 * A GPS record, in order, after the track took its fix; before the trips see it (time over the limit its
 * ignition-off ends counts in the trip). A fix from before a gap that the record confirmed is skipped.
 */
export function overspeedRecord(ctx: Context, s: OverspeedState, trips: TripsState, r: StreamRecord, plan: StreamPlan, steps: readonly Step[]): void {
  const beforeGap = gapFrom(ctx, ctx.previousTime, r.time);
  for (const step of steps) {
    const f = step.fix;
    if (f.time <= beforeGap) continue;
    if (f.speed !== f.speed) continue; // no speed reported: says nothing
    const limit = limitAt(ctx, f);
    if (limit > 0 && f.speed > limit) {
      if (spellBegin(s, f.time)) {
        s.limit = limit;
        s.maxSpeed = s.startSpeed = f.speed;
        s.distanceM = 0;
        s.lat = f.lat;
        s.lng = f.lng;
      } else {
        s.maxSpeed = Math.max(s.maxSpeed, f.speed);
        s.distanceM += step.distanceM;
      }
      s.lastOver = f.time;
      if (spellDue(s, f.time, ctx.opts.overspeedMinDurationMs)) tellStart(ctx, s, s.since);
    } else if (s.since === s.since) end(ctx, s, trips, Math.max(f.time, s.since));
  }
  if (valueOf(r, plan.ignitionAt) === 0 && s.since === s.since) end(ctx, s, trips, Math.max(r.time, s.since));
}

/**
 * The limit at a fix (0: none): the vehicle's own at the fix's time (`telematics-fleet speed-limit`), else
 * SPEED_LIMIT; and the lowest `speed_limit` of the geofences holding the fix. With both, the lowest
 * (SPEED_LIMIT_PREFER_LOWEST on, Traccar's preferLowest) or the geofence's (off), as Traccar weighs a
 * device's limit against a geofence's.
 */
function limitAt(ctx: Context, f: { lat: number; lng: number; time: number }): number {
  const own = ctx.opts.speedLimits?.current.at(ctx.vehicleno, f.time) ?? ctx.opts.speedLimitKmh;
  const zone = ctx.opts.geofences?.current.speedLimitAt(f.lat, f.lng, f.time);
  if (zone === undefined) return own;
  if (own <= 0 || !ctx.opts.speedLimitPreferLowest) return zone;
  return Math.min(own, zone);
}

function tellStart(ctx: Context, s: OverspeedState, start: number): void {
  emitEvent(ctx, 'overspeed_started', start, 1, { limit: s.limit, speed: s.startSpeed, lat: s.lat, lng: s.lng });
}

function end(ctx: Context, s: OverspeedState, trips: TripsState, at: number): void {
  const start = s.since;
  const ended = spellEnd(s, at, ctx.opts.overspeedMinDurationMs);
  if (ended === 'short') return;
  // Emitted only now when it reached the minimum between two fixes (their times say so).
  if (ended === 'untold') tellStart(ctx, s, start);
  emitEvent(ctx, 'overspeed_ended', at, 0, { limit: s.limit, max_speed: s.maxSpeed, duration_s: (at - start) / 1000, distance_m: s.distanceM });
  tripAddTime(trips, 'overspeedMs', at - start);
}

export const OVERSPEED_SLICE: Slice<OverspeedState> = flatSlice(
  9,
  'overspeed',
  ['since', 'told', 'limit', 'maxSpeed', 'distanceM', 'lat', 'lng', 'startSpeed', 'lastOver', 'lastTime'],
  () => ({ since: NaN, told: 0, limit: NaN, maxSpeed: NaN, distanceM: 0, lat: NaN, lng: NaN, startSpeed: NaN, lastOver: NaN }),
  // The GPS stream's last record time, kept once in the stream (`Context.previousTime`); stored here too, for the release before.
  { lastTime: gpsLastTimeCopy },
);

/** The overspeed detector, declared once (detector.ts); ../kinds.ts lists it. */
export const OVERSPEED_DETECTOR = detector({
  key: 'overspeed',
  slice: OVERSPEED_SLICE,
  fields: ['ignitionAt'],
  reads: { track: TRACK_SLICE },
  // Before the trips take the record: time over the limit that a gap or an ignition-off ends counts in the trip it ends.
  writesInto: { trips: TRIPS_SLICE },
  on: {
    gap: (ctx, s, time) => overspeedGap(ctx, s.overspeed, s.trips, time),
    position: (ctx, s, r, plan, steps) => overspeedRecord(ctx, s.overspeed, s.trips, r, plan, steps),
  },
  input: "the track's speeds, GPS `ignstatus`",
  settings: ["SPEED_LIMIT", "OVERSPEED_MIN_DURATION"],
  derives: "`overspeed_started` (`limit`, `speed`, `lat`, `lng`) / `overspeed_ended` (`limit`, `max_speed`, `duration_s`, `distance_m`); a trip's `overspeed_s`",
  rules: "confirmed fixes over the limit at their time (the vehicle's own, `../speedLimits/`, else `SPEED_LIMIT`, 0: none; inside geofences with a `speed_limit`, the lowest, or the geofence's with `SPEED_LIMIT_PREFER_LOWEST=off`) for at least `OVERSPEED_MIN_DURATION` (10 s; Traccar's `minimalDuration`, which emits one event and no end), stamped at the first fix over; a fix without a speed says nothing; ended by the first fix at or under the limit, the ignition off, or a gap (at its last fix over)",
  outputs: [
    { events: ['overspeed_started', 'overspeed_ended'], shown: "`overspeed_started` / `overspeed_ended`", measurement: VEHICLE_EVENTS, fields: [{ name: 'limit', meaning: "the limit broken" }, { name: 'speed', meaning: "the first fix over the limit", on: ['overspeed_started'] }, { name: 'lat', meaning: "where it began", on: ['overspeed_started'] }, { name: 'lng', meaning: "the same, longitude", on: ['overspeed_started'] }, { name: 'max_speed', meaning: "the highest speed over the limit", on: ['overspeed_ended'] }, { name: 'duration_s', meaning: "how long it lasted", on: ['overspeed_ended'] }, { name: 'distance_m', meaning: "driven over the limit", on: ['overspeed_ended'] }], what: "over the limit at least `OVERSPEED_MIN_DURATION`: the vehicle's own (`telematics-fleet speed-limit`) or `SPEED_LIMIT`, and inside geofences with a `speed_limit` the lowest (`SPEED_LIMIT_PREFER_LOWEST`); a trip's `overspeed_s`" },
  ],
});
