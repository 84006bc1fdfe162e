import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import type { WrittenRecord } from '../../telemetry/record.js';
import { cutOf, flush, ingest, pendingSince, type AddedStreamTimePairs, type Derived, type DeriveOptions, type EventInput, type VehicleState } from './derive.js';
import { emptyRecord, STREAM_BY_ID, type StreamPlan } from './inputs.js';
import { heldSetId, pendingMax, prepareCommitted, restore, writeCheckpoint, writeCommitted, writePending, writePendingAt, writePrepared, type StoredPending } from './wire.js';
import { toldField, toldLine, toldOf } from './corrections/ledger.js';
import { chooseCheckpoint, correction, packCheckpoint, readCorrections, recordsFor, replayFrom, replayUntil, requestField, type VehicleCorrections } from './corrections/correct.js';
import { partitionOf } from '../queue/keys.js';
import type { RecordSource } from './corrections/records.js';
import { outputsOf, type OutboxEntry } from './outbox.js';
import { SerialByKey } from '../worker/serialByKey.js';
import { readCommit, type Read } from '../../formats/commit.js';

/**
 * Per-vehicle derivation state in Redis, beside the vehicle's partition (its keys carry the partition's
 * hash tag, so a Redis Cluster keeps them on the queue's master), and the outbox of what it derived.
 *
 * A state is kept in parts (wire.ts): the committed part, about 2 KB in a hash (`wire.test.ts` bounds
 * it), rewritten by each job; and the records still pending, a sorted set per vehicle and stream, each
 * record written once when it arrives (again only when a record of the same instant merges into it)
 * and removed once committed. A job's changes and what they derived are written in one script (`commit`), together or
 * not at all, and only if no other job changed those vehicles meanwhile (each committed part carries a
 * version; a stale one derives the job again on the fresh state). It runs after InfluxDB confirmed the
 * job's points. So a worker killed before it committed leaves nothing (the retried job derives again),
 * one killed after leaves everything (the retried job's records are duplicates, which derive nothing):
 * each transition is in the outbox once.
 */

export interface PartitionKeys {
  /** Hash: vehicleno → `<version> <committed part>`. */
  state: string;
  /** Stream of derived outputs (`outbox.ts`). */
  outbox: string;
  /** Sorted set: vehicles with records still pending, by when they are next swept, less the idle time (`pendingSince`). */
  pending: string;
  /** Sorted set: vehicles with a correction due, by when (`corrections/`). */
  corrections: string;
  /** Sorted set of one vehicle's pending records of one stream (or, at `HELD` above its id, its held records), by time. */
  records(vehicleno: string, streamId: number): string;
  /** Hash of one vehicle's checkpoints and ledger (`corrections/`). */
  late(vehicleno: string): string;
}

/**
 * A vehicle's record sets, in the order the commit lists them (its keys, and its part of the argument):
 * each stream's pending records by stream id, then each waiting stream's held records.
 */
export interface RecordSet {
  plan: StreamPlan;
  /** The set's id: the stream's, or its held records' (`heldSetId`). */
  id: number;
  /** Its records are held for charging (else the stream's pending records). */
  held: boolean;
}
const STREAM_ORDER: readonly StreamPlan[] = [...STREAM_BY_ID.values()].sort((a, b) => a.streamId - b.streamId);
export const RECORD_SETS: readonly RecordSet[] = [
  ...STREAM_ORDER.map((plan) => ({ plan, id: plan.streamId, held: false })),
  ...STREAM_ORDER.filter((p) => p.waits).map((plan) => ({ plan, id: heldSetId(plan.streamId), held: true })),
];

/**
 * The commit script (`src/redis/scripts/events-commit.lua`, whose header lays out its KEYS and ARGV),
 * given everything in three arguments (`CommitArgs`): ioredis spends about half a microsecond on each
 * argument of a command, and a bulk job's 500 vehicles made thousands of them. Numbers go as 8-byte
 * doubles, so no number is printed by the worker (Redis prints a Lua number to a command exactly, as
 * `%.17g`). The plates and versions apart from the rest, so the worker never copies the two into one.
 */
