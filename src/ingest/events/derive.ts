import { createHash } from 'node:crypto';
import { emptyRecord, SOC_STREAM, STREAMS, recordOf, TRACK_STREAM, valueAt, type EventInput, type StreamPlan, type StreamRecord } from './inputs.js';
import { addRecord, committed, dropCommitted, due, newStream, type Stream } from './streams.js';
import { DETECTORS, slicesOf } from './kinds.js';
import { PHASES, runOrder, type Detector, type Phase } from './detectors/detector.js';
import { emptyDerived, DEFAULT_DERIVE_OPTIONS, type ChargingSession, type Context, type Derived, type DeriveOptions, type DerivedEvent, type PackLife, type Slice, type Stop, type Trip } from './detectors/context.js';
import { motionChanged, motionCovers, motionSettledThrough, movingAt, type Step } from './detectors/track.js';
import { socChanged, socCovers } from './detectors/soc.js';
import { ignitionAt, ignitionChanged, ignitionCovers } from './detectors/ignition.js';
import { tripSocIdle } from './detectors/trips.js';
import { chargingGap, chargingKnownAt, chargingNote, chargingRecord } from './detectors/charging.js';
import { awaitPassed, correctFrom, correctionsBegun, notePremature } from './corrections/state.js';
import { drainReading } from './detectors/drain.js';

/**
 * Vehicle events: per vehicle, by record time, each exactly once whatever order, batching and repetition
 * the records arrive in. Which kinds there are, and what each reads and derives: the detectors' table in
 * README.md beside this file.
 *
 * Pure and deterministic: `ingest` and `flush` read no clock and do no I/O. Each record type is its own
 * ordered stream (`streams.ts`, with its own watermark and window), so a CAN stream minutes behind the
 * GPS stream commits what it would in step. The records a call commits, of every stream, are handed in
 * time order (at one instant, types without a position first) to the detectors (`detectors/`, one module
 * a kind of event, each with its own slice of the state), after the track (`detectors/track.ts`) has
 * judged each fix.
 */

export { DEFAULT_DERIVE_OPTIONS, type AddedStreamTimePairs, type ChargingSession, type Derived, type DeriveOptions, type DerivedEvent, type PackLife, type Stop, type Trip } from './detectors/context.js';
export { DERIVE_FIELDS, DERIVE_PICK, inputOf, type EventInput } from './inputs.js';

type Detectors = (typeof DETECTORS)[number];

/**
 * One vehicle's derivation state: its streams, by stream id, and each detector's slice under its key
 * (derived from `DETECTORS`, kinds.ts). Kept in Redis as `wire.ts` writes it.
 */
export type VehicleState = { streams: Stream[] } & { [D in Detectors as D['key']]: D extends Detector<string, infer S> ? S : never };

/** The slices of a state by key, each under its frozen id (`wire.ts` stores them so), in the order stored. */
export const SLICES = slicesOf(DETECTORS) as { [K in Exclude<keyof VehicleState, 'streams'>]: Slice<VehicleState[K]> };

/**
 * A fresh state, built by one object literal compiled from the list (as `flatSlice` compiles its keys): a
 * state filled key by key in a loop keeps most slices out of the object (measured: derivation 10 % slower,
 * every slice read one indirection further). The keys are identifiers from the code, never input.
 */
const freshState = new Function('d', 'streams', `return { streams, ${DETECTORS.map((x, i) => { if (!/^[A-Za-z_$][\w$]*$/.test(x.key)) throw new Error(`vehicle events: detector key ${x.key} is not an identifier`); return `${x.key}: d[${i}].slice.fresh()`; }).join(', ')} };`) as (d: typeof DETECTORS, streams: Stream[]) => VehicleState;

export function newState(): VehicleState {
  const streams: Stream[] = [];
  for (const plan of STREAMS.values()) streams[plan.streamId] = newStream(plan.streamId);
  return freshState(DETECTORS, streams);
}

/** Records a vehicle holds uncommitted, over its streams. */
export function pendingCount(s: VehicleState): number {
  let n = 0;
  for (const stream of s.streams) if (stream !== undefined) n += stream.pending.length;
  return n;
}

/**
 * When a store should next sweep the vehicle with `flush`, less streamQuietMs (a store sweeps it once this is
 * streamQuietMs ago): pending records wait for their stream to
 * fall idle (streamQuietMs after its last arrival), and so do finished trips for the soc's stream; records held
 * for the track wait for it at most EVENTS_MAX_SKEW after it last sent. Infinity: nothing waits.
 */
