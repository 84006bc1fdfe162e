import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseGeofences } from './geofence.js';
import { GeofenceRegistry, GeofenceWatch } from './registry.js';
import { square } from './geofences.testkit.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
});
afterAll(() => redis?.disconnect());

const T = Date.UTC(2026, 0, 5, 8);
const depot = (side = 500, speed_limit?: number) =>
  parseGeofences({ type: 'Feature', properties: { name: 'Depot A', kind: 'depot', ...(speed_limit ? { speed_limit } : {}) }, geometry: { type: 'Polygon', coordinates: square(12.9, 77.5, side) } });

describe('the geofence registry (Redis)', () => {
  it('numbers what it adds, stamps each change, replaces by name, keeps what was removed with its end', async () => {
    const r = new GeofenceRegistry(redis, `gf-${randomUUID()}`);
    const first = await r.add(depot(), T);
    expect(first.added.map((g) => [g.id, g.name, g.from])).toEqual([[1, 'Depot A', T]]);
    // The same again: nothing changes, the version stays.
    const version = await r.version();
    expect((await r.add(depot(), T + 1)).unchanged.map((g) => g.id)).toEqual([1]);
    expect(await r.version()).toBe(version);
    // Under the same name, larger: the old ends, the new holds from then.
    const bigger = await r.add(depot(800, 20), T + 60_000);
    expect(bigger.added.map((g) => [g.id, g.from, g.speedLimitKmh])).toEqual([[2, T + 60_000, 20]]);
    expect(bigger.ended.map((g) => [g.id, g.to])).toEqual([[1, T + 60_000]]);
    expect((await r.current()).map((g) => g.id)).toEqual([2]);
    expect((await r.remove('Depot A', T + 120_000))?.to).toBe(T + 120_000);
    expect(await r.remove('Depot A', T + 130_000)).toBeUndefined();
    expect((await r.all()).map((g) => [g.id, g.from, g.to])).toEqual([
      [1, T, T + 60_000],
      [2, T + 60_000, T + 120_000],
    ]);
    expect(await r.version()).toBe(version + 2);
  });

  it('two writers adding at once: one geofence of the name, no id given twice', async () => {
    const key = `gf-${randomUUID()}`;
    const others = Array.from({ length: 4 }, () => new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 }));
    try {
      const names = ['a', 'b', 'c', 'd'];
      await Promise.all(
        others.map((c, i) =>
          new GeofenceRegistry(c, key).add(
            [...depot(), ...names.map((n) => ({ ...depot()[0]!, name: `${n}${i}` }))],
            T,
          ),
        ),
      );
      const all = await new GeofenceRegistry(redis, key).all();
      expect(all.filter((g) => g.name === 'Depot A')).toHaveLength(1);
      expect(new Set(all.map((g) => g.id)).size).toBe(all.length);
      expect(all).toHaveLength(1 + 16);
    } finally {
      for (const c of others) c.disconnect();
    }
  });

  it('a watch sees a change at its next read, and keeps what it read while Redis is away', async () => {
    const key = `gf-${randomUUID()}`;
    const r = new GeofenceRegistry(redis, key);
    const watch = new GeofenceWatch(r);
    await watch.refresh();
    expect(watch.current.size).toBe(0);
    await r.add(depot(), T);
    await watch.refresh();
    expect(watch.current.containing(12.9 + 0.001, 77.5 + 0.001, T).map((g) => g.name)).toEqual(['Depot A']);
    const seen = watch.current;
    await watch.refresh();
    expect(watch.current).toBe(seen);
  });
});