interface WithCommit {
  telematicsEventsCommitV4(numKeys: number, ...keysAndArgs: Array<string | Buffer>): Promise<string>;
  telematicsEventsCorrect(numKeys: number, ...keysAndArgs: Array<string | Buffer>): Promise<string>;
}

/**
 * Buffers of finished commits, kept for the next: a bulk job's commit is hundreds of kilobytes, and a
 * fresh one each job costs its pages' first touch and the garbage collector's work. A few at most (commits
 * of several partitions run at once), none larger than MAX_KEPT.
 */
const freeBuffers: Buffer[] = [];
const MAX_FREE = 4;
const MAX_KEPT = 8 << 20;

function takeBuffer(size: number): Buffer {
  for (let i = 0; i < freeBuffers.length; i++) {
    if (freeBuffers[i]!.length >= size) return freeBuffers.splice(i, 1)[0]!;
  }
  return Buffer.allocUnsafe(size);
}

function giveBuffer(b: Buffer): void {
  if (freeBuffers.length < MAX_FREE && b.length <= MAX_KEPT) freeBuffers.push(b);
}

/** A growing buffer of the commit's items. */
class Packed {
  buf: Buffer;
  len = 0;

  constructor(size: number) {
    this.buf = takeBuffer(size);
  }

  room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  count(n: number): void {
    this.room(4);
    this.buf.writeUInt32BE(n, this.len);
    this.len += 4;
  }

  number(x: number | undefined): void {
    this.room(8);
    this.buf.writeDoubleBE(x ?? NaN, this.len);
    this.len += 8;
  }

  /** Text, as UTF-8 (a plate, a version, an outbox entry). */
  text(x: string): void {
    this.room(4 + x.length);
    const b = this.buf;
    let o = this.len + 4;
    // ASCII (plates and versions are) byte by byte: Buffer.write's encoding layers cost more than the copy.
    for (let i = 0; i < x.length; i++) {
      const c = x.charCodeAt(i);
      if (c >= 0x80) {
        const n = Buffer.byteLength(x);
        this.room(4 + n);
        this.buf.writeUInt32BE(n, this.len);
        this.len += 4 + this.buf.write(x, this.len + 4, 'utf8');
        return;
      }
      b[o++] = c;
    }
    b.writeUInt32BE(x.length, this.len);
    this.len = o;
  }

  /** Bytes a writer put after the length's place (room for them made first), up to `end`. */
  wrote(end: number): void {
    this.buf.writeUInt32BE(end - this.len - 4, this.len);
    this.len = end;
  }
}

/** The records a vehicle's derivation added, a vehicle at a time (`addedFor`). */
const ADDED: AddedStreamTimePairs = [];

/** The places of a vehicle's added records in a stream, and the record being written (reused: commits are written one at a time). */
const PLACES: number[] = [];
const WRITING = emptyRecord(0, 0);

/** One commit as the script reads it: every vehicle's plate and version, then every vehicle's writes, then the outbox entries. */
export class CommitArgs {
  /** The count, then plates and versions. */
  private readonly head: Packed;
  private readonly body: Packed;
  private vehicles = 0;
  /** The vehicles whose corrections this commit writes to, with what it writes. */
  private readonly lates: Array<{ vehicle: number; vehicleno: string; d: Derived; state: Buffer | undefined; genesis: Buffer | undefined; firstCut: number; correctFrom: number }> = [];

  /** Sized for `vehicles` with full rings and a few pending records each, so a commit seldom grows it. */
  constructor(vehicles: number) {
    this.head = new Packed(4 + vehicles * 40);
    this.head.count(0);
    this.body = new Packed(1_024 + vehicles * 1_400);
  }