export function pendingSince(s: VehicleState, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): number {
  let since = Infinity;
  const track = s.streams[TRACK_STREAM]!;
  for (const stream of s.streams) {
    if (stream === undefined) continue;
    if (stream.pending.length > 0 && stream.lastArrivalMs !== -Infinity && stream.lastArrivalMs < since) since = stream.lastArrivalMs;
    if (stream.held.length > 0) since = Math.min(since, track.lastArrivalMs + opts.maxSkewMs - opts.streamQuietMs);
  }
  if (s.drain.waiting.length > 0) since = Math.min(since, track.lastArrivalMs + opts.maxSkewMs - opts.streamQuietMs);
  if (s.finishedTrips.length > 0) since = Math.min(since, s.streams[SOC_STREAM]!.lastArrivalMs);
  // Never: nothing waits for wall time. A stream that never sent: at once.
  return since === -Infinity ? 0 : since;
}

/**
 * The records a call added, as it goes (reused: calls never nest); what it derived gets a copy of its
 * size. (Measured, test/bench/eventsAb.ts: a list made afresh each call, grown record by record, cost
 * derivation 1 to 4 %.)
 */
const ADDED: number[] = [];

/**
 * Adds one delivery of a vehicle's records (any order, any repetition, any types), then commits what each
 * stream's window has passed. `nowMs` (wall time) is remembered for `flush` and judges records ahead.
 * What it derived lists the records it put in pending buffers (`added`), for a store to write.
 */
export function ingest(vehicleno: string, s: VehicleState, inputs: readonly EventInput[], nowMs: number, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): Derived {
  const ctx = begin(vehicleno, s, opts);
  const added = ADDED;
  while (added.length > 0) added.pop(); // (`length = 0` is a call into the runtime)
  for (const input of inputs) {
    const plan = STREAMS.get(input.type);
    // Times are integer epoch ms (validation makes them so); the store scores records by them exactly.
    if (plan === undefined || !Number.isSafeInteger(input.time)) continue;
    const r = recordOf(input, plan, ARRIVING, opts.temperatureSentinels);
    if (r === undefined) continue; // carries nothing derivation reads
    const taken = addRecord(s.streams[plan.streamId]!, r, nowMs, opts);
    if (taken === 'added' || taken === 'merged') added.push(plan.streamId, r.time);
    else if (taken === 'duplicate') ctx.out.duplicates++;
    else late(ctx, s, plan, r.time);
  }
  commitDue(ctx, s, nowMs, false);
  const d = end(ctx, s);
  if (added.length > 0) d.added = added.slice();
  return d;
}

/**
 * A late record: what was told is corrected from it (corrections/), unless it is older than the horizon.
 * (Out of `ingest`'s loop, which stays small enough for the engine to inline what it calls there.)
 */
function late(ctx: Context, s: VehicleState, plan: StreamPlan, time: number): void {
  ctx.out.late++;
  if (time > Math.max(s.late.firstCut, cutBefore(ctx, s) - ctx.opts.horizonMs)) correctFrom(s.late, time);
  else {
    ctx.out.tooLate++;
    ctx.out.tooLateFirst ??= { type: plan.name, time };
  }
}

/** The cut as the call began (read at its first late record: records added do not move it). */
function cutBefore(ctx: Context, s: VehicleState): number {
  if (ctx.cutBefore !== ctx.cutBefore) ctx.cutBefore = cutOf(s);
  return ctx.cutBefore;
}

/**
 * The record arriving, the one being committed, and one a waiting stream releases: each read into its
 * object, reused (records are kept as columns, pending.ts; no detector keeps a record).
 */
const ARRIVING: StreamRecord = emptyRecord(0, 0);
const COMMITTING: StreamRecord = emptyRecord(0, 0);
const RELEASING: StreamRecord = emptyRecord(0, 0);

/** The call's context, reused (calls never nest): only its outputs are new. */
const CTX: Context = { vehicleno: '', opts: DEFAULT_DERIVE_OPTIONS, out: emptyDerived(), late: SLICES.late.fresh(), cutBefore: NaN, previousTime: -Infinity };

