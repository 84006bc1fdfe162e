import { haversineM } from '../../../telemetry/geo.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { orNaN, type DeriveOptions, type Fix, type Slice, type Step } from './context.js';
import { Ring } from './ring.js';
import { detector } from './detector.js';

/**
 * The vehicle's track: which fixes are true and how far each true step went, for the detectors that
 * measure movement (trips, stops, idling, overspeed, towing, geofences, moved while immobilised; charging
 * and the drain read its motion history). What Traccar's FilterHandler and
 * DistanceHandler do before its event handlers, with what a fleet's devices need on top:
 *
 * - **Outliers.** A fix counts once the next fix agrees with it (the step between them implies no more
 *   than TRIP_MAX_JUMP_SPEED). Of two fixes that disagree, the one that also disagrees with the track
 *   (its last confirmed fix) is the outlier; when both agree with it, the earlier is: a cold start's
 *   first fix 2 km off after an 8-hour park is plausible from the parking spot, but the fixes after it
 *   disagree with it. Two agreeing fixes that disagree with the track are the truth (a tow, or a fix
 *   taken for an outlier that the next confirms): the track re-anchors on them without adding the step.
 * - **Jitter.** A confirmed step shorter than GPS_MIN_ERROR between fixes that both report no movement
 *   (speed at or below MOTION_SPEED, or none) counts nothing, and the anchor stays where it was, as
 *   Traccar's `coordinates.minError` keeps the last coordinates: a parked vehicle's 2 m of jitter adds
 *   nothing however long it stands, while the last metres of a drive (moving, then stopped) count.
 * - **Motion history.** The last MOTION_RING times the vehicle started or stopped moving (by the
 *   speed its confirmed fixes report: an outlier's says nothing), so the CAN stream can ask whether the
 *   vehicle stood still at a record's time (`movingAt`): exact when the track has confirmed a fix past
 *   that time, else its latest state.
 */

/** A fix and a confirmed step (`Fix`, `Step`) are declared in context.ts, as every position hook takes them. */
export type { Fix, Step } from './context.js';

export interface TrackState {
  /** The last confirmed fix: distance is measured from it. */
  anchor: Fix | undefined;
  /** The newest fix, waiting for the next to agree with it. */
  candidate: Fix | undefined;
  /** The last fix taken for an outlier, kept aside one fix in case the next agrees with it. */
  rejected: Fix | undefined;
  /** 1 moving, 0 standing, by the speed of the newest fix that reported one. */
  moving: number;
  /** The last MOTION_RING times the motion changed: +t started moving at t, -t stopped at t. */
  motion: Ring;
  /** Where the vehicle came to stand, beside `motion`: for each of its last STOOD_RING stops, the fix's time, lat and lng (`standingAt`). */
  stood: Ring;
}

export const MOTION_RING = 8;
/** Stops remembered (`standingAt`): enough for a CAN stream minutes behind the GPS stream. */
export const STOOD_RING = 4;

/** The fix a record carries, written into one of the track's spare fixes (`spareFix`), or undefined. */
export function fixOf(r: StreamRecord, plan: StreamPlan, s: TrackState): Fix | undefined {
  const lat = valueOf(r, plan.latAt);
  const lng = valueOf(r, plan.lngAt);
  if (lat === undefined || lng === undefined) return undefined;
  const f = spareFix(s);
  f.time = r.time;
  f.lat = lat;
  f.lng = lng;
  f.speed = orNaN(valueOf(r, plan.speedAt));
  return f;
}

/**
 * Fixes a state holds at most three of (anchor, candidate, rejected); a record's fix is written into
 * one of four kept beside them that the state does not hold, so a fix allocates nothing (each was an
 * object and four boxed doubles, a fifth of what derivation allocated). Kept as a property that is
 * not enumerable: not stored (the slice's save names what is), and not part of what a state is when
 * compared.
 */
const POOL = Symbol('spare fixes');
type Pooled = TrackState & { [POOL]: Fix[] };

function withPool(s: TrackState): TrackState {
  const fixes = Array.from({ length: 4 }, (): Fix => ({ time: 0.5, lat: 0.5, lng: 0.5, speed: 0.5 }));
  Object.defineProperty(s, POOL, { value: fixes, enumerable: false });
  return s;
}

function spareFix(s: TrackState): Fix {
  const fixes = (s as Pooled)[POOL];
  for (const f of fixes) if (f !== s.anchor && f !== s.candidate && f !== s.rejected) return f;
  throw new Error('vehicle events: the track holds more than three fixes');
}

const kmhBetween = (a: Fix, b: Fix): number => (haversineM(a.lat, a.lng, b.lat, b.lng) / Math.max(1, b.time - a.time)) * 3600;
const agree = (a: Fix, b: Fix, o: DeriveOptions): boolean => kmhBetween(a, b) <= o.maxJumpSpeedKmh;