  /**
   * One vehicle after its derivation: its plate, the version its state was read at (0: none), its new
   * committed part, when it is next swept (`pendingSince`), and for each record set its watermark and the
   * records added (of `added` still pending, to replace where one merged into a stored one; held records
   * the call added); then, when the call emitted anything, took a checkpoint, began its corrections afresh or
   * left one due, what its corrections keep (`late`).
   */
  vehicle(vehicleno: string, version: number, state: VehicleState, added: Readonly<AddedStreamTimePairs>, d: Derived, opts: DeriveOptions, genesis?: Buffer): void {
    const { head, body } = this;
    head.text(vehicleno);
    head.text(version === 0 ? '' : String(version));
    const prefix = `${version + 1} `;
    body.room(4 + prepareCommitted(state, prefix));
    body.wrote(writePrepared(body.buf, body.len + 4));
    const since = pendingSince(state, opts);
    body.number(since === Infinity ? undefined : since);
    for (const set of RECORD_SETS) {
      const plan = set.plan;
      const stream = state.streams[plan.streamId]!;
      if (set.held) {
        // Held records leave from the front as charging takes them (removed only when some did); the call's own are the last.
        const held = stream.held;
        const added = stream.heldNew;
        const through = stream.heldTaken ? state.late.chargingThrough : undefined;
        body.number(through === undefined || through === -Infinity ? undefined : through);
        body.count(0);
        body.count(added);
        for (let at = held.length - added; at < held.length; at++) {
          body.number(held.timeAt(at));
          body.room(4 + pendingMax(plan));
          body.wrote(writePendingAt(plan, held.read(at, WRITING), body.buf, body.len + 4));
        }
        continue;
      }
      const pending = stream.pending;
      body.number(stream.watermark === -Infinity ? undefined : stream.watermark);
      // The added records still pending, each once (a record merged into is listed again), by their place.
      const places = PLACES;
      while (places.length > 0) places.pop(); // (`length = 0` is a call into the runtime)
      let last = -1;
      for (let k = 0; k < added.length; k += 2) {
        if (added[k] !== plan.streamId || added[k + 1]! <= stream.watermark) continue;
        const at = pending.lowerBound(added[k + 1]!);
        // Mostly in order: only a place at or before the last is looked for among those listed.
        if (at > last) places.push((last = at));
        else if (!places.includes(at)) places.push(at);
      }
      let replaces = 0;
      for (const at of places) if (pending.mergedAt(at)) replaces++;
      body.count(replaces);
      if (replaces > 0) for (const at of places) if (pending.mergedAt(at)) body.number(pending.timeAt(at));
      body.count(places.length);
      for (const at of places) {
        body.number(pending.timeAt(at));
        body.room(4 + pendingMax(plan));
        body.wrote(writePendingAt(plan, pending.read(at, WRITING), body.buf, body.len + 4));
      }
    }
    const told = d.events.length + d.trips.length + d.chargingSessions.length + d.stops.length;
    if (d.reset || d.checkpoint !== undefined || told > 0 || state.late.correctFrom !== Infinity) {
      this.lates.push({ vehicle: this.vehicles, vehicleno, d, state: d.checkpoint ? writeCheckpoint(state) : undefined, genesis, firstCut: state.late.firstCut, correctFrom: state.late.correctFrom });
    }
    this.vehicles++;
  }

  /** The vehicles with a late item (`vehicle`), in order: each has a key after the vehicles' keys. */
  lateVehicles(): string[] {
    return this.lates.map((l) => l.vehicleno);
  }

  /** Hands its buffers back for the next commit (the arguments `finish` gave are not to be read after). */
  release(): void {
    giveBuffer(this.head.buf);
    giveBuffer(this.body.buf);
  }

  /** The two arguments: the plates and versions, and the writes with the outbox's entries and the late items last. */
  finish(entries: readonly string[]): [Buffer, Buffer] {
    this.head.buf.writeUInt32BE(this.vehicles, 0);
    const { body } = this;
    body.count(entries.length);
    for (const e of entries) body.text(e);
    body.count(this.lates.length);
    for (const l of this.lates) {
      const { d } = l;
      body.number(l.vehicle);
      body.number(d.reset ? 1 : 0);
      body.number(l.correctFrom === Infinity ? undefined : l.correctFrom);
      const checkpoints: Array<[number, number, Buffer]> = [];
      if (d.reset && l.genesis) checkpoints.push([0, l.firstCut, l.genesis]);
      if (d.checkpoint && l.state) checkpoints.push([d.checkpoint.epoch, d.checkpoint.cut, l.state]);
      body.count(checkpoints.length);
      for (const [epoch, cut, committed] of checkpoints) {
        body.number(epoch);
        body.number(cut);
        const packed = packCheckpoint(committed);
        body.room(4 + packed.length);
        packed.copy(body.buf, body.len + 4);
        body.wrote(body.len + 4 + packed.length);
      }
      // What the call emitted, as lines appended to its epoch's ledger field.
      const outputs = outputsOf(d);
      body.count(outputs.length > 0 ? 1 : 0);
      if (outputs.length > 0) {
        body.text(toldField(d.epoch));
        body.text(outputs.map((e) => `${toldLine(toldOf(e, d.epoch))}\n`).join(''));
      }
    }
    return [this.head.buf.subarray(0, this.head.len), body.buf.subarray(0, body.len)];
  }
}

