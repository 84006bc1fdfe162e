import type { RedisClient } from '../../redis/connect.js';
import { typeOf } from '../../telemetry/fields.js';

/**
 * Which field names a record may bring beyond its type's schema (CAN objects are dynamic: any numeric
 * parameter a device sends is kept). Every new name is a new column of its measurement, and the stores
 * bound columns: Cloud Serverless 200 a table, InfluxDB 3 Core 500; past the bound every line with a
 * new name is refused. So names outside the schema are admitted per measurement up to
 * EXTRA_FIELDS_MAX, first come first served, and the names admitted are kept in Redis (a set a
 * measurement, `RedisKeys.extraFieldNames`), so every receiver, and the next release, admits the same.
 * Beyond the bound a new name is refused as a field (the rule `extra_fields`: told to the sender in
 * `refusedFields`, counted, kept in the quarantine), as is a field named as a tag (`tag_name`).
 *
 * A verdict is final for the process (a name once admitted stays admitted; once the bound is reached it
 * stays reached), so the judge and the scanner cache it. Receivers learn each other's names every
 * `SYNC_MS`; names two receivers admit between two syncs may pass the bound by as many, which the
 * default leaves room for (`can`: 69 schema fields, a tag and time, and 120 names: 191 columns).
 */
export class ExtraFieldNames {
  /** By measurement, the names admitted, as far as this process knows. */
  private readonly admitted = new Map<string, Set<string>>();
  /** Names admitted here not yet in Redis, by measurement. */
  private readonly unsaved = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** EXTRA_FIELDS_MAX; 0: no bound. */
    readonly max: number,
  ) {}

  /** Whether a record of `type` may carry a field named `name` that its schema does not declare. */
  admits(type: string, name: string): boolean {
    if (this.max === 0) return true;
    const measurement = typeOf(type).spec.measurement;
    let names = this.admitted.get(measurement);
    if (names === undefined) this.admitted.set(measurement, (names = new Set()));
    if (names.has(name)) return true;
    if (names.size >= this.max) return false;
    names.add(name);
    let pending = this.unsaved.get(measurement);
    if (pending === undefined) this.unsaved.set(measurement, (pending = new Set()));
    pending.add(name);
    return true;
  }

  /** Keeps the names in step with Redis: what this process admitted written, what others did read. */
  async sync(redis: RedisClient, keyOf: (measurement: string) => string, measurements: readonly string[]): Promise<void> {
    for (const m of measurements) {
      const pending = [...(this.unsaved.get(m) ?? [])];
      if (pending.length > 0) await redis.sadd(keyOf(m), ...pending);
      this.unsaved.get(m)?.clear();
      const names = this.admitted.get(m) ?? new Set<string>();
      for (const n of await redis.smembers(keyOf(m))) names.add(n);
      this.admitted.set(m, names);
    }
  }

  /** Syncs now and every `everyMs` until `stop`; a failed sync is tried again at the next. */
  async start(redis: RedisClient, keyOf: (measurement: string) => string, measurements: readonly string[], everyMs = SYNC_MS): Promise<void> {
    await this.sync(redis, keyOf, measurements).catch(() => undefined);
    this.timer = setInterval(() => void this.sync(redis, keyOf, measurements).catch(() => undefined), everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export const SYNC_MS = 2_000;