/**
 * A fix of the GPS stream, in order: adds to `into` the fixes it confirmed (none, one, or two when it
 * settles a move the track first took for an outlier).
 */
export function trackFix(s: TrackState, f: Fix, o: DeriveOptions, into: Step[]): void {
  const c = s.candidate;
  s.candidate = f;
  if (c === undefined) return;
  if (agree(c, f, o)) {
    s.rejected = undefined;
    into.push(confirm(s, c, o, true, FIRST));
    return;
  }
  const a = s.anchor;
  const r = s.rejected;
  if (r !== undefined && agree(r, f, o)) {
    // f agrees with the fix set aside: those two are the truth. Set aside before c, it makes c the
    // outlier; set aside after c (c agreed with the track), c counts and the vehicle has moved since.
    s.rejected = undefined;
    if (r.time > c.time && a !== undefined && agree(a, c, o)) into.push(confirm(s, c, o, true, FIRST));
    into.push(confirm(s, r, o, true, SECOND));
    return;
  }
  if (a !== undefined && agree(a, c, o) && !agree(a, f, o)) {
    // f disagrees with both c and the track: f is the outlier (kept aside, in case the next agrees with it).
    s.candidate = c;
    s.rejected = f;
    return;
  }
  // c disagrees with the fix after it: c is the outlier (kept aside, in case the next agrees with it).
  s.rejected = c;
}

/**
 * Whether a confirmed fix says the vehicle moved: by its speed when it reported one (above
 * MOTION_SPEED), else by its step (jitter counts nothing, so a step at all is movement). What stops and
 * idling read, so both agree on when a vehicle stands.
 */
export function stepMoving(step: Step, o: DeriveOptions): boolean {
  const speed = step.fix.speed;
  return speed === speed ? speed > o.motionSpeedKmh : step.distanceM > 0;
}

/** Confirms the waiting fix alone (a trip ends: no fix will come to agree), if it agrees with the anchor; else drops it. */
export function settleTrack(s: TrackState, o: DeriveOptions): Step | undefined {
  const c = s.candidate;
  s.candidate = undefined;
  s.rejected = undefined;
  if (c === undefined) return undefined;
  if (s.anchor !== undefined && !agree(s.anchor, c, o)) return undefined;
  return confirm(s, c, o, false, FIRST);
}

/**
 * The steps a call hands out, reused (a caller reads them at once and keeps none): a fix's confirmation
 * allocates nothing. A call confirms two fixes at most.
 */
const FIRST: Step = { fix: { time: 0, lat: 0, lng: 0, speed: NaN }, distanceM: 0 };
const SECOND: Step = { fix: FIRST.fix, distanceM: 0 };

function confirm(s: TrackState, c: Fix, o: DeriveOptions, agreed: boolean, out: Step): Step {
  if (c.speed === c.speed) noteMotion(s, c, c.speed > o.motionSpeedKmh ? 1 : 0);
  out.fix = c;
  out.distanceM = 0;
  const a = s.anchor;
  if (a === undefined) {
    s.anchor = c; // the first fix
    return out;
  }
  const d = haversineM(a.lat, a.lng, c.lat, c.lng);
  if (agreed && (d / Math.max(1, c.time - a.time)) * 3600 > o.maxJumpSpeedKmh) {
    s.anchor = c; // two agreeing fixes against a stale anchor: re-anchored, no step
    return out;
  }
  // Neither end reports movement: a step shorter than the GPS error is jitter, and the anchor stays.
  if (d < o.gpsMinErrorM && !(c.speed > o.motionSpeedKmh) && !(a.speed > o.motionSpeedKmh)) return out;
  s.anchor = c;
  out.distanceM = d;
  return out;
}

function noteMotion(s: TrackState, f: Fix, moving: number): void {
  if (moving === s.moving && s.motion.length > 0) return;
  s.moving = moving;
  s.motion.push(moving ? f.time : -f.time);
  if (!moving) s.stood.push(f.time, f.lat, f.lng);
}

/**
 * Where the vehicle stood at `time`, when it stood then (by the motion history): the fix at which it came
 * to stand. Exact, as `movingAt` is, once the track has confirmed a fix past `time`, whatever the GPS
 * stream's lead or lag on the reader (a charging session of the CAN stream asks); undefined while it
 * moved, or when that stop is older than the last STOOD_RING.
 */
export function standingAt(s: TrackState, time: number): { lat: number; lng: number } | undefined {
  if (movingAt(s, time)) return undefined;
  const stood = s.stood;
  for (let j = 0; j < stood.length; j++) if (stood.newest(j, 0) <= time) return { lat: stood.newest(j, 1), lng: stood.newest(j, 2) };
  return undefined;
}

/**
 * The time through which the motion history is final: the track's stream has committed records up to
 * `watermark`, and a fix it holds unconfirmed (or aside as an outlier) may yet note a change at its own time.
 */
