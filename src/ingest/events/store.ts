import type { RedisClient } from '../../redis/connect.js';
import { numberText } from '../../telemetry/numbers.js';
import type { Sighting } from '../../telemetry/record.js';
import {
  flush,
  ingest,
  pendingCount,
  pendingScore,
  stillPending,
  watermarkScore,
  type Derived,
  type DeriveOptions,
  type EventInput,
  type PendingRecord,
  type VehicleState,
} from './derive.js';
import { committedSize, PENDING_MAX, restore, writeCommittedAt, writePendingAt } from './wire.js';

/**
 * Per-vehicle derivation state in Redis, beside the vehicle's partition (its keys carry the partition's
 * hash tag, so a Redis Cluster keeps them on the queue's master), and the outbox of what it derived.
 *
 * A state is kept in two parts (derive.ts, "a state kept in two parts"): the committed part, a few
 * hundred bytes in a hash, rewritten by each job; and the records still pending, a sorted set a vehicle,
 * each written once when it arrives and removed once committed. A job's changes and what they derived
 * are written in one script (`commit`), together or not at all, and only if no other job changed those
 * vehicles meanwhile (each committed part carries a version; a stale one derives the job again on the
 * fresh state). It runs after InfluxDB confirmed the job's points. So a worker killed before it
 * committed leaves nothing (the retried job derives again), one killed after leaves everything (the
 * retried job's records are duplicates, which derive nothing): each transition is in the outbox once.
 */

export interface PartitionKeys {
  /** Hash: vehicleno → `<version> <committed part>`. */
  state: string;
  /** Stream of derived outputs (`outbox.ts`). */
  outbox: string;
  /** Sorted set: vehicles with records still pending, by the wall time of their last arrival. */
  pending: string;
  /** Sorted set of one vehicle's pending records, by score (`pendingScore`). */
  records(vehicleno: string): string;
}

/**
 * The commit, told everything in one argument (`CommitArgs`): ioredis spends about half a microsecond on
 * each argument of a command, and a bulk job's 500 vehicles made 5,000 of them. Each item is a 4-byte
 * big-endian length and its bytes (struct's `I4c0`); a count is a bare `I4`. Checks every vehicle's
 * version first and writes nothing when one moved on (it returns that vehicle's plate).
 */
const COMMIT_SCRIPT = `
local s = ARGV[1]
local n, pos = struct.unpack('>I4', s, 1)
local start = pos
local function skip(p)
  local len
  len, p = struct.unpack('>I4', s, p)
  return p + len
end
for k = 1, n do
  local v, ver, adds
  v, ver, pos = struct.unpack('>I4c0I4c0', s, pos)
  local cur = redis.call('HGET', KEYS[1], v)
  local cv = cur and string.match(cur, '^(%d+) ') or ''
  if cv ~= ver then return v end
  pos = skip(skip(skip(pos)))
  adds, pos = struct.unpack('>I4', s, pos)
  for a = 1, 2 * adds do pos = skip(pos) end
end
pos = start
for k = 1, n do
  local v, ver, committed, now, wm, adds
  v, ver, committed, now, wm, adds, pos = struct.unpack('>I4c0I4c0I4c0I4c0I4c0I4', s, pos)
  local records = KEYS[3 + k]
  redis.call('HSET', KEYS[1], v, committed)
  if now == '' then redis.call('ZREM', KEYS[3], v) else redis.call('ZADD', KEYS[3], now, v) end
  if wm ~= '' then redis.call('ZREMRANGEBYSCORE', records, '-inf', wm) end
  if adds > 0 then
    local za = {}
    for a = 1, 2 * adds do za[a], pos = struct.unpack('>I4c0', s, pos) end
    redis.call('ZADD', records, unpack(za))
  end
end
local entries
entries, pos = struct.unpack('>I4', s, pos)
for j = 1, entries do
  local e
  e, pos = struct.unpack('>I4c0', s, pos)
  redis.call('XADD', KEYS[2], '*', 'e', e)
end
return ''
`;

interface WithCommit {
  telematicsEventsCommit(numKeys: number, ...keysAndArgs: Array<string | Buffer>): Promise<string>;
}

/** One job's commit as the script reads it: every vehicle's part, then the outbox entries, in one buffer. */
export class CommitArgs {
  private buf: Buffer;
  private len = 4;
  private vehicles = 0;

  /** Sized for `vehicles` with a full ring and a few pending records each, so a job's commit seldom grows it. */
  constructor(vehicles: number) {
    this.buf = Buffer.allocUnsafe(1_024 + vehicles * 1_000);
  }

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  private count(n: number): void {
    this.room(4);
    this.buf.writeUInt32BE(n, this.len);
    this.len += 4;
  }

  /** Text: UTF-8 (a plate, an outbox entry), or latin1 for digits (versions, scores, times: a byte a character). */
  private text(x: string, encoding: 'utf8' | 'latin1' = 'utf8'): void {
    const n = encoding === 'latin1' ? x.length : Buffer.byteLength(x);
    this.room(4 + n);
    this.buf.writeUInt32BE(n, this.len);
    this.len += 4 + this.buf.write(x, this.len + 4, encoding);
  }

