import { TRIPS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitTrip, flatSlice, gpsLastTimeCopy, type Context, type Slice, type Trip } from './context.js';
import { SOC_SLICE, socAtOrBefore, socCovers, socFirstAfter, type SocState } from './soc.js';
import { correctFrom, notePremature } from '../corrections/state.js';
import { settleTrack, TRACK_SLICE, type Step, type TrackState } from './track.js';
import { geofenceNamesAt } from './geofences.js';
import { detector } from './detector.js';
import { gapBefore } from './gap.js';
import { lasted } from './spell.js';

/**
 * Trips, by ignition (Traccar's trips with `report.trip.useIgnition`): from a GPS record with ignition
 * on to the next with ignition off, measured on the track's confirmed fixes (`track.ts`).
 *
 * - Distance: the sum of the confirmed steps within the trip. The trip starts at its first confirmed
 *   fix (the step from where the vehicle stood before is not the trip's, and an ignition-on record
 *   without a fix, or whose fix turns out an outlier, starts the trip at the first that counts); it
 *   ends at its last, the ignition-off fix included when it agrees with the track.
 * - A trip is kept when it lasts at least TRIP_MIN_DURATION **or** covers at least TRIP_MIN_DISTANCE
 *   (Traccar keeps a trip unless both are short; its defaults, 300 s and 500 m, are ours). Its
 *   ignition events are emitted either way.
 * - A gap in the GPS stream longer than EVENTS_MAX_GAP (Traccar's `minimalNoDataDuration`, 1 h) ends the
 *   open trip at the last fix before it (`gapEnded: 1`): a lost ignition-off is not bridged over a
 *   night. A record after the gap with ignition still on starts a new trip there.
 * - soc at the start and end: the CAN stream's (`soc.ts`), read once that stream has passed the time,
 *   so a CAN stream minutes behind the GPS stream gives the same as one in step: a finished trip waits
 *   for it (MAX_WAITING at most: one more emits the oldest), and is emitted with the latest soc known when
 *   the GPS stream is EVENTS_MAX_SKEW past its end or the CAN stream falls idle with nothing pending (a
 *   device that sends CAN only while driving: emitted at once, not EVENTS_MAX_SKEW later). Emitted so before the
 *   CAN stream passed it, it is checked once that stream passes its end, and corrected
 *   (`../corrections/`) if the soc changed after what the stream had reached; so it is when the CAN stream
 *   ran so far ahead that the soc's history no longer reaches back to it. Without any soc before the
 *   start, the first within the trip.
 */
export interface TripsState extends TripSoFar {
  /** 1 while a trip is open. */
  open: number;
}

/** A trip as measured so far (NaN where unknown). */
interface TripSoFar {
  start: number;
  /** The trip's first and last confirmed fix (NaN before the first). */
  startLat: number;
  startLng: number;
  endLat: number;
  endLng: number;
  distanceM: number;
  maxSpeed: number;
  socStart: number;
  /** Its start, while its soc there waits for the CAN stream to pass it (else NaN). */
  socStartAt: number;
  /** Time spent idling and over the speed limit within it (`tripAddTime`). */
  idleMs: number;
  overspeedMs: number;
}

/** Finished trips waiting for the CAN stream to pass their ends, oldest first (at most MAX_WAITING). */
export type FinishedTrips = Finished[];

/** Trips waiting at once: a further one emits the oldest with the soc known then. */
export const MAX_WAITING = 16;

/** A finished trip's numbers. */
export interface Finished extends TripSoFar {
  end: number;
  /** 1: ended by a gap in the GPS stream. */
  gapEnded: number;
}

/** Keys a finished trip gained after it was first stored, and what a trip stored before them reads. */
const COUNTED_LATER: Partial<Record<keyof Finished, number>> = { idleMs: 0, overspeedMs: 0 };
const FINISHED_KEYS: ReadonlyArray<keyof Finished> = ['start', 'end', 'startLat', 'startLng', 'endLat', 'endLng', 'distanceM', 'maxSpeed', 'socStart', 'socStartAt', 'gapEnded', 'idleMs', 'overspeedMs'];