/**
 * What a packed commit says, read by its field list (src/formats/commit.ts, which the script is checked
 * against too): a packer that strays from the list fails here (tests and the stages bench).
 */
export function readCommitArgs(packed: readonly [Buffer, Buffer]): {
  vehicles: Array<{ vehicleno: string; version: string; committed: Buffer; since?: number; streams: Array<{ streamId: number; watermark?: number; replaces: number[]; adds: Array<[number, Buffer]> }> }>;
  entries: string[];
  lates: Array<{ vehicleno: string; reset: boolean; correctFrom?: number; checkpoints: Array<{ epoch: number; cut: number; committed: Buffer }>; told: Array<[string, string]> }>;
} {
  const { head, body } = readCommit(packed, RECORD_SETS.length);
  const list = (r: Read, name: string) => r[name] as Read[];
  const known = (x: unknown) => (Number.isNaN(x) ? undefined : (x as number));
  const heads = list(head, 'vehicles');
  const vehicles = list(body, 'vehicles').map((v, i) => {
    const since = known(v.since);
    const streams = list(v, 'streams').map((st, j) => {
      const watermark = known(st.watermark);
      return {
        streamId: RECORD_SETS[j]!.id,
        ...(watermark === undefined ? {} : { watermark }),
        replaces: list(st, 'replaces').map((x) => x.time as number),
        adds: list(st, 'adds').map((x): [number, Buffer] => [x.time as number, x.record as Buffer]),
      };
    });
    return { vehicleno: String(heads[i]!.vehicleno), version: String(heads[i]!.version), committed: v.committed as Buffer, ...(since === undefined ? {} : { since }), streams };
  });
  const lates = list(body, 'lates').map((l) => {
    const correctFrom = known(l.correctFrom);
    return {
      vehicleno: String(heads[l.vehicle as number]!.vehicleno),
      reset: l.reset === 1,
      ...(correctFrom === undefined ? {} : { correctFrom }),
      checkpoints: list(l, 'checkpoints').map((c) => ({ epoch: c.epoch as number, cut: c.cut as number, committed: c.committed as Buffer })),
      told: list(l, 'told').map((t): [string, string] => [String(t.field), String(t.lines)]),
    };
  });
  return { vehicles, entries: list(body, 'entries').map((e) => String(e.entry)), lates };
}

/** Vehicles a correction round takes at most (a round's work bounded; the rest are due in the next). */
const CORRECTIONS_A_ROUND = 16;
/** Tries of one vehicle's correction: all but the last beside live derivation, the last in the partition's turn. */
const CORRECTION_ATTEMPTS = 4;

/** Tries before a job's derivation gives up to a retry of the job (other jobs kept changing its vehicles). */
const ATTEMPTS = 16;
/**
 * Before another try, a random wait up to this, doubled each try: processes that serve the same
 * partition and read a state together would otherwise try again together (within a process a
 * partition's derivations take turns, `turns`).
 */
const FIRST_BACKOFF_MS = 2;
const MAX_BACKOFF_MS = 100;
/**
 * Parsed states this process committed, by vehicle, with their version: the next job of a vehicle takes
 * it unread (`states`), and the commit's version check tells when another process moved it on. Bounded: past it, all are forgotten at once (the fleet's size,
 * not the process's age).
 */
const CACHED_MAX = 20_000;

/** A job's written records by vehicle, as derivation takes them (those read without its values are left out). */
export function inputsByVehicle(writtenRecords: readonly WrittenRecord[]): Map<string, EventInput[]> {
  const byVehicle = new Map<string, EventInput[]>();
  for (const s of writtenRecords) {
    if (!isInput(s)) continue;
    const list = byVehicle.get(s.vehicleno);
    if (list === undefined) byVehicle.set(s.vehicleno, [s]);
    else list.push(s);
  }
  return byVehicle;
}

