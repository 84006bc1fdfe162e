import type { RedisClient } from '../../redis/connect.js';
import type { Sighting } from '../../telemetry/record.js';
import { flush, ingest, newState, parse, pendingCount, serialize, type Derived, type DeriveOptions, type EventInput, type VehicleState } from './derive.js';

/**
 * Per-vehicle derivation state in Redis, beside the vehicle's partition (its keys carry the partition's
 * hash tag, so a Redis Cluster keeps them on the queue's master), and the outbox of what it derived.
 *
 * A job's records change its vehicles' states and produce their outputs in one script (`commit`): the
 * new states and the outbox entries are written together or not at all, and only if no other job
 * changed those vehicles meanwhile (each state carries a version; a stale one retries the job's
 * derivation on the fresh state). It runs after InfluxDB confirmed the job's points. So a worker killed
 * before it committed leaves nothing (the retried job derives again), one killed after leaves
 * everything (the retried job's records are duplicates, which derive nothing): each transition is in
 * the outbox once.
 */

export interface PartitionKeys {
  /** Hash: vehicleno → `<version> <state>`. */
  state: string;
  /** Stream of derived outputs (`outbox.ts`). */
  outbox: string;
  /** Sorted set: vehicles with records still pending, by the wall time of their last arrival. */
  pending: string;
}

/** What one commit derived, for the metrics. */
export interface Committed {
  derived: Derived[];
}

const COMMIT_SCRIPT = `
local n = tonumber(ARGV[1])
local i = 2
for k = 1, n do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  local ver = cur and string.match(cur, '^(%d+) ') or ''
  if ver ~= ARGV[i + 1] then return ARGV[i] end
  i = i + 4
end
i = 2
for k = 1, n do
  local v = ARGV[i]
  redis.call('HSET', KEYS[1], v, ARGV[i + 2])
  if ARGV[i + 3] == '' then redis.call('ZREM', KEYS[3], v) else redis.call('ZADD', KEYS[3], ARGV[i + 3], v) end
  i = i + 4
end
for j = i, #ARGV do redis.call('XADD', KEYS[2], '*', 'e', ARGV[j]) end
return ''
`;

interface WithCommit {
  telematicsEventsCommit(state: string, outbox: string, pending: string, ...args: string[]): Promise<string>;
}

/** Tries before a job's derivation gives up to a retry of the job (other jobs kept changing its vehicles). */
const ATTEMPTS = 8;
/**
 * Parsed states this process committed, by vehicle, with their version: the next job of a vehicle reads
 * the same version back and skips the parse (a vehicle's jobs mostly go to the process serving its
 * partition). Bounded: past it, all are forgotten at once (the fleet's size, not the process's age).
 */
const CACHED_MAX = 20_000;

export class VehicleEvents {
  constructor(
    private readonly redis: RedisClient,
    private readonly partitions: readonly PartitionKeys[],
    private readonly opts: DeriveOptions,
    /** Told what each commit derived (metrics). */
    private readonly onCommit?: (derived: readonly Derived[]) => void,
  ) {
    redis.defineCommand('telematicsEventsCommit', { numberOfKeys: 3, lua: COMMIT_SCRIPT });
  }

  private readonly cached = new Map<string, { version: number; state: VehicleState }>();

  /** The state stored as `text` (`<version> <state>`), parsed unless this process holds that version. */
  private stateOf(vehicleno: string, text: string | null): { version: number; state: VehicleState } {
    if (!text) return { version: 0, state: newState() };
    const space = text.indexOf(' ');
    const version = Number(text.slice(0, space));
    const hit = this.cached.get(vehicleno);
    if (hit !== undefined && hit.version === version) return hit;
    return { version, state: parse(text.slice(space + 1)) };
  }

  /** Derives from one job's records of `partition` (their sightings, with the fields derivation reads). */
  async record(partition: number, sightings: readonly Sighting[], now = Date.now()): Promise<void> {
    const byVehicle = new Map<string, EventInput[]>();
    for (const s of sightings) {
      if (s.fields === undefined) continue;
      let list = byVehicle.get(s.vehicleno);
      if (list === undefined) byVehicle.set(s.vehicleno, (list = []));
      list.push({ type: s.type, time: s.time, fields: s.fields });
    }
    if (byVehicle.size === 0) return;
    await this.commit(partition, [...byVehicle.keys()], (vehicleno, state) => ingest(vehicleno, state, byVehicle.get(vehicleno)!, now, this.opts), now);
  }

  /** Commits what vehicles of `partition` that stopped sending still hold pending (the window in wall time). */
  async sweep(partition: number, now = Date.now()): Promise<number> {
    const keys = this.partitions[partition]!;
    const idle = await this.redis.zrangebyscore(keys.pending, '-inf', now - this.opts.idleMs, 'LIMIT', 0, 500);
    if (idle.length === 0) return 0;
    await this.commit(partition, idle, (vehicleno, state) => flush(vehicleno, state, now, this.opts), now);
    return idle.length;
  }

  private async commit(partition: number, vehicles: readonly string[], step: (vehicleno: string, state: VehicleState) => Derived, now: number): Promise<void> {
    const keys = this.partitions[partition]!;
    for (let attempt = 1; ; attempt++) {
      const stored = await this.redis.hmget(keys.state, ...vehicles);
      const args: string[] = [String(vehicles.length)];
      const entries: string[] = [];
      const derived: Derived[] = [];
      const states: VehicleState[] = [];
      vehicles.forEach((vehicleno, i) => {
        const text = stored[i];
        const { version, state } = this.stateOf(vehicleno, text ?? null);
        // A cached state is changed in place: it is dropped now, and cached again only once committed.
        this.cached.delete(vehicleno);
        states.push(state);
        const d = step(vehicleno, state);
        derived.push(d);
        args.push(vehicleno, text ? String(version) : '', `${version + 1} ${serialize(state)}`, pendingCount(state) > 0 ? String(now) : '');
        for (const e of d.events) entries.push(JSON.stringify({ kind: 'event', ...e }));
        for (const t of d.trips) entries.push(JSON.stringify({ kind: 'trip', ...t }));
        for (const c of d.sessions) entries.push(JSON.stringify({ kind: 'charging', ...c }));
      });
      const conflict = await (this.redis as unknown as WithCommit).telematicsEventsCommit(keys.state, keys.outbox, keys.pending, ...args, ...entries);
      if (conflict === '') {
        if (this.cached.size + vehicles.length > CACHED_MAX) this.cached.clear();
        vehicles.forEach((vehicleno, i) => {
          const text = stored[i];
          this.cached.set(vehicleno, { version: (text ? Number(text.slice(0, text.indexOf(' '))) : 0) + 1, state: states[i]! });
        });
        this.onCommit?.(derived);
        return;
      }
      if (attempt >= ATTEMPTS) throw new Error(`vehicle events: the state of ${conflict} kept changing under this job; the job is retried`);
    }
  }
}