/**
 * A call begins: its context, and, for a state whose corrections have not begun (a new vehicle, or one a
 * release without them wrote last), their beginning: the state as it is is epoch 0's checkpoint.
 */
function begin(vehicleno: string, s: VehicleState, opts: DeriveOptions): Context {
  CTX.vehicleno = vehicleno;
  CTX.opts = opts;
  CTX.out = emptyDerived();
  CTX.late = s.late;
  CTX.cutBefore = NaN;
  const waiting = s.streams[SOC_STREAM]!;
  waiting.heldNew = 0;
  waiting.heldTaken = false;
  if (!correctionsBegun(s.late)) beginCorrections(CTX, s, opts);
  return CTX;
}

/** A state whose corrections have not begun: they begin with it as it is (epoch 0, `begin`). */
function beginCorrections(ctx: Context, s: VehicleState, opts: DeriveOptions): void {
  const cut = cutOf(s);
  s.late.epoch = 0;
  s.late.firstCut = cut;
  s.late.bucket = Math.floor(cut / opts.checkpointIntervalMs);
  // Records a release without waiting streams committed were taken by every detector.
  s.late.chargingThrough = s.streams[SOC_STREAM]!.watermark;
  ctx.out.reset = true;
}

/** The last record time a vehicle's streams committed, of any stream (-Infinity: none): a checkpoint's cut. */
export function cutOf(s: VehicleState): number {
  let cut = -Infinity;
  for (let k = 0; k < ORDER.length; k++) {
    const w = s.streams[ORDER[k]!.streamId]!.watermark;
    if (w > cut) cut = w;
  }
  return cut;
}

/**
 * A call ends: premature reads the other stream has now passed are checked (a correction is due where
 * they took it wrongly), and a checkpoint is taken when the vehicle's records crossed into a new
 * checkpoint interval. The call's outputs are told in the epoch before it.
 */
function end(ctx: Context, s: VehicleState): Derived {
  checkPassed(ctx, s);
  ctx.out.epoch = s.late.epoch;
  const cut = cutOf(s);
  const bucket = Math.floor(cut / ctx.opts.checkpointIntervalMs);
  if (cut > -Infinity && bucket > s.late.bucket) {
    // A vehicle's first records: its epoch 0 checkpoint (before any) covers them; the interval starts here.
    if (s.late.bucket > -Infinity) {
      s.late.epoch++;
      ctx.out.checkpoint = { epoch: s.late.epoch, cut };
    }
    s.late.bucket = bucket;
  }
  return ctx.out;
}

/**
 * Premature reads the other stream has now passed are checked: a correction is due where they took it
 * wrongly. At a call's end, and before the waiting detectors stop waiting for a stream (`release` when
 * `final`, `tripSocIdle`): what they take then may lie past the stream's last record, where it never
 * passes, and the reads noted before would wait with them for ever.
 */
function checkPassed(ctx: Context, s: VehicleState): void {
  // (Most calls have nothing read early: no check, no closure made.)
  if (s.late.track.from !== Infinity) awaitPassed(s.late, 'track', settledThrough(ctx, s), (from, to, assumed) => assumedHeld(s, from, to, assumed));
  if (s.late.soc.from !== Infinity) awaitPassed(s.late, 'soc', s.soc.through, (_, to, reached) => socCovers(s.soc, reached) && !socChanged(s.soc, reached, to));
}

/** For a vehicle whose streams stopped sending: a stream nothing was added to for streamQuietMs of wall time commits all it holds. */
export function flush(vehicleno: string, s: VehicleState, nowMs: number, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): Derived {
  const ctx = begin(vehicleno, s, opts);
  commitDue(ctx, s, nowMs, true);
  // A finished trip waiting for the soc's stream waits no longer once that stream is idle with nothing pending.
  const socs = s.streams[SOC_STREAM]!;
  if (socs.pending.length === 0 && nowMs - socs.lastArrivalMs >= opts.streamQuietMs && s.finishedTrips.length > 0) {
    checkPassed(ctx, s);
    tripSocIdle(ctx, s.finishedTrips, s.soc);
  }
  return end(ctx, s);
}

/** Per stream of ORDER, during a commit: how many records are due, and how many are done (reused: commits never nest). */
const DUE: number[] = [];
const DONE: number[] = [];