const isInput = (s: WrittenRecord): s is WrittenRecord & EventInput => s.values !== undefined && s.at !== undefined;

/** `added` emptied: one list serves every vehicle of a commit, in turn (a list a vehicle was most of what a commit allocated). */
export function addedFor(added: AddedStreamTimePairs): AddedStreamTimePairs {
  while (added.length > 0) added.pop(); // (`length = 0` is a call into the runtime)
  return added;
}

/** A vehicle's state as a job's derivation starts from it: `read` from Redis, or this process's cache. */
interface ReadState {
  version: number;
  state: VehicleState;
  read?: boolean;
}

export interface VehicleEventsOptions {
  /** Called with what each commit derived (metrics). */
  onCommit?: (derived: readonly Derived[]) => void;
  /** Called with what each correction did (metrics, the log). */
  onCorrection?: (c: CorrectionOutcome) => void;
  /** EVENTS_CORRECTION_DELAY: how long after a late record its vehicle's correction is due. */
  correctionDelayMs?: number;
  /** Where a correction reads a vehicle's records back (InfluxDB); without one, no correction runs. */
  source?: RecordSource;
}

/** What became of one vehicle's correction. */
export type CorrectionOutcome =
  | { vehicleno: string; outcome: 'corrected'; from: number; epoch: number; records: number; added: number; corrected: number; retracted: number; unchanged: number }
  /** Nothing was due (another process corrected it). */
  | { vehicleno: string; outcome: 'none' }
  /** The store did not show every record yet, or the vehicle kept changing: due again later. */
  | { vehicleno: string; outcome: 'postponed'; why: string }
  /** No checkpoint before its late record: past the horizon, stored, changing nothing. */
  | { vehicleno: string; outcome: 'tooLate'; from: number };

export class EventsStore {
  private readonly cached = new Map<string, ReadState>();
  /**
   * By partition, this process's derivations one at a time. A partition's jobs share its vehicles: run
   * side by side (WORKER_CONCURRENCY), their commits would conflict on the same states and derive again,
   * over and over while jobs keep coming. Only the derivation waits its turn, a Redis round trip or two
   * a batch; the jobs' writes to InfluxDB still overlap.
   */
  private readonly turns = new SerialByKey<number>();