/** Before a GPS record: a gap since the last one longer than EVENTS_MAX_GAP ends the open trip at that last record. */
export function tripGap(ctx: Context, s: TripsState, waiting: FinishedTrips, track: TrackState, soc: SocState, time: number): void {
  if (s.open !== 1 || !gapBefore(ctx, ctx.previousTime, time)) return;
  const settled = settleTrack(track, ctx.opts);
  if (settled !== undefined) tripStep(s, settled);
  end(ctx, s, waiting, ctx.previousTime, soc, true);
}

/** A GPS record, in order, after the track took its fix (`steps`: the fixes that confirmed). */
export function tripRecord(ctx: Context, s: TripsState, waiting: FinishedTrips, track: TrackState, soc: SocState, r: StreamRecord, plan: StreamPlan, steps: readonly Step[]): void {
  while (waiting.length > 0 && r.time >= waiting[0]!.end + ctx.opts.maxSkewMs) tell(ctx, waiting, soc);
  for (const step of steps) tripStep(s, step);
  const ign = valueOf(r, plan.ignitionAt);
  if (ign === 1 && s.open !== 1) {
    s.open = 1;
    s.start = r.time;
    s.startLat = s.startLng = s.endLat = s.endLng = NaN;
    s.distanceM = 0;
    s.maxSpeed = 0;
    s.socStart = NaN;
    s.socStartAt = r.time;
    s.idleMs = s.overspeedMs = 0;
    tripSocProgress(ctx, s, waiting, soc);
  } else if (ign === 0 && s.open === 1) {
    const settled = settleTrack(track, ctx.opts);
    if (settled !== undefined) tripStep(s, settled);
    end(ctx, s, waiting, r.time, soc, false);
  }
}

/** Time a trip spent idling or over the speed limit (idle.ts, overspeed.ts): added to the open trip, if any. */
export function tripAddTime(s: TripsState, what: 'idleMs' | 'overspeedMs', ms: number): void {
  if (s.open === 1 && ms > 0) s[what] += ms;
}

/**
 * The soc at a trip's start, once the CAN stream has passed it: the last at or before the start, else
 * the first within the trip (up to `until`, its end, or while it is open, any); NaN: none, and none to
 * come; undefined: not known yet.
 */
function socStartOf(ctx: Context, soc: SocState, start: number, until: number): number | undefined {
  if (soc.through < start) return undefined;
  // The CAN stream ran so far ahead that the soc's history no longer reaches the start: corrected.
  if (!socCovers(soc, start)) correctFrom(ctx.late, start);
  const x = socAtOrBefore(soc, start) ?? socFirstAfter(soc, start, until);
  if (x !== undefined) return x;
  return soc.through >= until ? NaN : undefined;
}

/** After a CAN record, or a trip's start or end: what the CAN stream has now passed is read. */
export function tripSocProgress(ctx: Context, s: TripsState, waiting: FinishedTrips, soc: SocState): void {
  if (s.socStartAt === s.socStartAt && s.open === 1) {
    const x = socStartOf(ctx, soc, s.socStartAt, Infinity);
    if (x !== undefined) {
      s.socStart = x;
      s.socStartAt = NaN;
    }
  }
  for (const d of waiting) {
    if (d.socStartAt !== d.socStartAt) continue;
    const x = socStartOf(ctx, soc, d.socStartAt, d.end);
    if (x !== undefined) {
      d.socStart = x;
      d.socStartAt = NaN;
    }
  }
  while (waiting.length > 0 && soc.through >= waiting[0]!.end) tell(ctx, waiting, soc);
}

/** The CAN stream fell idle with nothing pending: finished trips wait no longer. */
export function tripSocIdle(ctx: Context, waiting: FinishedTrips, soc: SocState): void {
  while (waiting.length > 0) tell(ctx, waiting, soc);
}

function tripStep(s: TripsState, step: Step): void {
  const f = step.fix;
  if (s.open !== 1 || f.time < s.start) return;
  if (s.startLat !== s.startLat) {
    s.startLat = f.lat;
    s.startLng = f.lng;
  } else s.distanceM += step.distanceM;
  s.endLat = f.lat;
  s.endLng = f.lng;
  if (f.speed > s.maxSpeed) s.maxSpeed = f.speed;
}

