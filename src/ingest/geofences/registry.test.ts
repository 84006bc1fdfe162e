import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { GeofenceLimitError, parseGeofences } from './geofence.js';
import { GeofenceRegistry, GeofenceWatch } from './registry.js';
import { square, wavy } from './geofences.testkit.js';

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
    expect((await r.remove({ name: 'Depot A' }, T + 120_000))?.to).toBe(T + 120_000);
    expect(await r.remove({ name: 'Depot A' }, T + 130_000)).toBeUndefined();
    expect((await r.all()).map((g) => [g.id, g.from, g.to])).toEqual([
      [1, T, T + 60_000],
      [2, T + 60_000, T + 120_000],
    ]);
    expect(await r.version()).toBe(version + 2);
  });

  it('removes by id or by name, never one for the other: a geofence named "1" is not the one of id 1', async () => {
    const r = new GeofenceRegistry(redis, `gf-${randomUUID()}`);
    await r.add(depot(), T);
    await r.add([{ ...depot()[0]!, name: '1' }], T);
    expect((await r.current()).map((g) => [g.id, g.name])).toEqual([
      [1, 'Depot A'],
      [2, '1'],
    ]);
    expect((await r.remove({ name: '1' }, T + 1))?.id).toBe(2);
    expect(await r.remove({ name: '1' }, T + 2)).toBeUndefined();
    expect(await r.remove({ id: 2 }, T + 2)).toBeUndefined();
    expect((await r.remove({ id: 1 }, T + 3))?.name).toBe('Depot A');
    expect(await r.current()).toEqual([]);
  });

  it('holds the live limits: more geofences or vertices than they allow are refused, changing nothing; replacing within them is not', async () => {
    const r = new GeofenceRegistry(redis, `gf-${randomUUID()}`, { live: 2, liveVertices: 20 });
    const zone = (name: string, vertices = 4) => ({ ...depot()[0]!, name, geometry: { type: 'Polygon' as const, coordinates: vertices === 4 ? square(12.9, 77.5, 500) : wavy(12.9, 77.5, 500, vertices) } });
    await r.add([zone('a'), zone('b')], T);
    const version = await r.version();
    const many = await r.add([zone('c')], T + 1).catch((e: unknown) => e);
    expect(many).toBeInstanceOf(GeofenceLimitError);
    expect(many).toMatchObject({ code: 'too_many_geofences', message: expect.stringContaining('at most 2 at once') });
    // Replacing one keeps the count: within the limits, taken; to more vertices than they allow, refused.
    expect((await r.add([zone('b', 16)], T + 2)).added).toHaveLength(1);
    const large = await r.add([zone('a', 5)], T + 3).catch((e: unknown) => e);
    expect(large).toMatchObject({ code: 'too_many_vertices', message: expect.stringContaining('have 20 vertices and would have 21') });
    expect(await r.version()).toBe(version + 1);
    // The refusal let go of its WATCH: the next change goes through.
    expect((await r.remove({ name: 'a' }, T + 4))?.name).toBe('a');
    expect((await r.add([zone('c')], T + 5)).added.map((g) => g.name)).toEqual(['c']);
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