  private readonly onCommit: ((derived: readonly Derived[]) => void) | undefined;
  private readonly onCorrection: ((c: CorrectionOutcome) => void) | undefined;
  private readonly correctionDelayMs: number;
  private readonly source: RecordSource | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly partitions: readonly PartitionKeys[],
    private readonly opts: DeriveOptions,
    more: VehicleEventsOptions = {},
  ) {
    this.onCommit = more.onCommit;
    this.onCorrection = more.onCorrection;
    this.correctionDelayMs = more.correctionDelayMs ?? 5_000;
    this.source = more.source;
    defineScript(redis, 'telematicsEventsCommitV4', 'events-commit');
    defineScript(redis, 'telematicsEventsCorrect', 'events-correct');
  }

  /**
   * Derives from records of `partition` (their written records, with the values derivation reads): one job's,
   * or several jobs' together (worker/batches.ts), which derives the same and writes each vehicle once.
   */
  async record(partition: number, writtenRecords: readonly WrittenRecord[], now = Date.now()): Promise<void> {
    const byVehicle = inputsByVehicle(writtenRecords);
    if (byVehicle.size === 0) return;
    await this.turns.run(partition, () => this.commit(partition, [...byVehicle.keys()], now, (vehicleno, state, added) => ingest(vehicleno, state, byVehicle.get(vehicleno)!, now, this.opts, added)));
  }

  /** Commits what vehicles of `partition` that stopped sending still hold pending (the window in wall time). */
  async sweep(partition: number, now = Date.now()): Promise<number> {
    const keys = this.partitions[partition]!;
    const idle = await this.redis.zrangebyscore(keys.pending, '-inf', now - this.opts.streamQuietMs, 'LIMIT', 0, 500);
    if (idle.length === 0) return 0;
    await this.turns.run(partition, () => this.commit(partition, idle, now, (vehicleno, state) => flush(vehicleno, state, now, this.opts)));
    return idle.length;
  }

  /**
   * Asks for a vehicle's records from `from` on to be judged again (a correction, due after
   * EVENTS_CORRECTION_DELAY): what the derivation reads besides the records (the command ledger's
   * immobilisations) changed there. Kept as a field of its corrections hash (`r<time>`, format in
   * src/formats/README.md) until a correction from before it has run; of any partition (the vehicle's own).
   */
  async requestCorrection(vehicleno: string, from: number, now = Date.now()): Promise<void> {
    if (!Number.isSafeInteger(from) || from < 0) throw new RangeError(`vehicle events: a correction from ${from} is not a time`);
    const keys = this.partitions[partitionOf(vehicleno, this.partitions.length)]!;
    const answers = (await this.redis.pipeline().hset(keys.late(vehicleno), requestField(from), '').zadd(keys.corrections, 'NX', now + this.correctionDelayMs, vehicleno).exec()) ?? [];
    for (const [err] of answers) if (err) throw err;
  }

  /**
   * Runs the corrections due in `partition` (corrections/), a few vehicles a call; how many ran. Each
   * vehicle's reads and replay are done beside live derivation, checked by the state's version when
   * written; one that keeps losing to live jobs runs in the partition's turn.
   */
  async correctDue(partition: number, now = Date.now()): Promise<number> {
    if (this.source === undefined) return 0;
    const keys = this.partitions[partition]!;
    const due = await this.redis.zrangebyscore(keys.corrections, '-inf', now, 'LIMIT', 0, CORRECTIONS_A_ROUND);
    let ran = 0;
    for (const vehicleno of due) {
      const c = await this.correctVehicle(partition, vehicleno, now);
      this.onCorrection?.(c);
      if (c.outcome === 'corrected') ran++;
    }
    return ran;
  }

  private async correctVehicle(partition: number, vehicleno: string, now: number): Promise<CorrectionOutcome> {
    const keys = this.partitions[partition]!;
    for (let attempt = 1; attempt <= CORRECTION_ATTEMPTS; attempt++) {
      const once = async (): Promise<CorrectionOutcome | undefined> => {
        const snap = await this.readVehicle(keys, vehicleno);
        const asked = snap.kept.requested;
        // A correction asked for from outside the records (requestCorrection) after all the vehicle committed,
        // or of a vehicle with no state: nothing derived yet to judge again.
        if (asked.length > 0 && snap.state.late.correctFrom === Infinity && (snap.version === 0 || snap.kept.requestedFrom > cutOf(snap.state))) {
          await this.redis.hdel(keys.late(vehicleno), ...asked);
          await this.redis.zrem(keys.corrections, vehicleno);
          return { vehicleno, outcome: 'none' };
        }
        const t = Math.min(snap.state.late.correctFrom, snap.kept.requestedFrom);
        if (t === Infinity) {
          await this.redis.zrem(keys.corrections, vehicleno);
          return { vehicleno, outcome: 'none' };
        }
        const from = chooseCheckpoint(snap.kept.checkpoints, t);
        if (from === undefined) {
          snap.state.late.correctFrom = Infinity;
          return (await this.writeCorrection(keys, vehicleno, snap.version, snap.state, asked, [], [], now)) ? { vehicleno, outcome: 'tooLate', from: t } : undefined;
        }
        const after = replayFrom(from, this.opts);
        const records = recordsFor(snap.state, after, await this.source!.read(vehicleno, after, replayUntil(snap.state)));
        if (records === undefined) {
          await this.redis.zadd(keys.corrections, 'XX', now + this.correctionDelayMs, vehicleno);
          return { vehicleno, outcome: 'postponed', why: 'InfluxDB does not show every record the vehicle committed yet' };
        }
        const c = correction(vehicleno, snap.state, snap.kept, from, records, now, this.opts);
        if (!(await this.writeCorrection(keys, vehicleno, snap.version, c.replayed.state, c.drop, c.write, c.diff.outbox, now))) return undefined;
        return { vehicleno, outcome: 'corrected', from: t, epoch: from.epoch, records: records.length, added: c.diff.added, corrected: c.diff.corrected, retracted: c.diff.retracted, unchanged: c.diff.unchanged };
      };
      // Beside live derivation first; past that, in the partition's turn (no job of this process between read and write).
      const r = attempt < CORRECTION_ATTEMPTS ? await once() : await this.turns.run(partition, once);
      if (r !== undefined) return r;
    }
    await this.redis.zadd(keys.corrections, 'XX', now + this.correctionDelayMs, vehicleno);
    return { vehicleno, outcome: 'postponed', why: 'the vehicle kept changing under the correction' };
  }

  /** One vehicle as stored now (never the cache): its state, its pending and held records, its corrections hash. */
  private async readVehicle(keys: PartitionKeys, vehicleno: string): Promise<{ version: number; state: VehicleState; kept: VehicleCorrections }> {
    const pipeline = this.redis.pipeline();
    pipeline.hgetBuffer(keys.state, vehicleno);
    for (const set of RECORD_SETS) pipeline.zrangeBuffer(keys.records(vehicleno, set.id), 0, -1);
    pipeline.hgetallBuffer(keys.late(vehicleno));
    const read = (await pipeline.exec()) ?? [];
    const answer = (i: number): unknown => {
      const [err, value] = read[i] ?? [new Error('no answer')];
      if (err) throw err;
      return value;
    };
    const b = answer(0) as Buffer | null;
    const pending: StoredPending[] = RECORD_SETS.map((set, j) => ({ streamId: set.id, members: answer(1 + j) as Buffer[] }));
    const hash = answer(1 + RECORD_SETS.length) as Record<string, Buffer>;
    const space = b === null ? -1 : b.indexOf(0x20);
    return {
      version: b === null ? 0 : Number(b.toString('latin1', 0, space)),
      state: restore(b === null ? undefined : b.subarray(space + 1), pending),
      kept: readCorrections(vehicleno, hash),
    };
  }

  /** Writes a corrected vehicle (events-correct.lua) if its version is still `version`; whether it was. */
  private async writeCorrection(keys: PartitionKeys, vehicleno: string, version: number, state: VehicleState, drop: readonly string[], write: ReadonlyArray<[string, string | Buffer]>, entries: readonly OutboxEntry[], now: number): Promise<boolean> {
    this.cached.delete(vehicleno);
    const since = pendingSince(state, this.opts);
    const args: Array<string | Buffer> = [
      vehicleno,
      version === 0 ? '' : String(version),
      Buffer.concat([Buffer.from(`${version + 1} `), writeCommitted(state)]),
      since === Infinity ? '' : String(since),
      state.late.correctFrom === Infinity ? '' : String(now + this.correctionDelayMs),
      String(RECORD_SETS.length),
    ];
    for (const set of RECORD_SETS) {
      const stream = state.streams[set.plan.streamId]!;
      const records = (set.held ? stream.held : stream.pending).records();
      args.push(String(records.length));
      for (const r of records) args.push(String(r.time), writePending(set.plan, r));
    }
    args.push(String(drop.length), ...drop);
    args.push(String(write.length));
    for (const [f, v] of write) args.push(f, v);
    args.push(String(entries.length), ...entries.map((e) => JSON.stringify(e)));
    const keyList = [keys.state, keys.outbox, keys.pending, keys.corrections, keys.late(vehicleno), ...RECORD_SETS.map((set) => keys.records(vehicleno, set.id))];
    const conflict = await (this.redis as unknown as WithCommit).telematicsEventsCorrect(keyList.length, ...keyList, ...args);
    if (conflict !== '') return false;
    this.cached.set(vehicleno, { version: version + 1, state });
    // A correction asked for while this one ran (requestCorrection) stays due: the script took the vehicle off the due set.
    if (state.late.correctFrom === Infinity && (await this.redis.hkeys(keys.late(vehicleno))).some((f) => f.startsWith('r'))) await this.redis.zadd(keys.corrections, 'NX', now + this.correctionDelayMs, vehicleno);
    return true;
  }

  /**
   * The states of `vehicles`. One this process committed last is taken from its cache unread: the
   * commit script checks every version anyway, and a vehicle's jobs mostly come to the process serving
   * its partition, so a job of cached vehicles costs no read at all. The rest are read (with their
   * streams' pending records); a vehicle without one starts afresh.
   */
  private async states(keys: PartitionKeys, vehicles: readonly string[]): Promise<ReadState[]> {
    const out: Array<ReadState | undefined> = vehicles.map((v) => this.cached.get(v));
    const unread = vehicles.filter((_, i) => out[i] === undefined);
    if (unread.length === 0) return out as ReadState[];
    const stored = await this.redis.hmgetBuffer(keys.state, ...unread);
    const misses: Array<{ i: number; b: Buffer }> = [];
    const versionOf = (b: Buffer): number => Number(b.toString('latin1', 0, b.indexOf(0x20)));
    let j = 0;
    vehicles.forEach((_, i) => {
      if (out[i] !== undefined) return;
      const b = stored[j++];
      if (b) misses.push({ i, b });
      else out[i] = { version: 0, state: restore(undefined, []), read: true };
    });
    if (misses.length > 0) {
      const pipeline = this.redis.pipeline();
      for (const { i } of misses) for (const set of RECORD_SETS) pipeline.zrangeBuffer(keys.records(vehicles[i]!, set.id), 0, -1);
      const read = (await pipeline.exec()) ?? [];
      let r = 0;
      for (const { i, b } of misses) {
        const pending: StoredPending[] = RECORD_SETS.map((set) => {
          const [err, members] = read[r++] ?? [new Error('no answer')];
          if (err) throw err;
          return { streamId: set.id, members: members as Buffer[] };
        });
        out[i] = { version: versionOf(b), state: restore(b.subarray(b.indexOf(0x20) + 1), pending), read: true };
      }
    }
    return out as ReadState[];
  }

  private async commit(
    partition: number,
    vehicles: readonly string[],
    now: number,
    /** The vehicle's derivation; it reports to `added` the records it put in pending buffers. */
    step: (vehicleno: string, state: VehicleState, added: AddedStreamTimePairs) => Derived,
  ): Promise<void> {
    const keys = this.partitions[partition]!;
    for (let attempt = 1; ; attempt++) {
      const read = await this.states(keys, vehicles);
      const args = new CommitArgs(vehicles.length);
      const entries: string[] = [];
      const derived: Derived[] = [];
      vehicles.forEach((vehicleno, i) => {
        const { version, state } = read[i]!;
        // A cached state is changed in place: it is dropped now, and cached again only once committed.
        this.cached.delete(vehicleno);
        const added = addedFor(ADDED);
        // A state whose corrections begin with this call (derive.ts `begin`): as it is now, epoch 0's checkpoint.
        const genesis = state.late.epoch !== state.late.epoch ? writeCheckpoint(state) : undefined;
        const d = step(vehicleno, state, added);
        derived.push(d);
        args.vehicle(vehicleno, version, state, added, d, this.opts, genesis);
        for (const e of outputsOf(d)) entries.push(JSON.stringify(e));
      });
      const keyList = [
        keys.state,
        keys.outbox,
        keys.pending,
        keys.corrections,
        ...vehicles.flatMap((v) => RECORD_SETS.map((set) => keys.records(v, set.id))),
        ...args.lateVehicles().map((v) => keys.late(v)),
      ];
      const [head, body] = args.finish(entries);
      const conflict = await (this.redis as unknown as WithCommit).telematicsEventsCommitV4(keyList.length, ...keyList, head, String(RECORD_SETS.length), body, String(now + this.correctionDelayMs), String(this.opts.horizonMs));
      // Answered, so sent whole: the buffers serve the next commit. (A command that failed may still sit in
      // a write queue: its buffers are left to the garbage collector.)
      args.release();
      if (conflict === '') {
        if (this.cached.size + vehicles.length > CACHED_MAX) this.cached.clear();
        vehicles.forEach((vehicleno, i) => this.cached.set(vehicleno, { version: read[i]!.version + 1, state: read[i]!.state }));
        this.onCommit?.(derived);
        return;
      }
      if (attempt >= ATTEMPTS) throw new Error(`vehicle events: the state of ${conflict} kept changing under this job; the job is retried`);
      // A cached state another process moved on: no wait, the next try reads it (its cache entry is gone).
      if (read.some((r) => !r.read)) continue;
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1))));
    }
  }
}
