import type { Config } from '../../config/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { keysOf } from '../queue/keys.js';
import type { Sighting } from '../../telemetry/record.js';

/**
 * Each vehicle's last-seen time and last position, kept in Redis beside its partition's queue (the
 * keys carry the partition's hash tag, so on a Redis Cluster they live on the queue's master and one
 * script updates both). Only times that passed the plausibility rules are ever recorded, so a device
 * with a bad clock cannot pin its vehicle to the future.
 *
 * Per vehicle: one sorted-set member (plate → newest record time) and one hash field (plate →
 * `time,lat,lng` of the newest position): about 200 bytes of Redis for a 10-character plate
 * (fleet.test.ts measures it with MEMORY USAGE). Memory grows with the fleet, not with time.
 */
export interface FleetKeys {
  /** Sorted set: vehicleno → newest record time (ms). */
  seen: string;
  /** Hash: vehicleno → `time,lat,lng` of the newest position. */
  positions: string;
  /** Set of the vehicles last written to InfluxDB as silent for `after` (a SILENT_AFTER label). */
  silent(after: string): string;
}

/** A partition's keys: `<partition queue>:fleet:…`, which keeps the queue's hash tag. */
export function fleetKeys(partitionQueue: string): FleetKeys {
  const base = `${partitionQueue}:fleet`;
  return { seen: `${base}:seen`, positions: `${base}:positions`, silent: (after) => `${base}:silent:${after}` };
}

// ZADD GT keeps the newest time whatever order jobs are written in; a position is replaced only by a
// newer (or equally new) one.
const RECORD_SCRIPT = `
local n = tonumber(ARGV[1])
for i = 0, n - 1 do
  redis.call('ZADD', KEYS[1], 'GT', ARGV[3 + 2 * i], ARGV[2 + 2 * i])
end
local j = 2 + 2 * n
while j + 2 <= #ARGV do
  local cur = redis.call('HGET', KEYS[2], ARGV[j])
  if not cur or tonumber(string.match(cur, '^[^,]+')) <= tonumber(ARGV[j + 1]) then
    redis.call('HSET', KEYS[2], ARGV[j], ARGV[j + 1] .. ',' .. ARGV[j + 2])
  end
  j = j + 3
end
return n
`;

/** The script as ioredis defines it on the connection (`defineCommand`). */
type WithRecord = { telematicsFleetRecord(seen: string, positions: string, ...args: string[]): Promise<number> };

/** One vehicle as an operator lists it. */
export interface VehicleSeen {
  vehicleno: string;
  /** Newest plausible record time, ms. */
  lastSeen: number;
  /** The newest position, when one was ever stored. */
  position?: { time: number; lat: number; lng: number };
}

export class FleetState {
  constructor(
    readonly redis: RedisClient,
    /** One entry per partition, partition i at index i. */
    readonly partitions: readonly FleetKeys[],
  ) {
    redis.defineCommand('telematicsFleetRecord', { numberOfKeys: 2, lua: RECORD_SCRIPT });
  }

  /** Records what jobs of `partition` wrote (one job's, or a batch's: worker/batches.ts): one round trip, whatever the number of records. */
  async record(partition: number, records: readonly Sighting[]): Promise<void> {
    const newest = new Map<string, number>();
    const positions = new Map<string, { time: number; lat: number; lng: number }>();
    for (const r of records) {
      const t = newest.get(r.vehicleno);
      if (t === undefined || r.time > t) newest.set(r.vehicleno, r.time);
      const { lat, lng } = r;
      // A sighting has a position only when its type has one (vehicleData.ts) and the record carried it.
      if (lat === undefined || lng === undefined) continue;
      const p = positions.get(r.vehicleno);
      if (p === undefined || r.time >= p.time) positions.set(r.vehicleno, { time: r.time, lat, lng });
    }
    if (newest.size === 0) return;
    const args: string[] = [String(newest.size)];
    for (const [v, t] of newest) args.push(v, String(t));
    for (const [v, p] of positions) args.push(v, String(p.time), `${p.lat},${p.lng}`);
    const keys = this.partitions[partition]!;
    await (this.redis as unknown as WithRecord).telematicsFleetRecord(keys.seen, keys.positions, ...args);
  }

  /** Vehicles known, and of them those not seen since `now - afterMs`, for each threshold. */
  async counts(now: number, thresholds: readonly number[]): Promise<{ known: number; silent: number[] }> {
    const per = await Promise.all(
      this.partitions.map(async (k) => {
        const [known, ...silent] = await Promise.all([this.redis.zcard(k.seen), ...thresholds.map((ms) => this.redis.zcount(k.seen, '-inf', `(${now - ms}`))]);
        return { known, silent };
      }),
    );
    return {
      known: per.reduce((s, p) => s + p.known, 0),
      silent: thresholds.map((_, i) => per.reduce((s, p) => s + p.silent[i]!, 0)),
    };
  }

  /** The vehicles not seen since `now - afterMs`, longest silent first, at most `limit`. */
  async silent(now: number, afterMs: number, limit: number): Promise<VehicleSeen[]> {
    const per = await Promise.all(this.partitions.map((k) => this.silentIn(k, now - afterMs, limit)));
    return per
      .flat()
      .sort((a, b) => a.lastSeen - b.lastSeen || (a.vehicleno < b.vehicleno ? -1 : 1))
      .slice(0, limit);
  }

  /** One vehicle's last-seen time and position, or undefined when it never reported. */
  async vehicle(partition: number, vehicleno: string): Promise<VehicleSeen | undefined> {
    const k = this.partitions[partition]!;
    const [score, pos] = await Promise.all([this.redis.zscore(k.seen, vehicleno), this.redis.hget(k.positions, vehicleno)]);
    return score === null ? undefined : withPosition(vehicleno, Number(score), pos);
  }

  /** Plates of partition `k` not seen since `before`, with their times (for the status job). */
  async silentSince(k: FleetKeys, before: number): Promise<Map<string, number>> {
    const flat = await this.redis.zrangebyscore(k.seen, '-inf', `(${before}`, 'WITHSCORES');
    const out = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i]!, Number(flat[i + 1]));
    return out;
  }

  private async silentIn(k: FleetKeys, before: number, limit: number): Promise<VehicleSeen[]> {
    const flat = await this.redis.zrangebyscore(k.seen, '-inf', `(${before}`, 'WITHSCORES', 'LIMIT', 0, limit);
    if (flat.length === 0) return [];
    const plates = flat.filter((_, i) => i % 2 === 0);
    const pos = await this.redis.hmget(k.positions, ...plates);
    return plates.map((v, i) => withPosition(v, Number(flat[2 * i + 1]), pos[i] ?? null));
  }
}

function withPosition(vehicleno: string, lastSeen: number, pos: string | null): VehicleSeen {
  if (pos === null) return { vehicleno, lastSeen };
  const [time, lat, lng] = pos.split(',').map(Number) as [number, number, number];
  return { vehicleno, lastSeen, position: { time, lat, lng } };
}

/** The fleet state of the queue the configuration names. */
export function fleetStateFor(cfg: Config, redis: RedisClient): FleetState {
  return new FleetState(redis, keysOf(cfg).partitions.map(fleetKeys));
}
