/**
 * A Sentinel-managed primary killed while a retrying sender pushes: with REDIS_WAIT_REPLICAS=1
 * every acknowledged record was on a replica before its 2xx, Sentinel promotes the most advanced
 * replica, and every acknowledged record lands, reconciled as the fault tests do.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { freePort, stopProcess, waitFor } from '../../src/devstack/process.js';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { expectFeedLandedThroughFault } from '../harness/reconcile.js';
import { startTestService, TEST_TOKEN, waitUntil, type TestService } from '../harness/service.js';

const dir = mkdtempSync(join(tmpdir(), 'telematics-sentinel-'));
const children: ChildProcess[] = [];
let primary: LocalRedis;
let svc: TestService;
let sentinelPort: number;

const replicaOf = async (port: number) => {
  const p = await freePort();
  children.push(spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--replicaof', '127.0.0.1', String(port), '--appendonly', 'yes', '--appendfsync', 'always', '--dir', mkdtempSync(join(dir, 'r-'))], { stdio: 'ignore' }));
  return p;
};
const master = async () => {
  const s = new Redis({ host: '127.0.0.1', port: sentinelPort, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  const addr = await s.connect().then(() => s.call('SENTINEL', 'get-master-addr-by-name', 'tele') as Promise<string[] | null>, () => null);
  s.disconnect();
  return addr ? Number(addr[1]) : undefined;
};

beforeAll(async () => {
  primary = await startRedis({ appendonly: true });
  await replicaOf(primary.port);
  await replicaOf(primary.port);
  await waitFor('two replicas in sync', async () => {
    const p = new Redis(primary.url);
    const info = await p.info('replication').catch(() => '');
    p.disconnect();
    return /connected_slaves:2/.test(info) && (info.match(/state=online/g) ?? []).length === 2;
  }, 20_000);
  sentinelPort = await freePort();
  writeFileSync(join(dir, 'sentinel.conf'), [`port ${sentinelPort}`, 'bind 127.0.0.1', `dir ${dir}`, `sentinel monitor tele 127.0.0.1 ${primary.port} 1`, 'sentinel down-after-milliseconds tele 1000', 'sentinel failover-timeout tele 5000'].join('\n') + '\n');
  children.push(spawn('redis-sentinel', [join(dir, 'sentinel.conf')], { stdio: 'ignore' }));
  await waitFor('sentinel', async () => (await master()) === primary.port, 15_000);
  svc = await startTestService({ REDIS_URL: 'redis://unused:1', REDIS_SENTINELS: `127.0.0.1:${sentinelPort}`, REDIS_SENTINEL_MASTER: 'tele', REDIS_WAIT_REPLICAS: '1', ENQUEUE_TIMEOUT: '2s', RETRY_AFTER: '1s' });
}, 60_000);
afterAll(async () => {
  await svc?.close();
  for (const c of children.reverse()) await stopProcess(c).catch(() => {});
  await primary?.stop().catch(() => {});
});

it('loses no acknowledged record when the primary is killed under load', async () => {
  const feedDone = runFeed({ url: svc.url, token: TEST_TOKEN, mode: 'mixed', rate: 300, durationMs: 8_000, bulkSize: 50, vehicles: 6, seed: 3, maxAttempts: 40, maxBackoffMs: 1_000, maxRetryAfterMs: 1_000, keep: true });
  await new Promise((r) => setTimeout(r, 2_000));
  await primary.stop({ signal: 'SIGKILL' });
  await waitUntil(async () => ((await master()) ?? primary.port) !== primary.port, 20_000, 'Sentinel to promote a replica');
  const feed = await feedDone;
  // The sender met the failover and retried through it; every acknowledged record landed.
  await expectFeedLandedThroughFault(inject('influxRawUrl'), svc.cfg.INFLUX_BUCKET, feed, 1_500);
}, 90_000);