/**
 * Commits what every stream has due, all streams' records merged in time order; at one instant, in ORDER
 * (types without a position first, so a reading taken as ignition flips counts as at it). Then records
 * held for the track that the wall clock or their own stream's lead lets go (`release`).
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
  while (any) {
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
    ctx.previousTime = stream.watermark;
    committed(stream, r.time);
    apply(ctx, s, plan, r);
  }
  if (any) for (let k = 0; k < ORDER.length; k++) if (DUE[k]! > 0) dropCommitted(s.streams[ORDER[k]!.streamId]!, DUE[k]!);
  if (waiting(s)) {
    checkPassed(ctx, s);
    release(ctx, s, nowMs, true);
  }
}

/** Whether records wait for the track (for charging, or the drain). */
const waiting = (s: VehicleState): boolean => s.streams[SOC_STREAM]!.held.length > 0 || s.drain.waiting.length > 0;

/** Streams in the order their records go at one instant. */
const ORDER: readonly StreamPlan[] = [...STREAMS.values()].sort((a, b) => Number(a.latAt >= 0) - Number(b.latAt >= 0) || a.streamId - b.streamId);
/** Streams some of whose detectors wait for the track (StreamPlan.waits). */
const WAITING: readonly StreamPlan[] = ORDER.filter((p) => p.waits);

/** The fixes one record confirmed (reused: apply is never re-entered). */
const STEPS: Step[] = [];

/** A phase's hooks, as one function: each hook a call of its own (`compilePhases`). */
type PhaseRun = (ctx: Context, s: VehicleState, r: StreamRecord, plan: StreamPlan, steps: Step[]) => void;

/**
 * The detectors' hooks of each phase (detector.ts `PHASES`), in the order their declarations derive
 * (`runOrder`), compiled into one function a phase: a loop over the hooks would call every one from one
 * place, which the engine then inlines none of. The hooks come from the declarations, never from input.
 */
export function compilePhases(list: readonly Detector[]): Record<Phase, PhaseRun> {
  const order = runOrder(list);
  const args: Record<Phase, string> = { gap: 'r.time', position: 'r, plan, steps', soc: 'r, plan', battery: 'r, plan', pack: 'r, plan', alarms: 'r, plan' };
  const run = {} as Record<Phase, PhaseRun>;
  for (const phase of PHASES) {
    const hooks = order.flatMap((d) => (d.on[phase] === undefined ? [] : [d.on[phase]]));
    const calls = hooks.map((_, i) => `h${i}(ctx, s, ${args[phase]});`).join('\n');
    run[phase] = new Function(...hooks.map((_, i) => `h${i}`), `return function ${phase}(ctx, s, r, plan, steps) {\n${calls}\n};`)(...hooks) as PhaseRun;
  }
  return run;
}

const PHASE = compilePhases(DETECTORS);

/** One committed record through the detectors' phases that its fields call for (those that wait for the track, once it has passed it). */
function apply(ctx: Context, s: VehicleState, plan: StreamPlan, r: StreamRecord): void {
  if (plan.latAt >= 0 || plan.ignitionAt >= 0) {
    PHASE.gap(ctx, s, r, plan, STEPS);
    PHASE.position(ctx, s, r, plan, STEPS);
    // The track moved on: what waited for it to pass may go.
    if (plan.streamId === TRACK_STREAM && waiting(s)) release(ctx, s, 0, false);
  }
  if (plan.socAt >= 0) PHASE.soc(ctx, s, r, plan, STEPS);
  if (plan.bmsIdAt >= 0 || plan.batteryIdAt >= 0) PHASE.battery(ctx, s, r, plan, STEPS);
  if (plan.pack !== undefined || plan.capacityAt >= 0) PHASE.pack(ctx, s, r, plan, STEPS);
  if (plan.alarms.length > 0) PHASE.alarms(ctx, s, r, plan, STEPS);
  if (plan.waits) waits(ctx, s, plan, r);
}

/** A committed record of a waiting stream, to the detectors that wait for the track ("Waits", below). */
function waits(ctx: Context, s: VehicleState, plan: StreamPlan, r: StreamRecord): void {
  const settled = settledThrough(ctx, s);
  chargingWait(ctx, s, plan, r, settled);
  const soc = valueAt(r, plan.socAt);
  if (soc === soc) drainWait(ctx, s, r.time, soc, settled);
}