function end(ctx: Context, s: TripsState, waiting: FinishedTrips, at: number, soc: SocState, gapEnded: boolean): void {
  s.open = 0;
  const socStartAt = s.socStartAt;
  s.socStartAt = NaN;
  const o = ctx.opts;
  if (!lasted(s.start, at, o.tripMinDurationMs) && s.distanceM < o.tripMinDistanceM) return;
  if (waiting.length >= MAX_WAITING) tell(ctx, waiting, soc);
  waiting.push({
    start: s.start,
    end: at,
    startLat: s.startLat,
    startLng: s.startLng,
    endLat: s.endLat,
    endLng: s.endLng,
    distanceM: s.distanceM,
    maxSpeed: s.maxSpeed,
    socStart: s.socStart,
    socStartAt,
    gapEnded: gapEnded ? 1 : 0,
    idleMs: s.idleMs,
    overspeedMs: s.overspeedMs,
  });
  tripSocProgress(ctx, s, waiting, soc);
}

/** Emits the oldest finished trip, with the soc known now. */
function tell(ctx: Context, waiting: FinishedTrips, soc: SocState): void {
  const d = waiting.shift()!;
  // Emitted before the CAN stream passed its end: checked once it has (a soc change after what it had reached then: corrected);
  // emitted with a soc history that no longer reaches it: corrected.
  if (soc.through < d.end) notePremature(ctx.late, 'soc', d.start, d.end, soc.through, 'earliest');
  else if (!socCovers(soc, d.end)) correctFrom(ctx.late, d.start);
  const t: Trip = {
    vehicleno: ctx.vehicleno,
    start: d.start,
    end: d.end,
    durationS: (d.end - d.start) / 1000,
    distanceM: d.distanceM,
    maxSpeedKmh: d.maxSpeed,
    idleS: d.idleMs / 1000,
    overspeedS: d.overspeedMs / 1000,
  };
  if (d.startLat === d.startLat) {
    Object.assign(t, { startLat: d.startLat, startLng: d.startLng, endLat: d.endLat, endLng: d.endLng });
    const from = geofenceNamesAt(ctx, d.startLat, d.startLng, d.start);
    const to = geofenceNamesAt(ctx, d.endLat, d.endLng, d.end);
    if (from !== undefined) t.startGeofence = from;
    if (to !== undefined) t.endGeofence = to;
  }
  // Emitted before the CAN stream passed the trip: the soc known then.
  const socStart = d.socStart === d.socStart ? d.socStart : d.socStartAt === d.socStartAt ? (socAtOrBefore(soc, d.socStartAt) ?? socFirstAfter(soc, d.socStartAt, d.end)) : undefined;
  if (socStart !== undefined) t.socStart = socStart;
  const socEnd = socAtOrBefore(soc, d.end);
  if (socEnd !== undefined) t.socEnd = socEnd;
  if (d.gapEnded === 1) t.gapEnded = 1;
  emitTrip(ctx, t);
}

// `lastTime`: the GPS stream's last record time, kept once in the stream (`Context.previousTime`); stored here too, for the release before.
export const TRIPS_SLICE: Slice<TripsState> = flatSlice(
  4,
  'trips',
  ['open', 'start', 'startLat', 'startLng', 'endLat', 'endLng', 'distanceM', 'maxSpeed', 'socStart', 'lastTime', 'socStartAt', 'idleMs', 'overspeedMs'],
  () => ({ open: 0, start: NaN, startLat: NaN, startLng: NaN, endLat: NaN, endLng: NaN, distanceM: 0, maxSpeed: 0, socStart: NaN, socStartAt: NaN, idleMs: 0, overspeedMs: 0 }),
  { lastTime: gpsLastTimeCopy },
);

/**
 * The finished trips waiting, as a list: its width (doubles a trip) first, so a trip may gain fields at
 * its end as a slice may; then each trip's doubles.
 */
export const FINISHED_TRIPS_SLICE: Slice<FinishedTrips> = {
  id: 6,
  name: 'finished trips',
  fresh: () => [],
  save(list, out, at) {
    if (list.length === 0) return at;
    out[at++] = FINISHED_KEYS.length;
    for (const d of list) for (const k of FINISHED_KEYS) out[at++] = d[k];
    return at;
  },
  load(x, stored) {
    const width = x(0);
    if (stored === 0 || !(width > 0)) return [];
    const list: FinishedTrips = [];
    // A trip stored before a key was added reads it as a trip then counted it: times not counted are 0.
    for (let at = 1; at + width <= stored; at += width) list.push(Object.fromEntries(FINISHED_KEYS.map((k, i) => [k, i < width ? x(at + i) : (COUNTED_LATER[k] ?? NaN)])) as unknown as Finished);
    return list;
  },
};