  /** Bytes a writer put after the length's place (room for them made first), up to `end`. */
  private wrote(end: number): void {
    this.buf.writeUInt32BE(end - this.len - 4, this.len);
    this.len = end;
  }

  /**
   * One vehicle after its derivation: its plate, the version its state was read at (0: none), its new
   * committed part, the wall time it still holds pending records at (none: ''), the watermark's score
   * (pending records at or below it are removed), and the records of `fresh` (those its derivation
   * added) that are still pending, each as score and text.
   */
  vehicle(vehicleno: string, version: number, state: VehicleState, fresh: readonly PendingRecord[], nowText: string): void {
    const wm = watermarkScore(state);
    this.text(vehicleno);
    this.text(version === 0 ? '' : String(version), 'latin1');
    const head = `${version + 1} `;
    this.room(4 + committedSize(state, head));
    this.wrote(writeCommittedAt(state, head, this.buf, this.len + 4));
    this.text(pendingCount(state) > 0 ? nowText : '', 'latin1');
    this.text(wm === undefined ? '' : numberText(wm), 'latin1');
    const at = this.len;
    this.count(0);
    let adds = 0;
    for (const r of fresh) {
      if (!stillPending(state, r)) continue;
      this.text(numberText(pendingScore(r)), 'latin1');
      this.room(4 + PENDING_MAX);
      this.wrote(writePendingAt(r, this.buf, this.len + 4));
      adds++;
    }
    this.buf.writeUInt32BE(adds, at);
    this.vehicles++;
  }

  /** The whole argument, the outbox's entries last. */
  finish(entries: readonly string[]): Buffer {
    this.buf.writeUInt32BE(this.vehicles, 0);
    this.count(entries.length);
    for (const e of entries) this.text(e);
    return this.buf.subarray(0, this.len);
  }
}

/** What a packed commit says (the script's reading, for tests and the stages bench). */
export function readCommitArgs(b: Buffer): {
  vehicles: Array<{ vehicleno: string; version: string; committed: Buffer; now: string; wm: string; adds: Array<[string, Buffer]> }>;
  entries: string[];
} {
  let p = 0;
  const count = () => {
    const n = b.readUInt32BE(p);
    p += 4;
    return n;
  };
  const item = () => {
    const n = count();
    p += n;
    return b.subarray(p - n, p);
  };
  const text = () => item().toString();
  const vehicles = Array.from({ length: count() }, () => {
    const v = { vehicleno: text(), version: text(), committed: item(), now: text(), wm: text() };
    const adds = Array.from({ length: count() }, (): [string, Buffer] => [text(), item()]);
    return { ...v, adds };
  });
  return { vehicles, entries: Array.from({ length: count() }, text) };
}

/** Tries before a job's derivation gives up to a retry of the job (other jobs kept changing its vehicles). */
const ATTEMPTS = 16;
/**
 * Before another try, a random wait up to this, doubled each try: processes that serve the same
 * partition and read a state together would otherwise try again together (within a process a
 * partition's derivations take turns, `inTurn`).
 */
const FIRST_BACKOFF_MS = 2;
const MAX_BACKOFF_MS = 100;
/**
 * Parsed states this process committed, by vehicle, with their version: the next job of a vehicle takes
 * it unread (`states`), and the commit's version check tells when another process moved it on. Bounded: past it, all are forgotten at once (the fleet's size,
 * not the process's age).
 */
const CACHED_MAX = 20_000;

/** A job's sightings by vehicle, as derivation takes them (those read without its values are left out). */
export function inputsByVehicle(sightings: readonly Sighting[]): Map<string, EventInput[]> {
  const byVehicle = new Map<string, EventInput[]>();
  for (const s of sightings) {
    if (!isInput(s)) continue;
    const list = byVehicle.get(s.vehicleno);
    if (list === undefined) byVehicle.set(s.vehicleno, [s]);
    else list.push(s);
  }
  return byVehicle;
}

const isInput = (s: Sighting): s is Sighting & EventInput => s.values !== undefined && s.at !== undefined;

/** A vehicle's state as a job's derivation starts from it: `read` from Redis, or this process's cache. */
interface ReadState {
  version: number;
  state: VehicleState;
  read?: boolean;
  /** Pending records not yet members of the vehicle's sorted set (a first-release state): written out by this commit. */
  unsaved?: boolean;
}

