import type { Config } from '../../config/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { keysOf } from '../queue/keys.js';
import type { Sighting } from '../../telemetry/record.js';

/**
 * Each vehicle's last-seen time and last position, kept in Redis beside its partition's queue (the
 * keys carry the partition's hash tag, so on a Redis Cluster they live on the queue's master and one
 * script updates both). Only times that passed the plausibility rules are ever recorded, so a device
 * with a bad clock cannot pin its vehicle far into the future.
 *
 * Nor even a little: plausibility admits records up to TIME_MAX_AHEAD (15 min) ahead of the clock, and
 * a last-seen held that far ahead would put off the vehicle's silence by as much (ZADD GT never lowers
 * it). So a record's time counts, as last-seen and as its position's time, at most as the worker's
 * clock when the record is recorded (`record`'s `now`): a vehicle is never seen later than its records
 * were actually processed.
 *
 * When a vehicle returns from a silence, `resumed` keeps the time of the record that ended it: the
 * newest record time that came more than `resumeGapMs` (the shortest SILENT_AFTER threshold) after the record
 * before it (its last-seen, or the batch's record before it). The status job stamps a `back` event with
 * it (changes.ts), so that a run done again tells the same return at the same time, whatever was
 * recorded in between.
 *
 * Per vehicle: one sorted-set member (plate → newest record time), one hash field (plate →
 * `time,lat,lng` of the newest position), and once it came back from a silence one hash field (plate →
 * that record's time): about 200 bytes of Redis for a 10-character plate, 260 with the return
 * (fleet.test.ts measures it with MEMORY USAGE). Memory grows with the fleet, not with time.
 */
export interface FleetKeys {
  /** Sorted set: vehicleno → newest record time (ms). */
  seen: string;
  /** Hash: vehicleno → `time,lat,lng` of the newest position. */
  positions: string;
  /** Hash: vehicleno → time (ms) of the record that ended its latest silence (see FleetState). */
  resumed: string;
  /** Set of the vehicles last written to InfluxDB as silent for `after` (a SILENT_AFTER label). */
  silent(after: string): string;
}

/** A partition's keys: `<partition queue>:fleet:…`, which keeps the queue's hash tag. */
export function fleetKeys(partitionQueue: string): FleetKeys {
  const base = `${partitionQueue}:fleet`;
  return { seen: `${base}:seen`, positions: `${base}:positions`, resumed: `${base}:resumed`, silent: (after) => `${base}:silent:${after}` };
}

/** The gap that makes a record a return when no SILENT_AFTER threshold is given: the default shortest one. */
export const DEFAULT_RESUME_GAP_MS = 15 * 60_000;

// ARGV: the gap; the number of vehicles; per vehicle its plate, its newest time, and the records of the
// batch that may end a silence, as (time of the batch's record before it or '-', time) pairs in time
// order; then (plate, time, lat,lng) per position.
// A vehicle's candidate ends a silence when it is newer than the vehicle's last-seen and more than the
// gap after both that and the batch's record before it; the newest that does is kept in `resumed`. A
// vehicle seen for the first time has no silence to end. ZADD GT keeps the newest time whatever order
// jobs are written in; a position is replaced only by a newer (or equally new) one.
const RECORD_SCRIPT = `
local gap = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local j = 3
for _ = 1, n do
  local v, newest, k = ARGV[j], ARGV[j + 1], tonumber(ARGV[j + 2])
  j = j + 3
  local seen = redis.call('ZSCORE', KEYS[1], v)
  if seen then
    seen = tonumber(seen)
    local resumed
    for c = j, j + 2 * k - 1, 2 do
      local t = tonumber(ARGV[c + 1])
      local before = tonumber(ARGV[c])
      if before == nil or before < seen then before = seen end
      if t - before > gap then resumed = ARGV[c + 1] end
    end
    if resumed then redis.call('HSET', KEYS[3], v, resumed) end
  end
  j = j + 2 * k
  redis.call('ZADD', KEYS[1], 'GT', newest, v)
end
while j + 2 <= #ARGV do
  local cur = redis.call('HGET', KEYS[2], ARGV[j])
  if not cur or tonumber(string.match(cur, '^[^,]+')) <= tonumber(ARGV[j + 1]) then
    redis.call('HSET', KEYS[2], ARGV[j], ARGV[j + 1] .. ',' .. ARGV[j + 2])
  end
  j = j + 3
end
return n
`;

// The status job remembers vehicles gone silent (KEYS[1], the threshold's set), ARGV (plate, last-seen)
// pairs. A `resumed` time (KEYS[2]) not after the last-seen they went silent with ended an earlier
// silence: it is dropped, so that only the return from this silence can be told. One that is after it
// was recorded since the run read the vehicle silent: it is this silence's end, and is kept.
const SILENT_SCRIPT = `
for i = 1, #ARGV, 2 do
  local r = redis.call('HGET', KEYS[2], ARGV[i])
  if r and tonumber(r) <= tonumber(ARGV[i + 1]) then redis.call('HDEL', KEYS[2], ARGV[i]) end
  redis.call('SADD', KEYS[1], ARGV[i])
end
return #ARGV / 2
`;

// The time each vehicle of ARGV came back at (false for one gone from KEYS[1], `seen`): its `resumed`
// time (KEYS[2]), or, when no record ended its silence by more than the gap (records delivered late
// rather than a vehicle silent), its last-seen, kept as its `resumed` time so that a run done again
// tells the same.
const BACK_SCRIPT = `
local out = {}
for i = 1, #ARGV do
  local seen = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if seen then
    local r = redis.call('HGET', KEYS[2], ARGV[i])
    if not r then
      redis.call('HSET', KEYS[2], ARGV[i], seen)
      r = seen
    end
    out[i] = r
  else
    out[i] = false
  end
end
return out
`;

