import { afterAll, beforeAll, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { checkRedisSettings } from '../../src/ingest/service/redisChecks.js';

let server: LocalRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis({ appendonly: true, maxmemory: '64mb' });
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

function capture() {
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _e, cb) => (lines.push(JSON.parse(String(chunk)).msg), cb()) }));
  return { log, lines };
}

it('says nothing about a Redis set up as required (noeviction, AOF, maxmemory)', async () => {
  const { log, lines } = capture();
  expect(await checkRedisSettings(redis, log)).toEqual([]);
  expect(lines).toEqual([]);
});

it('warns clearly about an evicting policy, no persistence and no maxmemory', async () => {
  await redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
  await redis.config('SET', 'appendonly', 'no');
  await redis.config('SET', 'maxmemory', '0');
  const { log, lines } = capture();
  const warnings = await checkRedisSettings(redis, log);
  expect(warnings).toEqual([
    'Redis maxmemory-policy is allkeys-lru; set it to noeviction or queued pushes can be evicted and lost',
    'Redis has no maxmemory; set one (and REDIS_MEMORY_LIMIT if needed) so pushes are shed with 503 before the host runs out of memory',
    'Redis has no persistence (appendonly no, save ""); a Redis restart loses every queued push: set appendonly yes',
  ]);
  expect(lines).toEqual(warnings);
});

it('warns when AOF is on but not fsynced before each answer', async () => {
  await redis.config('SET', 'maxmemory-policy', 'noeviction');
  await redis.config('SET', 'maxmemory', '64mb');
  await redis.config('SET', 'appendonly', 'yes');
  await redis.config('SET', 'appendfsync', 'everysec');
  const { log } = capture();
  expect(await checkRedisSettings(redis, log)).toEqual([
    'Redis appendfsync is everysec; a host crash can lose the last second of acknowledged pushes: set appendfsync always',
  ]);
  await redis.config('SET', 'appendfsync', 'always');
  expect(await checkRedisSettings(redis, capture().log)).toEqual([]);
});
