import { createHash } from 'node:crypto';
import { emptyRecord, STREAMS, recordOf, type EventInput, type StreamPlan, type StreamRecord } from './inputs.js';
import { addRecord, committed, dropCommitted, due, newStream, type Stream } from './streams.js';
import { emptyDerived, DEFAULT_DERIVE_OPTIONS, type ChargingSession, type Context, type Derived, type DeriveOptions, type DerivedEvent, type Slice, type Stop, type Trip } from './detectors/context.js';
import { fixOf, TRACK, trackFix, type Step, type TrackState } from './detectors/track.js';
import { noteSoc, SOC, type SocState } from './detectors/soc.js';
import { alarmLateRecord, alarmRecord, ALARMS_SLICE, type AlarmsState } from './detectors/alarms.js';
import { IGNITION_SLICE, ignitionRecord, type IgnitionState } from './detectors/ignition.js';
import { FINISHED_TRIPS_SLICE, tripGap, tripRecord, TRIPS_SLICE, tripSocIdle, tripSocProgress, type FinishedTrips, type TripsState } from './detectors/trips.js';
import { chargingGap, chargingRecord, chargingSoc, CHARGING_SLICE, type ChargingState } from './detectors/charging.js';
import { STOPS_SLICE, stopsRecord, type StopsState } from './detectors/stops.js';
import { IDLE_SLICE, idleGap, idleRecord, type IdleState } from './detectors/idle.js';
import { OVERSPEED_SLICE, overspeedGap, overspeedRecord, type OverspeedState } from './detectors/overspeed.js';
import { TOWING_SLICE, towingRecord, type TowingState } from './detectors/towing.js';
import { GEOFENCES_SLICE, geofencesRecord, type GeofencesState } from './detectors/geofences.js';
import { SOC_LOW_SLICE, socLowRecord, type SocLowState } from './detectors/socLow.js';
import { BATTERY_SWAP_SLICE, batterySwapRecord, type BatterySwapState } from './detectors/batterySwap.js';
import { DRAIN_SLICE, drainRecord, type DrainState } from './detectors/drain.js';

/**
 * Vehicle events: per vehicle, by record time, alarms raised and cleared, ignition on and off, trips and
 * charging sessions; each exactly once whatever order, batching and repetition the records arrive in
 * (README.md beside this file).
 *
 * Pure and deterministic: `ingest` and `flush` read no clock and do no I/O. Each record type is its own
 * ordered stream (`streams.ts`, with its own watermark and window), so a CAN stream minutes behind the
 * GPS stream commits what it would in step. The records a call commits, of every stream, are handed in
 * time order (at one instant, types without a position first) to the detectors (`detectors/`, one module
 * a kind of event, each with its own slice of the state), after the track (`detectors/track.ts`) has
 * judged each fix.
 */

export { DEFAULT_DERIVE_OPTIONS, type ChargingSession, type Derived, type DeriveOptions, type DerivedEvent, type Stop, type Trip } from './detectors/context.js';
export { DERIVE_FIELDS, DERIVE_PICK, inputOf, type EventInput } from './inputs.js';

/** One vehicle's derivation state: its streams, by stream id, and each detector's slice. Kept in Redis as `wire.ts` writes it. */
export interface VehicleState {
  streams: Stream[];
  track: TrackState;
  soc: SocState;
  alarms: AlarmsState;
  ignition: IgnitionState;
  trips: TripsState;
  finishedTrips: FinishedTrips;
  charging: ChargingState;
  stops: StopsState;
  idle: IdleState;
  overspeed: OverspeedState;
  towing: TowingState;
  geofences: GeofencesState;
  socLow: SocLowState;
  batterySwap: BatterySwapState;
  drain: DrainState;
}

/** The slices of a state, each under its frozen id (`wire.ts` stores them so). */
export const SLICES = {
  track: TRACK,
  soc: SOC,
  alarms: ALARMS_SLICE,
  ignition: IGNITION_SLICE,
  trips: TRIPS_SLICE,
  finishedTrips: FINISHED_TRIPS_SLICE,
  charging: CHARGING_SLICE,
  stops: STOPS_SLICE,
  idle: IDLE_SLICE,
  overspeed: OVERSPEED_SLICE,
  towing: TOWING_SLICE,
  geofences: GEOFENCES_SLICE,
  socLow: SOC_LOW_SLICE,
  batterySwap: BATTERY_SWAP_SLICE,
  drain: DRAIN_SLICE,
} satisfies { [K in Exclude<keyof VehicleState, 'streams'>]: Slice<VehicleState[K]> };

