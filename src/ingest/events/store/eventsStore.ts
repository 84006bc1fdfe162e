import type { RedisClient } from '../../../redis/connect.js';
import { defineScript } from '../../../redis/scripts.js';
import type { WrittenRecord } from '../../../telemetry/record.js';
import { cutOf, flush, ingest, pendingSince, type Derived, type DeriveOptions, type EventInput, type VehicleState } from '../derive.js';
import { restore, writeCheckpoint, type StoredPending } from '../wire.js';
import { chooseCheckpoint, correction, readCorrections, recordsFor, replayFrom, replayUntil, isRequestField, requestField, type VehicleCorrections } from '../corrections/correct.js';
import { partitionOf } from '../../queue/keys.js';
import type { RecordSource } from '../corrections/records.js';
import { correctionsBegun } from '../corrections/state.js';
import { outputsOf, type OutboxEntry } from '../outbox.js';
import { SerialByKey } from '../../worker/serialByKey.js';
import { CommitArgs, correctionCall, readStateValue } from './commit.js';
import { RECORD_SETS, type PartitionKeys } from './partition.js';

/**
 * Per-vehicle derivation state in Redis, beside the vehicle's partition (its keys, `partition.ts`, carry the
 * partition's hash tag, so a Redis Cluster keeps them on the queue's master), and the outbox of what it derived.
 * What its scripts are sent is laid out in `commit.ts`; here, when and how they run.
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

/** The scripts, as commands ioredis defines (`defineScript`): keys and arguments as `commit.ts` lays them out. */
interface WithScripts {
  telematicsEventsCommitV4(numKeys: number, ...keysAndArgs: Array<string | Buffer>): Promise<string>;
  telematicsEventsCorrect(numKeys: number, ...keysAndArgs: Array<string | Buffer>): Promise<string>;
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
    await this.turns.run(partition, () => this.commit(partition, [...byVehicle.keys()], now, (vehicleno, state) => ingest(vehicleno, state, byVehicle.get(vehicleno)!, now, this.opts)));
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
    const stored = b === null ? undefined : readStateValue(b);
    return { version: stored?.version ?? 0, state: restore(stored?.committed, pending), kept: readCorrections(vehicleno, hash) };
  }

  /** Writes a corrected vehicle (events-correct.lua) if its version is still `version`; whether it was. */
  private async writeCorrection(keys: PartitionKeys, vehicleno: string, version: number, state: VehicleState, drop: readonly string[], write: ReadonlyArray<[string, string | Buffer]>, entries: readonly OutboxEntry[], now: number): Promise<boolean> {
    this.cached.delete(vehicleno);
    const due = state.late.correctFrom === Infinity ? undefined : now + this.correctionDelayMs;
    const call = correctionCall(keys, vehicleno, version, state, pendingSince(state, this.opts), due, drop, write, entries);
    const conflict = await (this.redis as unknown as WithScripts).telematicsEventsCorrect(call.keys.length, ...call.keys, ...call.argv);
    if (conflict !== '') return false;
    this.cached.set(vehicleno, { version: version + 1, state });
    // A correction asked for while this one ran (requestCorrection) stays due: the script took the vehicle off the due set.
    if (state.late.correctFrom === Infinity && (await this.redis.hkeys(keys.late(vehicleno))).some(isRequestField)) await this.redis.zadd(keys.corrections, 'NX', now + this.correctionDelayMs, vehicleno);
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
        const { version, committed } = readStateValue(b);
        out[i] = { version, state: restore(committed, pending), read: true };
      }
    }
    return out as ReadState[];
  }

  private async commit(
    partition: number,
    vehicles: readonly string[],
    now: number,
    /** The vehicle's derivation (what it derived lists the records it put in pending buffers, `Derived.added`). */
    step: (vehicleno: string, state: VehicleState) => Derived,
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
        // A state whose corrections begin with this call: as it is now, epoch 0's checkpoint.
        const genesis = correctionsBegun(state.late) ? undefined : writeCheckpoint(state);
        const d = step(vehicleno, state);
        derived.push(d);
        args.vehicle(vehicleno, version, state, d, this.opts, genesis);
        for (const e of outputsOf(d)) entries.push(JSON.stringify(e));
      });
      const call = args.call(keys, args.finish(entries), now + this.correctionDelayMs, this.opts.horizonMs);
      const conflict = await (this.redis as unknown as WithScripts).telematicsEventsCommitV4(call.keys.length, ...call.keys, ...call.argv);
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
