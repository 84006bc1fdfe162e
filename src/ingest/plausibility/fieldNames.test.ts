import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, expect, inject, it } from 'vitest';
import { ExtraFieldNames } from './fieldNames.js';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

it('receivers learn each other’s names through Redis, and a name admitted anywhere is admitted everywhere', async () => {
  const prefix = `fieldnames-${randomBytes(4).toString('hex')}`;
  const keyOf = (m: string) => `${prefix}:${m}`;
  const a = new ExtraFieldNames(3);
  const b = new ExtraFieldNames(3);
  expect([a.admits('can', 'x_a'), a.admits('can', 'x_b')]).toEqual([true, true]);
  await a.sync(redis, keyOf, ['can', 'gps']);
  await b.sync(redis, keyOf, ['can', 'gps']);
  // b knows a's two: its third new name fills the bound, a fourth is refused.
  expect([b.admits('can', 'x_a'), b.admits('can', 'x_c'), b.admits('can', 'x_d')]).toEqual([true, true, false]);
  await b.sync(redis, keyOf, ['can', 'gps']);
  await a.sync(redis, keyOf, ['can', 'gps']);
  expect([a.admits('can', 'x_c'), a.admits('can', 'x_e')]).toEqual([true, false]);
  expect((await redis.smembers(keyOf('can'))).sort()).toEqual(['x_a', 'x_b', 'x_c']);
  // A release that starts later reads them.
  const later = new ExtraFieldNames(3);
  await later.sync(redis, keyOf, ['can']);
  expect([later.admits('can', 'x_b'), later.admits('can', 'x_z')]).toEqual([true, false]);
});