export function newState(): VehicleState {
  const streams: Stream[] = [];
  for (const plan of STREAMS.values()) streams[plan.streamId] = newStream(plan.streamId);
  return {
    streams,
    track: SLICES.track.fresh(),
    soc: SLICES.soc.fresh(),
    alarms: SLICES.alarms.fresh(),
    ignition: SLICES.ignition.fresh(),
    trips: SLICES.trips.fresh(),
    finishedTrips: SLICES.finishedTrips.fresh(),
    charging: SLICES.charging.fresh(),
    stops: SLICES.stops.fresh(),
    idle: SLICES.idle.fresh(),
    overspeed: SLICES.overspeed.fresh(),
    towing: SLICES.towing.fresh(),
    geofences: SLICES.geofences.fresh(),
    socLow: SLICES.socLow.fresh(),
    batterySwap: SLICES.batterySwap.fresh(),
    drain: SLICES.drain.fresh(),
  };
}

/** Records a vehicle holds uncommitted, over its streams. */
export function pendingCount(s: VehicleState): number {
  let n = 0;
  for (const stream of s.streams) if (stream !== undefined) n += stream.pending.length;
  return n;
}

/**
 * The wall time since which a vehicle holds pending records nothing has been added to (the oldest of its
 * streams' last arrivals among those with pending records), or undefined when it holds none: a store
 * sweeps the vehicle with `flush` once that is idleMs ago.
 */
export function pendingSince(s: VehicleState): number | undefined {
  let since: number | undefined;
  const waiting = s.finishedTrips.length > 0;
  for (const stream of s.streams) {
    // A finished trip waiting for the soc stream keeps the vehicle swept, so it is told once that stream falls idle.
    if (stream === undefined || (stream.pending.length === 0 && !waiting) || stream.lastArrivalMs === -Infinity) continue;
    if (since === undefined || stream.lastArrivalMs < since) since = stream.lastArrivalMs;
  }
  return since;
}

/**
 * The records a call put in streams' pending buffers, or merged another into (the one stored at its
 * time is then replaced): each as its stream id and time, one after the other (numbers, not an object a
 * record). A store writes those alone. Listed again each time one merges into it.
 */
export type AddedRecords = number[];

/**
 * Adds one delivery of a vehicle's records (any order, any repetition, any types), then commits what each
 * stream's window has passed. `nowMs` (wall time) is remembered for `flush` and judges records ahead.
 */
export function ingest(
  vehicleno: string,
  s: VehicleState,
  inputs: readonly EventInput[],
  nowMs: number,
  opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS,
  /** Given, told the records this call put in pending buffers. */
  into?: AddedRecords,
): Derived {
  const ctx = contextOf(vehicleno, opts);
  for (const input of inputs) {
    const plan = STREAMS.get(input.type);
    // Times are integer epoch ms (validation makes them so); the store scores records by them exactly.
    if (plan === undefined || !Number.isSafeInteger(input.time)) continue;
    const r = recordOf(input, plan, ARRIVING);
    if (r === undefined) continue; // carries nothing derivation reads
    const taken = addRecord(s.streams[plan.streamId]!, r, nowMs, opts);
    if (taken === 'added' || taken === 'merged') into?.push(plan.streamId, r.time);
    else if (taken === 'duplicate') ctx.out.duplicates++;
    else {
      ctx.out.late++;
      alarmLateRecord(ctx, s.alarms, r, plan, s.soc.latest);
    }
  }
  commitDue(ctx, s, nowMs, false);
  return ctx.out;
}

/**
 * The record arriving, and the one being committed: each read into its object, reused (records are kept
 * as columns, pending.ts; no detector keeps a record).
 */
const ARRIVING: StreamRecord = emptyRecord(0, 0);
const COMMITTING: StreamRecord = emptyRecord(0, 0);

/** The call's context, reused (calls never nest): only its outputs are new. */
const CTX: Context = { vehicleno: '', opts: DEFAULT_DERIVE_OPTIONS, out: emptyDerived() };
function contextOf(vehicleno: string, opts: DeriveOptions): Context {
  CTX.vehicleno = vehicleno;
  CTX.opts = opts;
  CTX.out = emptyDerived();
  return CTX;
}

/** For a vehicle whose streams stopped sending: a stream nothing was added to for idleMs of wall time commits all it holds. */
export function flush(vehicleno: string, s: VehicleState, nowMs: number, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): Derived {
  const ctx = contextOf(vehicleno, opts);
  commitDue(ctx, s, nowMs, true);
  // A finished trip waiting for the soc stream waits no longer once that stream is idle with nothing pending.
  for (const plan of ORDER) {
    const stream = s.streams[plan.streamId]!;
    if (plan.soc >= 0 && stream.pending.length === 0 && nowMs - stream.lastArrivalMs >= opts.idleMs) tripSocIdle(ctx, s.finishedTrips, s.soc);
  }
  return ctx.out;
}

/** Per stream of ORDER, during a commit: how many records are due, and how many are done (reused: commits never nest). */
const DUE: number[] = [];
const DONE: number[] = [];

/**
 * Commits what every stream has due, all streams' records merged in time order; at one instant, in ORDER
 * (types without a position first, so a reading taken as ignition flips counts as at it).
 */