/** The scripts as ioredis defines them on the connection (`defineCommand`). */
type WithScripts = {
  telematicsFleetRecord(seen: string, positions: string, resumed: string, ...args: string[]): Promise<number>;
  telematicsFleetSilent(silent: string, resumed: string, ...args: string[]): Promise<number>;
  telematicsFleetBack(seen: string, resumed: string, ...vehicles: string[]): Promise<Array<string | null>>;
};

export interface FleetStateOptions {
  /**
   * A record more than this after the record before it (ms) ended a silence (`resumed`): the shortest
   * SILENT_AFTER threshold (fleetStateFor), DEFAULT_RESUME_GAP_MS when unset.
   */
  resumeGapMs?: number;
}

/** One vehicle as an operator lists it. */
export interface VehicleSeen {
  vehicleno: string;
  /** Newest plausible record time, ms (never later than when the record was recorded). */
  lastSeen: number;
  /** The newest position, when one was ever stored. */
  position?: { time: number; lat: number; lng: number };
}

/**
 * The fleet's state (see FleetKeys). `record` takes the worker's clock and records no time later than
 * it: a record stamped ahead (up to TIME_MAX_AHEAD) would otherwise hold its vehicle's last-seen in the
 * future and put off its `silent` event until the clock caught up.
 */
export class FleetState {
  /** See FleetStateOptions.resumeGapMs. */
  readonly resumeGapMs: number;

  constructor(
    readonly redis: RedisClient,
    /** One entry per partition, partition i at index i. */
    readonly partitions: readonly FleetKeys[],
    opts: FleetStateOptions = {},
  ) {
    this.resumeGapMs = opts.resumeGapMs ?? DEFAULT_RESUME_GAP_MS;
    redis.defineCommand('telematicsFleetRecord', { numberOfKeys: 3, lua: RECORD_SCRIPT });
    redis.defineCommand('telematicsFleetSilent', { numberOfKeys: 2, lua: SILENT_SCRIPT });
    redis.defineCommand('telematicsFleetBack', { numberOfKeys: 2, lua: BACK_SCRIPT });
  }

  /**
   * Records what jobs of `partition` wrote (one job's, or a batch's: worker/batches.ts): one round trip,
   * whatever the number of records. `now` is the worker's clock: no time is recorded later (see the class
   * comment).
   */
  async record(partition: number, records: readonly Sighting[], now = Date.now()): Promise<void> {
    const times = new Map<string, number[]>();
    const positions = new Map<string, { time: number; lat: number; lng: number }>();
    for (const r of records) {
      const time = r.time < now ? r.time : now;
      const ts = times.get(r.vehicleno);
      if (ts === undefined) times.set(r.vehicleno, [time]);
      else ts.push(time);
      const { lat, lng } = r;
      // A sighting has a position only when its type has one (vehicleData.ts) and the record carried it.
      if (lat === undefined || lng === undefined) continue;
      const p = positions.get(r.vehicleno);
      if (p === undefined || time >= p.time) positions.set(r.vehicleno, { time, lat, lng });
    }
    if (times.size === 0) return;
    const gap = this.resumeGapMs;
    const args: string[] = [String(gap), String(times.size)];
    for (const [v, ts] of times) {
      if (ts.length > 1) ts.sort((x, y) => x - y);
      // The records that may end a silence: the oldest (after the last-seen, which only the script knows),
      // and each more than the gap after the batch's record before it.
      const ends = ['-', String(ts[0])];
      for (let i = 1; i < ts.length; i++) if (ts[i]! - ts[i - 1]! > gap) ends.push(String(ts[i - 1]), String(ts[i]));
      args.push(v, String(ts[ts.length - 1]), String(ends.length / 2), ...ends);
    }
    for (const [v, p] of positions) args.push(v, String(p.time), `${p.lat},${p.lng}`);
    const keys = this.partitions[partition]!;
    await (this.redis as unknown as WithScripts).telematicsFleetRecord(keys.seen, keys.positions, keys.resumed, ...args);
  }

  /**
   * The status job's record of vehicles gone silent for a threshold (`silent` its set), with the
   * last-seen times they went silent with: a `resumed` time of an earlier silence is forgotten.
   */
  async wentSilent(k: FleetKeys, silent: string, lastSeen: ReadonlyMap<string, number>): Promise<void> {
    if (lastSeen.size === 0) return;
    const args: string[] = [];
    for (const [v, t] of lastSeen) args.push(v, String(t));
    await (this.redis as unknown as WithScripts).telematicsFleetSilent(silent, k.resumed, ...args);
  }

  /**
   * When each of `vehicles` (silent, now reporting again) came back: the time of the record that ended
   * its silence, the same however often it is asked; undefined for a vehicle no longer known.
   */
  async backAt(k: FleetKeys, vehicles: readonly string[]): Promise<Array<number | undefined>> {
    if (vehicles.length === 0) return [];
    const times = await (this.redis as unknown as WithScripts).telematicsFleetBack(k.seen, k.resumed, ...vehicles);
    return vehicles.map((_, i) => (times[i] === null || times[i] === undefined ? undefined : Number(times[i])));
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
  // A return ends a silence of the shortest threshold; a configuration without one keeps the default.
  const shortest = Math.min(...cfg.SILENT_AFTER.map((t) => t.ms));
  return new FleetState(redis, keysOf(cfg).partitions.map(fleetKeys), Number.isFinite(shortest) ? { resumeGapMs: shortest } : {});
}
