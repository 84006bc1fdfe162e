import { STOPS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitStop, flatSlice, gpsLastTimeCopy, type Context, type Slice, type Stop } from './context.js';
import { IGNITION_SLICE, lastIgnition, lastIgnitionCopy } from './ignition.js';
import { geofenceNamesAt } from './geofences.js';
import { stepMoving, TRACK_SLICE, type Step } from './track.js';
import { detector } from './detector.js';
import { gapFrom } from './gap.js';
import { lasted } from './spell.js';

/**
 * Stops (Traccar's stops report, `report.trip.minimalParkingDuration`): the vehicle standing still at
 * least STOP_MIN_DURATION (default 300 s, Traccar's), by the track's confirmed fixes (`stepMoving`: an
 * outlier never ends a stop, parked jitter never starts a move). Emitted when it ends, as a `stops` point:
 *
 * - start: its first confirmed fix standing still; end: the first confirmed fix moving again.
 * - where: that first fix; how long the ignition was on during it (`ignition_on_s`: a vehicle standing
 *   with the ignition on is idling, `idle.ts`, which tells that as events).
 * - A gap in the GPS stream longer than EVENTS_MAX_GAP ends the stop at the last record before it, as it
 *   ends a trip: a vehicle that stopped reporting is not known to have stood. A stop still open is emitted
 *   once the vehicle moves (or reports after a gap); one that never reports again is never emitted.
 */
export interface StopsState {
  /** Its start (NaN: moving, or no confirmed fix yet). */
  since: number;
  lat: number;
  lng: number;
  /** Ignition-on time within the stop so far, and since when it is on (NaN: off). */
  ignitionOnMs: number;
  ignitionOnAt: number;
}

/**
 * A GPS record, in order, after the track took its fix (`steps`: the fixes that confirmed). After a gap,
 * a fix from before it that the record confirmed is the gap's side the stop already ended on: skipped.
 */
export function stopsRecord(ctx: Context, s: StopsState, ignitionBefore: number, r: StreamRecord, plan: StreamPlan, steps: readonly Step[]): void {
  const beforeGap = gapFrom(ctx, ctx.previousTime, r.time);
  if (beforeGap !== -Infinity && s.since === s.since) end(ctx, s, ctx.previousTime);
  for (const step of steps) {
    if (step.fix.time <= beforeGap) continue;
    if (stepMoving(step, ctx.opts)) {
      if (s.since === s.since) end(ctx, s, Math.max(step.fix.time, s.since));
    } else if (s.since !== s.since) {
      s.since = step.fix.time;
      s.lat = step.fix.lat;
      s.lng = step.fix.lng;
      s.ignitionOnMs = 0;
      s.ignitionOnAt = ignitionBefore === 1 ? s.since : NaN;
    }
  }
  const ign = valueOf(r, plan.ignitionAt);
  if (ign === 1 && ignitionBefore !== 1) {
    if (s.since === s.since) s.ignitionOnAt = Math.max(r.time, s.since);
  } else if (ign === 0 && ignitionBefore === 1 && s.ignitionOnAt === s.ignitionOnAt) {
    s.ignitionOnMs += Math.max(0, r.time - s.ignitionOnAt);
    s.ignitionOnAt = NaN;
  }
}

function end(ctx: Context, s: StopsState, at: number): void {
  const start = s.since;
  s.since = NaN;
  const ignitionOnMs = s.ignitionOnMs + (s.ignitionOnAt === s.ignitionOnAt ? Math.max(0, at - s.ignitionOnAt) : 0);
  s.ignitionOnAt = NaN;
  s.ignitionOnMs = 0;
  if (!lasted(start, at, ctx.opts.stopMinDurationMs)) return;
  const stop: Stop = { vehicleno: ctx.vehicleno, start, end: at, durationS: (at - start) / 1000, lat: s.lat, lng: s.lng, ignitionOnS: ignitionOnMs / 1000 };
  const geofence = geofenceNamesAt(ctx, s.lat, s.lng, start);
  if (geofence !== undefined) stop.geofence = geofence;
  emitStop(ctx, stop);
}

export const STOPS_SLICE: Slice<StopsState> = flatSlice(
  7,
  'stops',
  ['since', 'lat', 'lng', 'ignitionOnMs', 'ignitionOnAt', 'ignition', 'lastTime'],
  () => ({ since: NaN, lat: NaN, lng: NaN, ignitionOnMs: 0, ignitionOnAt: NaN }),
  // The last ignition and the GPS stream's last record time, each kept once (the ignition's slice, the stream); stored here too, for the release before.
  { ignition: lastIgnitionCopy, lastTime: gpsLastTimeCopy },
);

/** The stops detector, declared once (detector.ts); ../kinds.ts lists it. */
export const STOPS_DETECTOR = detector({
  key: 'stops',
  slice: STOPS_SLICE,
  fields: ['ignitionAt'],
  reads: { track: TRACK_SLICE },
  // The fixes as the trips leave them: at a trip's end the trips settle the track's last fix, and its confirmation takes the place of the first of `steps` (track.ts reuses its two Step objects).
  after: ['trips'],
  // The ignition as the records before left it (how long it was on during a stop).
  readsBefore: { ignition: IGNITION_SLICE },
  on: { position: (ctx, s, r, plan, steps) => stopsRecord(ctx, s.stops, lastIgnition(s.ignition), r, plan, steps) },
  input: "the track, GPS `ignstatus`",
  settings: ["STOP_MIN_DURATION", "EVENTS_MAX_GAP"],
  derives: "`stops`",
  rules: "standing still (`stepMoving`) at least `STOP_MIN_DURATION` (300 s, Traccar's `minimalParkingDuration`): from its first confirmed fix standing to the first moving again, where it stood, `ignition_on_s`; a gap over `EVENTS_MAX_GAP` ends it at the last record before the gap (a fix from before the gap that a record after it confirms is skipped); emitted when it ends, so the last stop of a vehicle that never reports again is never emitted",
  outputs: [
    { events: [], shown: "a stop", kind: 'stop', measurement: STOPS, fields: [{ name: 'end', meaning: "the first confirmed fix moving again, or the last record before a gap" }, { name: 'durationS', meaning: "end − start" }, { name: 'lat', meaning: "where it stood: its first confirmed fix standing still" }, { name: 'lng', meaning: "the same, longitude" }, { name: 'ignitionOnS', meaning: "of it with the ignition on" }, { name: 'geofence', meaning: "the geofences it stood in" }], what: "standing still at least `STOP_MIN_DURATION` (300 s, Traccar's), by the confirmed fixes; written once the vehicle moves again" },
  ],
});