function commitDue(ctx: Context, s: VehicleState, nowMs: number, idle: boolean): void {
  let any = false;
  for (let k = 0; k < ORDER.length; k++) {
    const stream = s.streams[ORDER[k]!.streamId]!;
    const n = due(stream, nowMs, ctx.opts, idle);
    DUE[k] = n;
    DONE[k] = 0;
    if (n === 0) continue;
    any = true;
    ctx.out.forced += Math.max(0, stream.pending.length - ctx.opts.maxPending);
  }
  if (!any) return;
  for (;;) {
    let next = -1;
    let time = Infinity;
    for (let k = 0; k < ORDER.length; k++) {
      if (DONE[k]! >= DUE[k]!) continue;
      const t = s.streams[ORDER[k]!.streamId]!.pending.timeAt(DONE[k]!);
      if (t < time) {
        time = t;
        next = k;
      }
    }
    if (next < 0) break;
    const plan = ORDER[next]!;
    const stream = s.streams[plan.streamId]!;
    const r = stream.pending.read(DONE[next]!++, COMMITTING);
    committed(stream, r.time);
    apply(ctx, s, plan, r);
  }
  for (let k = 0; k < ORDER.length; k++) if (DUE[k]! > 0) dropCommitted(s.streams[ORDER[k]!.streamId]!, DUE[k]!);
}

/** Streams in the order their records go at one instant. */
const ORDER: readonly StreamPlan[] = [...STREAMS.values()].sort((a, b) => Number(a.lat >= 0) - Number(b.lat >= 0) || a.streamId - b.streamId);

/** The fixes one record confirmed (reused: apply is never re-entered). */
const STEPS: Step[] = [];

/** One committed record through the detectors that read its type's fields. */
function apply(ctx: Context, s: VehicleState, plan: StreamPlan, r: StreamRecord): void {
  if (plan.lat >= 0 || plan.ignition >= 0) {
    // Idling and overspeed before the trips: what a gap or an ignition-off ends counts in the open trip.
    idleGap(ctx, s.idle, s.trips, r.time);
    overspeedGap(ctx, s.overspeed, s.trips, r.time);
    tripGap(ctx, s.trips, s.finishedTrips, s.track, s.soc, r.time);
    const fix = fixOf(r, plan, s.track);
    const steps = STEPS;
    // Emptied by pop: `length = 0` on an array is a call into the runtime, each record.
    while (steps.length > 0) steps.pop();
    if (fix !== undefined) trackFix(s.track, fix, ctx.opts, steps);
    geofencesRecord(ctx, s.geofences, steps);
    idleRecord(ctx, s.idle, s.trips, s.track, r, plan, steps);
    overspeedRecord(ctx, s.overspeed, s.trips, r, plan, steps);
    tripRecord(ctx, s.trips, s.finishedTrips, s.track, s.soc, r, plan, steps);
    stopsRecord(ctx, s.stops, r, plan, steps);
    // After the trips: an ignition-off fix is confirmed by the trip's end, and is where the vehicle parked.
    towingRecord(ctx, s.towing, s.track, r, plan, steps);
    ignitionRecord(ctx, s.ignition, r, plan);
  }
  const charges = plan.load >= 0 || plan.current >= 0;
  if (charges) chargingGap(ctx, s.charging, r.time, s.soc);
  if (plan.soc >= 0) {
    const before = s.soc.latest;
    noteSoc(s.soc, r, plan);
    socLowRecord(ctx, s.socLow, r, plan);
    if (!Object.is(before, s.soc.latest)) chargingSoc(s.charging, s.soc.latest);
    tripSocProgress(ctx, s.trips, s.finishedTrips, s.soc);
  }
  if (plan.bmsId >= 0 || plan.batteryId >= 0) batterySwapRecord(ctx, s.batterySwap, r, plan);
  if (plan.alarms.length > 0) alarmRecord(ctx, s.alarms, r, plan, s.soc.latest);
  if (charges) chargingRecord(ctx, s.charging, r, plan, s.soc, s.track);
  // After charging: a record that starts a session is not a drain.
  if (plan.soc >= 0 && plan.lat < 0) drainRecord(ctx, s.drain, r, plan, s.ignition, s.track, s.charging);
}

// ---- stable ids ---------------------------------------------------------------------------------

const id = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** An event's id (a webhook-id): the same for the same transition however often it is derived or delivered. */
export function eventId(e: Pick<DerivedEvent, 'vehicleno' | 'event' | 'time' | 'tags'>): string {
  // A geofence's events are one a geofence (a vehicle enters two at one fix); the rest as ever.
  return id(`${e.vehicleno}\n${e.event}\n${e.time}${e.tags?.geofence === undefined ? '' : `\n${e.tags.geofence}`}`);
}

export function tripId(t: Pick<Trip, 'vehicleno' | 'start'>): string {
  return id(`${t.vehicleno}\ntrip\n${t.start}`);
}

export function sessionId(c: Pick<ChargingSession, 'vehicleno' | 'start'>): string {
  return id(`${c.vehicleno}\ncharging\n${c.start}`);
}

export function stopId(p: Pick<Stop, 'vehicleno' | 'start'>): string {
  return id(`${p.vehicleno}\nstop\n${p.start}`);
}