/**
 * **Waits.** Charging reads whether the vehicle moved at a CAN record's time (for a record charging by its
 * current alone), and the drain whether it stood parked (for every soc): both the track's, final only once
 * the GPS stream has passed that time (a fix it still holds unconfirmed may yet change it,
 * `motionSettledThrough`). So each takes such a record once the track has passed it, and the records after
 * it in turn, whatever the two streams' lag: the same records in the same order as in-order delivery.
 * Charging's wait in `Stream.held` (whole records, stored beside the pending ones: a wait may be minutes of
 * records); the drain's in its slice (a time and a soc each, at most DRAIN_WAITING: a drain is a matter of
 * hours, and past that the oldest is taken as the track is then). A record waits at most EVENTS_MAX_SKEW (of
 * its own stream's time, or of wall time with nothing from the GPS stream) and not at all for a vehicle that
 * never sent a GPS record; taken so, what it took the track to be is noted, checked once the track passes
 * there, and corrected if it was otherwise. Charging goes first; the drain reads it by time
 * (`chargingUnderWayAt`), as it may be ahead.
 */
const has = (r: StreamRecord, i: number): boolean => i >= 0 && valueAt(r, i) === valueAt(r, i);

/** Whether charging takes a record at all, and whether it reads the track for it (a current without load_status). */
const chargingTakes = (plan: StreamPlan, r: StreamRecord): boolean => has(r, plan.loadAt) || has(r, plan.currentAt) || has(r, plan.socAt);
const chargingReadsTrack = (plan: StreamPlan, r: StreamRecord): boolean => !has(r, plan.loadAt) && has(r, plan.currentAt);

/**
 * A record that a waiting detector may take at `time` before the track has: may it go now (the track gone
 * quiet, absent, or `lead` of its own stream past it), and if not, must it wait?
 */
function mayGo(ctx: Context, s: VehicleState, time: number, lead: number, nowMs: number, final: boolean): 'settled' | 'premature' | 'wait' {
  if (time <= settledThrough(ctx, s)) return 'settled';
  if (!final) return 'wait';
  const track = s.streams[TRACK_STREAM]!;
  const absent = track.newest === -Infinity;
  const silent = track.pending.length === 0 && nowMs - track.lastArrivalMs >= ctx.opts.maxSkewMs;
  return absent || silent || lead - time > ctx.opts.maxSkewMs ? 'premature' : 'wait';
}

/** A committed record of a waiting stream, to charging: taken now (the track `settled` through its time), or queued. */
function chargingWait(ctx: Context, s: VehicleState, plan: StreamPlan, r: StreamRecord, settled: number): void {
  if (!chargingTakes(plan, r)) return;
  const stream = s.streams[plan.streamId]!;
  if (stream.held.length === 0 && (r.time <= settled || !chargingReadsTrack(plan, r))) return chargingTake(ctx, s, plan, r, false);
  stream.held.insert(stream.held.length, r);
  stream.heldNew++;
}

function chargingTake(ctx: Context, s: VehicleState, plan: StreamPlan, r: StreamRecord, premature: boolean): void {
  s.late.chargingThrough = r.time;
  if (chargingReadsTrack(plan, r)) readTrack(s, r.time, premature);
  const charges = has(r, plan.loadAt) || has(r, plan.currentAt);
  if (charges) chargingGap(ctx, s.charging, r.time);
  chargingNote(s.charging, r, plan);
  if (charges) chargingRecord(ctx, s.charging, r, plan, s.track);
}

/** A soc of a waiting stream, to the drain: taken now (the track `settled` through its time), or queued (the oldest taken first when the queue is full). */
function drainWait(ctx: Context, s: VehicleState, time: number, soc: number, settled: number): void {
  const q = s.drain.waiting;
  if (q.length === 0 && time <= settled) return drainTake(ctx, s, time, soc, false);
  if (q.full) {
    const t = q.at(0, 0);
    const v = q.at(0, 1);
    q.dropOldest();
    drainTake(ctx, s, t, v, true);
  }
  q.push(time, soc);
}

function drainTake(ctx: Context, s: VehicleState, time: number, soc: number, premature: boolean): void {
  readTrack(s, time, premature);
  // Charging ran behind it (a full queue let it go early), or its history no longer reaches back: corrected.
  const charging = s.streams[SOC_STREAM]!.held;
  if ((charging.length > 0 && charging.timeAt(0) <= time) || !chargingKnownAt(s.charging, time)) correctFrom(s.late, time);
  drainReading(ctx, s.drain, time, soc, s.ignition, s.track, s.charging);
}

