import { readFileSync } from 'node:fs';
import type { RedisClient } from '../../redis/connect.js';
import type { Logger } from '../../log/index.js';
import { VersionedWatch } from '../../metrics/sampler.js';
import { GeofenceLookup } from './lookup.js';
import { GEOFENCE_LIMITS, GeofenceLimitError, parseGeofences, verticesOf, type Geofence, type GeofenceInput, type GeofenceLimits } from './geofence.js';

/**
 * The fleet's geofences in Redis (one hash, `RedisKeys.geofences`): every version of every geofence by
 * id (`g:<id>` → JSON), the last id given (`next`) and a version bumped by every change (`version`).
 * Changes are stamped with the wall time they are made: a geofence added holds for records from then on
 * (GEOFENCES_FILE's, the first time a name is read, for every record time: they are the fleet's standing ones),
 * one removed stops holding then (kept, with its end, so records of before still find it and a vehicle
 * inside it leaves it by name). A name is one geofence: adding one under a name already held ends the
 * old at that time and adds the new; adding the same again changes nothing. Each change is one MULTI
 * on the one key, retried when another changed it meanwhile (WATCH).
 *
 * Workers see a change within WATCH_EVERY_MS (`GeofenceWatch`); a record that reaches a worker within
 * that time of a change may be judged by the geofences before it.
 */

/** Removed geofences are kept this long past their end (records of before them arrive up to TIME_MAX_AGE late), then forgotten. */
const KEEP_REMOVED_MS = 30 * 86_400_000;
export const WATCH_EVERY_MS = 2_000;

export type GeofenceChange = { added: Geofence[]; ended: Geofence[]; unchanged: Geofence[] };

const same = (a: GeofenceInput, b: GeofenceInput): boolean =>
  a.name === b.name && a.kind === b.kind && a.speedLimitKmh === b.speedLimitKmh && a.radiusM === b.radiusM && JSON.stringify(a.geometry) === JSON.stringify(b.geometry);

/** Which geofence to remove: by its id, or by its name, saying which (a name may be digits: `{ name: "1" }` is not id 1). */
export type GeofenceRef = { id: number } | { name: string };

export class GeofenceRegistry {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    /** `live` and `liveVertices` are held here: a change that would pass them is refused (GeofenceLimitError). */
    private readonly limits: Pick<GeofenceLimits, 'live' | 'liveVertices'> = GEOFENCE_LIMITS,
  ) {}

  /** Every version stored, by id. */
  async all(): Promise<Geofence[]> {
    const h = await this.redis.hgetall(this.key);
    return Object.entries(h)
      .filter(([k]) => k.startsWith('g:'))
      .map(([, v]) => JSON.parse(v) as Geofence)
      .sort((a, b) => a.id - b.id);
  }

  /** The geofences that hold now (no end). */
  async current(): Promise<Geofence[]> {
    return (await this.all()).filter((g) => g.to === undefined);
  }

  async version(): Promise<number> {
    return Number((await this.redis.hget(this.key, 'version')) ?? 0);
  }

  /** A lookup over every version, at the registry's version. */
  async lookup(): Promise<GeofenceLookup> {
    const [version, all] = await Promise.all([this.version(), this.all()]);
    return new GeofenceLookup(all, version);
  }

  /**
   * Adds (or, under a name held, replaces) geofences, from `now` on; one under a name never held from
   * `newFrom` when given (GEOFENCES_FILE's standing geofences hold for every record time: 0).
   */
  async add(inputs: readonly GeofenceInput[], now = Date.now(), newFrom?: number): Promise<GeofenceChange> {
    return this.change(now, (held) => {
      const out: GeofenceChange = { added: [], ended: [], unchanged: [] };
      for (const input of inputs) {
        const old = held.find((g) => g.name === input.name);
        if (old && same(old, input)) out.unchanged.push(old);
        else {
          if (old) out.ended.push({ ...old, to: now });
          out.added.push({ ...input, id: 0, from: old || newFrom === undefined ? now : newFrom });
        }
      }
      this.withinLimits(held, out);
      return out;
    });
  }

  /** Throws a GeofenceLimitError when the geofences holding after `change` would pass the limits (ones already past them may stay, not grow). */
  private withinLimits(held: readonly Geofence[], change: GeofenceChange): void {
    const live = held.length - change.ended.length + change.added.length;
    if (live > held.length && live > this.limits.live) {
      throw new GeofenceLimitError('too_many_geofences', `geofences: ${held.length} hold now and this adds ${live - held.length}: the registry holds at most ${this.limits.live} at once; remove some first`);
    }
    const vertices = (gs: readonly Geofence[]) => gs.reduce((n, g) => n + verticesOf(g.geometry), 0);
    const before = vertices(held);
    const after = before - vertices(change.ended) + vertices(change.added);
    if (after > before && after > this.limits.liveVertices) {
      throw new GeofenceLimitError(
        'too_many_vertices',
        `geofences: those holding now have ${before} vertices and would have ${after}: the registry holds at most ${this.limits.liveVertices} at once (every worker tests fixes against them); remove or simplify some first`,
      );
    }
  }

  /** Ends the geofence of this id, or of this name, that holds now; undefined when none does. */
  async remove(ref: GeofenceRef, now = Date.now()): Promise<Geofence | undefined> {
    const change = await this.change(now, (held) => {
      const g = held.find((x) => ('id' in ref ? x.id === ref.id : x.name === ref.name));
      return { added: [], ended: g ? [{ ...g, to: now }] : [], unchanged: [] };
    });
    return change.ended[0];
  }

  private async change(now: number, plan: (held: Geofence[]) => GeofenceChange): Promise<GeofenceChange> {
    for (let attempt = 0; attempt < 20; attempt++) {
      await this.redis.watch(this.key);
      const all = await this.all();
      let out: GeofenceChange;
      try {
        out = plan(all.filter((g) => g.to === undefined));
      } catch (err) {
        await this.redis.unwatch();
        throw err;
      }
      if (out.added.length === 0 && out.ended.length === 0) {
        await this.redis.unwatch();
        return out;
      }
      let next = Number((await this.redis.hget(this.key, 'next')) ?? 0);
      for (const g of out.added) g.id = ++next;
      const forgotten = all.filter((g) => g.to !== undefined && g.to < now - KEEP_REMOVED_MS).map((g) => `g:${g.id}`);
      const m = this.redis.multi();
      for (const g of [...out.ended, ...out.added]) m.hset(this.key, `g:${g.id}`, JSON.stringify(g));
      if (forgotten.length > 0) m.hdel(this.key, ...forgotten);
      m.hset(this.key, 'next', String(next)).hincrby(this.key, 'version', 1);
      if ((await m.exec()) !== null) return out;
    }
    throw new Error('geofences: the registry kept changing under this change; try again');
  }

}

/** A GeoJSON file's geofences (GEOFENCES_FILE, `telematics-fleet geofences add`); throws naming the file and what is wrong. */
export function parseGeofencesFile(path: string): GeofenceInput[] {
  try {
    return parseGeofences(JSON.parse(readFileSync(path, 'utf8')));
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}

/** A worker's view of the registry: the lookup of its latest version (an empty one until the first read). */
export class GeofenceWatch extends VersionedWatch<GeofenceLookup> {
  constructor(registry: GeofenceRegistry, log?: Logger, everyMs = WATCH_EVERY_MS) {
    super(
      { version: () => registry.version(), read: () => registry.lookup() },
      new GeofenceLookup([]),
      (err) => log?.warn({ err: (err as Error).message }, 'geofences: reading the registry failed; the last read ones hold meanwhile'),
      everyMs,
    );
  }
}
