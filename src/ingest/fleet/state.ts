import type { Config } from '../../config/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import { keysOf, type FleetKeys } from '../queue/keys.js';
import type { WrittenRecord } from '../../telemetry/record.js';

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
 * it (changes.ts), so that a run done again reports the same return at the same time, whatever was
 * recorded in between.
 *
 * Per vehicle (keys: `FleetKeys`, queue/keys.ts): one sorted-set member (plate → newest record time), one hash field (plate →
 * `time,lat,lng` of the newest position), and once it came back from a silence one hash field (plate →
 * that record's time): about 200 bytes of Redis for a 10-character plate, 260 with the return
 * (fleet.test.ts measures it with MEMORY USAGE). Memory grows with the fleet, not with time.
 */
/** The gap that makes a record a return when no SILENT_AFTER threshold is given: the default shortest one. */
export const DEFAULT_RESUME_GAP_MS = 15 * 60_000;




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
    defineScript(redis, 'telematicsFleetRecord', 'fleet-record-3');
    defineScript(redis, 'telematicsFleetSilent', 'fleet-silent-2');
    defineScript(redis, 'telematicsFleetBack', 'fleet-back-2');
  }

  /**
   * Records what jobs of `partition` wrote (one job's, or a batch's: worker/batches.ts): one round trip,
   * whatever the number of records. `now` is the worker's clock: no time is recorded later (see the class
   * comment).
   */
  async record(partition: number, records: readonly WrittenRecord[], now = Date.now()): Promise<void> {
    const times = new Map<string, number[]>();
    const positions = new Map<string, { time: number; lat: number; lng: number }>();
    for (const r of records) {
      const time = r.time < now ? r.time : now;
      const ts = times.get(r.vehicleno);
      if (ts === undefined) times.set(r.vehicleno, [time]);
      else ts.push(time);
      const { lat, lng } = r;
      // A written record has a position only when its type has one (vehicleData.ts) and the record carried it.
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
  return new FleetState(redis, keysOf(cfg).partitions.map((_, i) => keysOf(cfg).fleet(i)), Number.isFinite(shortest) ? { resumeGapMs: shortest } : {});
}