/** The trips detector, declared once (detector.ts); ../kinds.ts lists it. */
export const TRIPS_DETECTOR = detector({
  key: 'trips',
  slice: TRIPS_SLICE,
  fields: ['ignitionAt'],
  reads: { soc: SOC_SLICE },
  writesInto: { finishedTrips: FINISHED_TRIPS_SLICE },
  // At a trip's end the trips settle the track's last fix (the ignition-off fix is where the vehicle parked).
  amends: { track: TRACK_SLICE },
  on: {
    gap: (ctx, s, time) => tripGap(ctx, s.trips, s.finishedTrips, s.track, s.soc, time),
    position: (ctx, s, r, plan, steps) => tripRecord(ctx, s.trips, s.finishedTrips, s.track, s.soc, r, plan, steps),
    soc: (ctx, s) => tripSocProgress(ctx, s.trips, s.finishedTrips, s.soc),
  },
  input: "the track, GPS `ignstatus`, the CAN stream's soc",
  settings: ["TRIP_MIN_DURATION", "TRIP_MIN_DISTANCE", "EVENTS_MAX_GAP", "EVENTS_MAX_SKEW"],
  derives: "`trips`",
  rules: "ignition on to off, measured from the trip's first confirmed fix to its last; **kept when it lasts `TRIP_MIN_DURATION` or covers `TRIP_MIN_DISTANCE`** (Traccar keeps a trip unless both are short, with these defaults: 300 s, 500 m); a gap in the GPS stream over `EVENTS_MAX_GAP` ends it at the last fix before the gap (`gapEnded: 1`), and ignition still on after the gap starts a new one; soc at start and end read once the CAN stream has passed them (a finished trip waits up to `EVENTS_MAX_SKEW` of GPS time, or until the CAN stream is idle with nothing pending; at most 16 wait)",
  outputs: [
    { events: [], shown: "a trip", kind: 'trip', measurement: TRIPS, fields: [{ name: 'end', meaning: "ignition off, or the last fix before a gap" }, { name: 'durationS', meaning: "end − start" }, { name: 'distanceM', meaning: "the steps between its confirmed fixes" }, { name: 'maxSpeedKmh', meaning: "the highest speed of its confirmed fixes" }, { name: 'startLat', meaning: "its first confirmed fix" }, { name: 'startLng', meaning: "its first confirmed fix" }, { name: 'endLat', meaning: "its last confirmed fix" }, { name: 'endLng', meaning: "its last confirmed fix" }, { name: 'socStart', meaning: "the soc at (or else first after) its start" }, { name: 'socEnd', meaning: "the soc at its end" }, { name: 'gapEnded', meaning: "1: ended by a gap in the GPS stream (`EVENTS_MAX_GAP`), not by ignition off" }, { name: 'idleS', meaning: "idling within it" }, { name: 'overspeedS', meaning: "over the speed limit within it" }, { name: 'startGeofence', meaning: "the geofences its first confirmed fix lay in" }, { name: 'endGeofence', meaning: "the geofences its last confirmed fix lay in" }], what: "ignition on to off, or to the last fix before a gap of `EVENTS_MAX_GAP` (`gap_ended` 1): distance is the sum of steps between its confirmed fixes, from its first (a fix the next one disagrees with is an outlier; parked jitter under `GPS_MIN_ERROR` counts nothing); kept when it lasts `TRIP_MIN_DURATION` **or** covers `TRIP_MIN_DISTANCE`, as Traccar keeps trips" },
  ],
});

/** The trips finished and waiting for the CAN stream's soc at their end: the trips detector's second slice. */
export const FINISHED_TRIPS_DETECTOR = detector({
  key: 'finishedTrips',
  slice: FINISHED_TRIPS_SLICE,
  fields: [],
  input: 'the trips, the CAN stream’s soc',
  settings: ['EVENTS_MAX_SKEW'],
  derives: '',
  rules: '',
  outputs: [],
});
