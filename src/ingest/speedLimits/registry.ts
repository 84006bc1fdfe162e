import type { RedisClient } from '../../redis/connect.js';
import type { Logger } from '../../log/index.js';
import { VersionedWatch } from '../../metrics/sampler.js';

/**
 * Per-vehicle speed limits (a scooter capped at 25 km/h, a three-wheeler at 40), beside the fleet's
 * SPEED_LIMIT and the geofences': one Redis hash (`RedisKeys.speedLimits`), a vehicle's field holding
 * its limits over time as `[[from, km/h or 0 for none], …]`, `version` bumped by every change. Like a
 * geofence, a change holds for records from when it was made, so a record is judged by the limit that
 * held at its own time, whatever order records arrive in. Workers see a change within WATCH_EVERY_MS.
 */
export const WATCH_EVERY_MS = 2_000;
/** Changes a vehicle keeps (its oldest forgotten past these: records that old are long committed). */
const KEEP_CHANGES = 16;

type Changes = Array<[from: number, kmh: number]>;

export class SpeedLimits {
  constructor(
    private readonly byVehicle: ReadonlyMap<string, Changes> = new Map(),
    readonly version = 0,
  ) {}

  /** The vehicle's limit at record time `t` (undefined: none set then). */
  at(vehicleno: string, t: number): number | undefined {
    const changes = this.byVehicle.get(vehicleno);
    if (changes === undefined) return undefined;
    let kmh = 0;
    for (const [from, limit] of changes) if (from <= t) kmh = limit;
    return kmh > 0 ? kmh : undefined;
  }

  /** Every vehicle with a limit now, and it. */
  current(): Array<{ vehicleno: string; kmh: number; from: number }> {
    const out: Array<{ vehicleno: string; kmh: number; from: number }> = [];
    for (const [vehicleno, changes] of this.byVehicle) {
      const last = changes.at(-1);
      if (last && last[1] > 0) out.push({ vehicleno, kmh: last[1], from: last[0] });
    }
    return out.sort((a, b) => a.vehicleno.localeCompare(b.vehicleno));
  }
}

export class SpeedLimitRegistry {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
  ) {}

  async version(): Promise<number> {
    return Number((await this.redis.hget(this.key, 'version')) ?? 0);
  }

  async read(): Promise<SpeedLimits> {
    const h = await this.redis.hgetall(this.key);
    const byVehicle = new Map<string, Changes>();
    for (const [k, v] of Object.entries(h)) if (k.startsWith('v:')) byVehicle.set(k.slice(2), JSON.parse(v) as Changes);
    return new SpeedLimits(byVehicle, Number(h.version ?? 0));
  }

  /** Sets a vehicle's limit (km/h; 0: none) from `now` on. */
  async set(vehicleno: string, kmh: number, now = Date.now()): Promise<void> {
    if (!(kmh >= 0 && kmh <= 1_000)) throw new RangeError(`a speed limit is 0 (none) to 1000 km/h, not ${kmh}`);
    for (let attempt = 0; attempt < 20; attempt++) {
      await this.redis.watch(this.key);
      const field = `v:${vehicleno}`;
      const changes = JSON.parse((await this.redis.hget(this.key, field)) ?? '[]') as Changes;
      changes.push([now, kmh]);
      const m = this.redis.multi().hset(this.key, field, JSON.stringify(changes.slice(-KEEP_CHANGES))).hincrby(this.key, 'version', 1);
      if ((await m.exec()) !== null) return;
    }
    throw new Error('speed limits: the registry kept changing under this change; try again');
  }
}

/** A worker's view of the limits, read again whenever their version moves on (none until the first read). */
export class SpeedLimitWatch extends VersionedWatch<SpeedLimits> {
  constructor(registry: SpeedLimitRegistry, log?: Logger, everyMs = WATCH_EVERY_MS) {
    super(
      { version: () => registry.version(), read: () => registry.read() },
      new SpeedLimits(),
      (err) => log?.warn({ err: (err as Error).message }, 'speed limits: reading the registry failed; the last read ones hold meanwhile'),
      everyMs,
    );
  }
}