/** A waiting detector reads the track at `time`: before it passed there (noted, to check), or where its history no longer reaches (corrected). */
function readTrack(s: VehicleState, time: number, premature: boolean): void {
  if (premature) notePremature(s.late, 'track', time, time, assumption(s, time));
  else if (!motionCovers(s.track, time) || !ignitionCovers(s.ignition, time)) correctFrom(s.late, time);
}

/** What the waiting detectors hold that the track (or, `final`, the wall clock or the record's own stream's lead) now lets go: charging's first. */
function release(ctx: Context, s: VehicleState, nowMs: number, final: boolean): void {
  for (const plan of WAITING) {
    const stream = s.streams[plan.streamId]!;
    const held = stream.held;
    while (held.length > 0) {
      const r = held.read(0, RELEASING);
      const go = chargingReadsTrack(plan, r) ? mayGo(ctx, s, r.time, stream.newest, nowMs, final) : 'settled';
      if (go === 'wait') break;
      held.dropFirst(1);
      stream.heldTaken = true;
      chargingTake(ctx, s, plan, r, go === 'premature');
    }
    if (stream.heldNew > held.length) stream.heldNew = held.length;
    const q = s.drain.waiting;
    while (q.length > 0) {
      const t = q.at(0, 0);
      const go = mayGo(ctx, s, t, stream.newest, nowMs, final);
      if (go === 'wait') break;
      const v = q.at(0, 1);
      q.dropOldest();
      drainTake(ctx, s, t, v, go === 'premature');
    }
  }
}

/**
 * A record a checkpoint's state had committed, given again (a replay, corrections/replay.ts): queued for
 * charging if it had not taken it yet (the drain's waiting readings are in its slice, kept with the state).
 */
export function holdAgain(s: VehicleState, input: EventInput, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): void {
  const plan = STREAMS.get(input.type);
  if (plan === undefined || !plan.waits) return;
  const stream = s.streams[plan.streamId]!;
  if (input.time > stream.watermark || input.time <= s.late.chargingThrough) return;
  const r = recordOf(input, plan, ARRIVING, opts.temperatureSentinels);
  if (r !== undefined && chargingTakes(plan, r)) stream.held.insert(stream.held.length, r);
}

/** Where a replay from state `s` begins each stream's records: after its watermark, or for a waiting stream after what charging took. */
export function replayAfter(s: VehicleState): Map<number, number> {
  const after = new Map<number, number>();
  for (const plan of STREAMS.values()) {
    let t = s.streams[plan.streamId]!.watermark;
    if (plan.waits) t = Math.min(t, s.late.chargingThrough);
    after.set(plan.streamId, t);
  }
  return after;
}

/** The time through which the track is final (its stream committed, and no fix it holds may still change its motion there). */
function settledThrough(ctx: Context, s: VehicleState): number {
  return motionSettledThrough(s.track, s.streams[TRACK_STREAM]!.watermark, ctx.opts);
}

/** What a premature read took the track to be at `t`: moving (bit 0) and the ignition (0 off, 1 on, 2 not known) above it. */
function assumption(s: VehicleState, t: number): number {
  return (movingAt(s.track, t) ? 1 : 0) | ((ignitionAt(s.ignition, t) ?? 2) << 1);
}

/** Whether the track, now passed, was what premature reads from `from` to `to` took it to be. */
function assumedHeld(s: VehicleState, from: number, to: number, assumed: number): boolean {
  return (
    motionCovers(s.track, from) &&
    ignitionCovers(s.ignition, from) &&
    assumption(s, from) === assumed &&
    !motionChanged(s.track, from, to) &&
    !ignitionChanged(s.ignition, from, to)
  );
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

export function chargingSessionId(c: Pick<ChargingSession, 'vehicleno' | 'start'>): string {
  return id(`${c.vehicleno}\ncharging\n${c.start}`);
}

export function stopId(p: Pick<Stop, 'vehicleno' | 'start'>): string {
  return id(`${p.vehicleno}\nstop\n${p.start}`);
}

/** A pack_life row's id: a vehicle holds one pack at a time, so its start names it (`vehicleno\npack_life\nstart`). */
export function packLifeId(p: Pick<PackLife, 'vehicleno' | 'start'>): string {
  return id(`${p.vehicleno}\npack_life\n${p.start}`);
}