export function motionSettledThrough(s: TrackState, watermark: number, o: DeriveOptions): number {
  let through = watermark;
  const r = s.rejected;
  if (r !== undefined && r.speed === r.speed) through = Math.min(through, r.time - 1);
  const c = s.candidate;
  if (c !== undefined && c.speed === c.speed && (s.motion.length === 0 || (c.speed > o.motionSpeedKmh ? 1 : 0) !== s.moving)) through = Math.min(through, c.time - 1);
  return through;
}

/** Whether the motion history reaches back to `time` (its oldest change remembered is at or before it, or none was forgotten). */
export function motionCovers(s: TrackState, time: number): boolean {
  return !s.motion.full || Math.abs(s.motion.at(0)) <= time;
}

/** Whether the motion changed after `from` up to `to` (by the history, which must cover `from`). */
export function motionChanged(s: TrackState, from: number, to: number): boolean {
  for (let j = 0; j < s.motion.length; j++) {
    const t = Math.abs(s.motion.newest(j));
    if (t <= from) return false;
    if (t <= to) return true;
  }
  return false;
}

/** Whether the vehicle was moving at `time`, by the motion history (its latest state for a time past it). */
export function movingAt(s: TrackState, time: number): boolean {
  let oldest = 0;
  for (let j = 0; j < s.motion.length; j++) {
    const x = s.motion.newest(j);
    if (Math.abs(x) <= time) return x > 0;
    oldest = x;
  }
  // Before every change remembered: the state before the oldest one (standing if none was ever seen).
  return oldest < 0;
}

export const TRACK_SLICE: Slice<TrackState> = {
  id: 0,
  name: 'track',
  fresh: () => withPool({ anchor: undefined, candidate: undefined, rejected: undefined, moving: 0, motion: new Ring(MOTION_RING, 1, 'ring'), stood: new Ring(STOOD_RING, 3, 'ring') }),
  save(s, out, at) {
    at = putFix(out, at, s.anchor);
    at = putFix(out, at, s.candidate);
    out[at] = s.moving;
    at = s.motion.save(out, at + 1);
    at = putFix(out, at, s.rejected);
    return s.stood.save(out, at);
  },
  load(x) {
    const s = TRACK_SLICE.fresh();
    s.anchor = fixFrom(x, 0);
    s.candidate = fixFrom(x, 4);
    s.moving = x(8) === 1 ? 1 : 0;
    const at = s.motion.load(x, 9);
    s.rejected = fixFrom(x, at);
    // Stored before the stops were kept: none known (the ring reads a NaN count as none).
    s.stood.load(x, at + 4);
    return s;
  },
};

function putFix(out: Float64Array, at: number, f: Fix | undefined): number {
  out[at] = f === undefined ? NaN : f.time;
  out[at + 1] = f === undefined ? NaN : f.lat;
  out[at + 2] = f === undefined ? NaN : f.lng;
  out[at + 3] = f === undefined ? NaN : f.speed;
  return at + 4;
}
const fixFrom = (x: (i: number) => number, at: number): Fix | undefined => (x(at) === x(at) ? { time: x(at), lat: x(at + 1), lng: x(at + 2), speed: x(at + 3) } : undefined);

/** The track detector, declared once (detector.ts); ../kinds.ts lists it. */
export const TRACK_DETECTOR = detector({
  key: 'track',
  slice: TRACK_SLICE,
  fields: ['latAt', 'lngAt', 'speedAt'],
  on: {
    // The fixes this record confirmed, into `steps` for every detector after (emptied by pop: `length = 0` on an array is a call into the runtime, each record).
    position(ctx, s, r, plan, steps) {
      const fix = fixOf(r, plan, s.track);
      while (steps.length > 0) steps.pop();
      if (fix !== undefined) trackFix(s.track, fix, ctx.opts, steps);
    },
  },
  input: "GPS fixes (position, `speed`)",
  settings: ["TRIP_MAX_JUMP_SPEED", "GPS_MIN_ERROR", "MOTION_SPEED"],
  derives: "the confirmed fixes and the steps between them (for trips, stops, idling, overspeed, towing), the motion history; `stepMoving`: a confirmed fix moves when its speed is over `MOTION_SPEED`, or, without a speed, when its step counted (jitter does not)",
  rules: "**Outliers**: a fix counts once the next agrees with it (the step implies at most `TRIP_MAX_JUMP_SPEED`); of two that disagree, the one that also disagrees with the track is dropped, else the earlier; two agreeing fixes far from the track re-anchor it without adding the step (a cold start's first fix 2 km off, plausible from where the vehicle parked 8 h before, is dropped; a tow re-anchors). **Jitter**: a step shorter than `GPS_MIN_ERROR` between fixes both at or below `MOTION_SPEED` counts nothing and the anchor stays (Traccar's `coordinates.minError`)",
  outputs: [

  ],
});