export class VehicleEvents {
  private readonly cached = new Map<string, ReadState>();
  /** By partition: the end of this process's last derivation queued (`inTurn`). */
  private readonly turns = new Map<number, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly partitions: readonly PartitionKeys[],
    private readonly opts: DeriveOptions,
    /** Told what each commit derived (metrics). */
    private readonly onCommit?: (derived: readonly Derived[]) => void,
  ) {
    redis.defineCommand('telematicsEventsCommit', { lua: COMMIT_SCRIPT });
  }

  /** Derives from one job's records of `partition` (their sightings, with the values derivation reads). */
  async record(partition: number, sightings: readonly Sighting[], now = Date.now()): Promise<void> {
    const byVehicle = inputsByVehicle(sightings);
    if (byVehicle.size === 0) return;
    await this.inTurn(partition, () => this.commit(partition, [...byVehicle.keys()], (vehicleno, state, added) => ingest(vehicleno, state, byVehicle.get(vehicleno)!, now, this.opts, added), now));
  }

  /** Commits what vehicles of `partition` that stopped sending still hold pending (the window in wall time). */
  async sweep(partition: number, now = Date.now()): Promise<number> {
    const keys = this.partitions[partition]!;
    const idle = await this.redis.zrangebyscore(keys.pending, '-inf', now - this.opts.idleMs, 'LIMIT', 0, 500);
    if (idle.length === 0) return 0;
    await this.inTurn(partition, () => this.commit(partition, idle, (vehicleno, state) => flush(vehicleno, state, now, this.opts), now));
    return idle.length;
  }

  /**
   * Runs `step` after this process's earlier derivations of `partition`. A partition's jobs share its
   * vehicles: run side by side (WORKER_CONCURRENCY), their commits would conflict on the same states and
   * derive again, over and over while jobs keep coming. Only the derivation waits its turn, a Redis
   * round trip or two a job; the jobs' writes to InfluxDB still overlap.
   */
  private inTurn<T>(partition: number, step: () => Promise<T>): Promise<T> {
    const run = (this.turns.get(partition) ?? Promise.resolve()).then(step);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(partition, settled);
    void settled.then(() => {
      if (this.turns.get(partition) === settled) this.turns.delete(partition);
    });
    return run;
  }

  /**
   * The states of `vehicles`. One this process committed last is taken from its cache unread: the
   * commit script checks every version anyway, and a vehicle's jobs mostly come to the process serving
   * its partition, so a job of cached vehicles costs no read at all (a realtime job's few records
   * otherwise paid a round trip and the whole committed parts for nothing). The rest are read; one whose
   * stored version is the cached one is still taken from the cache.
   */
  private async states(keys: PartitionKeys, vehicles: readonly string[]): Promise<ReadState[]> {
    const out: Array<ReadState | undefined> = vehicles.map((v) => this.cached.get(v));
    const unread = vehicles.filter((_, i) => out[i] === undefined);
    if (unread.length === 0) return out as ReadState[];
    const stored = await this.redis.hmgetBuffer(keys.state, ...unread);
    const misses: Array<{ i: number; b: Buffer }> = [];
    const versionOf = (b: Buffer): number => Number(b.toString('latin1', 0, b.indexOf(0x20)));
    let j = 0;
    vehicles.forEach((vehicleno, i) => {
      if (out[i] !== undefined) return;
      const b = stored[j++];
      if (!b) out[i] = { version: 0, state: restore(undefined, []), read: true };
      else misses.push({ i, b });
    });
    if (misses.length > 0) {
      const pipeline = this.redis.pipeline();
      for (const { i } of misses) pipeline.zrangeBuffer(keys.records(vehicles[i]!), 0, -1);
      const read = (await pipeline.exec()) ?? [];
      misses.forEach(({ i, b }, k) => {
        const [err, members] = read[k] ?? [new Error('no answer')];
        if (err) throw err;
        const state = restore(b.subarray(b.indexOf(0x20) + 1), members as Buffer[]);
        // More pending records than members: the first release's one-piece state held them; write them out.
        out[i] = { version: versionOf(b), state, read: true, unsaved: state.pending.length > (members as Buffer[]).length };
      });
    }
    return out as ReadState[];
  }

  private async commit(
    partition: number,
    vehicles: readonly string[],
    /** The vehicle's derivation; it tells `added` the records it put in the pending buffer. */
    step: (vehicleno: string, state: VehicleState, added: PendingRecord[]) => Derived,
    now: number,
  ): Promise<void> {
    const keys = this.partitions[partition]!;
    for (let attempt = 1; ; attempt++) {
      const read = await this.states(keys, vehicles);
      const args = new CommitArgs(vehicles.length);
      const nowText = numberText(now);
      const entries: string[] = [];
      const derived: Derived[] = [];
      vehicles.forEach((vehicleno, i) => {
        const { version, state, unsaved } = read[i]!;
        // A cached state is changed in place: it is dropped now, and cached again only once committed.
        this.cached.delete(vehicleno);
        const fresh: PendingRecord[] = unsaved ? [...state.pending] : [];
        const d = step(vehicleno, state, fresh);
        derived.push(d);
        args.vehicle(vehicleno, version, state, fresh, nowText);
        for (const e of d.events) entries.push(JSON.stringify({ kind: 'event', ...e }));
        for (const t of d.trips) entries.push(JSON.stringify({ kind: 'trip', ...t }));
        for (const c of d.sessions) entries.push(JSON.stringify({ kind: 'charging', ...c }));
      });
      const keyList = [keys.state, keys.outbox, keys.pending, ...vehicles.map((v) => keys.records(v))];
      const conflict = await (this.redis as unknown as WithCommit).telematicsEventsCommit(keyList.length, ...keyList, args.finish(entries));
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
