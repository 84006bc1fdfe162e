import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, gpsLastTimeCopy, type Context, type Slice } from './context.js';
import { IGNITION_SLICE, lastIgnition, lastIgnitionCopy } from './ignition.js';
import { stepMoving, TRACK_SLICE, type Step, type TrackState } from './track.js';
import { tripAddTime, TRIPS_SLICE, type TripsState } from './trips.js';
import { detector } from './detector.js';
import { gapBefore, gapFrom } from './gap.js';
import { spellBegin, spellDue, spellEnd } from './spell.js';

/**
 * Idling (Geotab's and Samsara's idling exceptions; an open request in Traccar): the ignition on and the
 * vehicle standing still, by the track's confirmed fixes (`stepMoving`), at least IDLE_MIN_DURATION.
 *
 * - `idle_started`, stamped at the idle's start (the later of the ignition coming on and the vehicle
 *   standing), emitted once it has lasted IDLE_MIN_DURATION; `idle_ended` when the vehicle moves or the
 *   ignition goes off, with `duration_s`. Fields: where it stood.
 * - A trip counts its idle time (`idle_s`): an idle that ends within the trip adds to it.
 * - A gap in the GPS stream longer than EVENTS_MAX_GAP ends the idle at the last record before it.
 */
export interface IdleState {
  /** Its start (NaN: not idling), and 1 once `idle_started` was emitted: a spell (spell.ts). */
  since: number;
  told: number;
  lat: number;
  lng: number;
  /** 1 when the last confirmed fix stood still. */
  standing: number;
}

/** Before a GPS record, and before the trips see its gap (so the idle counts in the trip the gap ends): a gap longer than EVENTS_MAX_GAP ends the idle at the last record before it. */
export function idleGap(ctx: Context, s: IdleState, trips: TripsState, time: number): void {
  if (!gapBefore(ctx, ctx.previousTime, time)) return;
  if (s.since === s.since) end(ctx, s, trips, ctx.previousTime);
  s.standing = 0; // not known across the gap until a fix says so
}

/**
 * A GPS record, in order, after the track took its fix; before the trips see it (an idle its
 * ignition-off ends counts in the trip). A fix from before a gap that the record confirmed is skipped.
 */
export function idleRecord(ctx: Context, s: IdleState, trips: TripsState, track: TrackState, ignitionBefore: number, r: StreamRecord, plan: StreamPlan, steps: readonly Step[]): void {
  const beforeGap = gapFrom(ctx, ctx.previousTime, r.time);
  for (const step of steps) {
    if (step.fix.time <= beforeGap) continue;
    if (stepMoving(step, ctx.opts)) {
      s.standing = 0;
      if (s.since === s.since) end(ctx, s, trips, Math.max(step.fix.time, s.since));
    } else {
      s.standing = 1;
      if (ignitionBefore === 1) begin(s, step.fix.time, step.fix.lat, step.fix.lng);
    }
  }
  const ign = valueOf(r, plan.ignitionAt);
  if (ign === 0) {
    if (s.since === s.since) end(ctx, s, trips, Math.max(r.time, s.since));
  } else if (ign === 1 && ignitionBefore !== 1 && s.standing === 1 && track.anchor !== undefined) begin(s, r.time, track.anchor.lat, track.anchor.lng);
  if (spellDue(s, r.time, ctx.opts.idleMinDurationMs)) emitEvent(ctx, 'idle_started', s.since, 1, { lat: s.lat, lng: s.lng });
}

function begin(s: IdleState, time: number, lat: number, lng: number): void {
  if (!spellBegin(s, time)) return;
  s.lat = lat;
  s.lng = lng;
}

function end(ctx: Context, s: IdleState, trips: TripsState, at: number): void {
  const start = s.since;
  const ended = spellEnd(s, at, ctx.opts.idleMinDurationMs);
  if (ended === 'short') return;
  // Emitted only now when it reached the minimum between two records (the records' times say so).
  if (ended === 'untold') emitEvent(ctx, 'idle_started', start, 1, { lat: s.lat, lng: s.lng });
  emitEvent(ctx, 'idle_ended', at, 0, { lat: s.lat, lng: s.lng, duration_s: (at - start) / 1000 });
  tripAddTime(trips, 'idleMs', at - start);
}

export const IDLE_SLICE: Slice<IdleState> = flatSlice(
  8,
  'idle',
  ['since', 'told', 'lat', 'lng', 'standing', 'ignition', 'lastTime'],
  () => ({ since: NaN, told: 0, lat: NaN, lng: NaN, standing: 0 }),
  // The last ignition and the GPS stream's last record time, each kept once (the ignition's slice, the stream); stored here too, for the release before.
  { ignition: lastIgnitionCopy, lastTime: gpsLastTimeCopy },
);

/** The idle detector, declared once (detector.ts); ../kinds.ts lists it. */
export const IDLE_DETECTOR = detector({
  key: 'idle',
  slice: IDLE_SLICE,
  fields: ['ignitionAt'],
  reads: { track: TRACK_SLICE },
  // Before the trips take the record: an idle that a gap or an ignition-off ends counts in the trip it ends.
  writesInto: { trips: TRIPS_SLICE },
  // The ignition as the records before left it (an idle starts when it was on before this record).
  readsBefore: { ignition: IGNITION_SLICE },
  on: {
    gap: (ctx, s, time) => idleGap(ctx, s.idle, s.trips, time),
    position: (ctx, s, r, plan, steps) => idleRecord(ctx, s.idle, s.trips, s.track, lastIgnition(s.ignition), r, plan, steps),
  },
  input: "the track, GPS `ignstatus`",
  settings: ["IDLE_MIN_DURATION"],
  derives: "`idle_started` / `idle_ended` (`lat`, `lng`; `duration_s` at the end); a trip's `idle_s`",
  rules: "the ignition on and standing at least `IDLE_MIN_DURATION` (300 s), stamped at its start (the later of the two), emitted once it lasted that; ended by a moving fix, the ignition off, or a gap (at the last record before it); an idle ending within a trip adds to the trip",
  outputs: [
    { events: ['idle_started', 'idle_ended'], shown: "`idle_started` / `idle_ended`", measurement: VEHICLE_EVENTS, fields: [{ name: 'lat', meaning: "where it stood" }, { name: 'lng', meaning: "the same, longitude" }, { name: 'duration_s', meaning: "how long it idled", on: ['idle_ended'] }], what: "the ignition on and standing at least `IDLE_MIN_DURATION`; a trip's `idle_s`" },
  ],
});
