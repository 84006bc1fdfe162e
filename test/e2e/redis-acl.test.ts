/**
 * A managed Redis's restricted ACL user (`+@all -@dangerous`: no INFO, no CONFIG), as operators of
 * hosted Redis meet it. Without the version-check skip a worker must not spin: it waits, says why in
 * its log and its health, and stays small. With REDIS_SKIP_VERSION_CHECK=true the service works.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { influxQuery } from '../harness/influx.js';
import { spawnService } from '../harness/proc.js';
import { TEST_TOKEN, testEnv, uniqueName, waitUntil } from '../harness/service.js';

let server: LocalRedis;
let url: string;
beforeAll(async () => {
  server = await startRedis();
  const admin = new Redis(server.url);
  await admin.call('ACL', 'SETUSER', 'app', 'on', '>app-password-0123', '~*', '&*', '+@all', '-@dangerous');
  admin.disconnect();
  url = server.url.replace('redis://', 'redis://app:app-password-0123@');
});
afterAll(async () => server?.stop());

const rssMb = (pid: number) => import('node:fs').then((fs) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);

it('without INFO: no spin, not ready, and says why in /readyz and once in its log', async () => {
  const { spawn } = await import('node:child_process');
  const { freePort } = await import('../../src/devstack/process.js');
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/ingest.ts', 'all'], {
    env: { ...process.env, ...testEnv(uniqueName('acl'), { REDIS_URL: url, LOG_LEVEL: 'warn', PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: '0' }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  try {
    await waitUntil(async () => /Redis refuses what the queue needs/.test(out), 20_000, 'the log line');
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ data: { redis: true, enqueue: false, fetch: false } });
    expect(out).toContain("grant it +info, or set REDIS_SKIP_VERSION_CHECK=true");
    await new Promise((r) => setTimeout(r, 3_000));
    expect(child.exitCode).toBeNull();
    expect(await rssMb(child.pid!)).toBeLessThan(400);
    expect(out.match(/Redis refuses what the queue needs/g)!.length).toBeLessThanOrEqual(2);
  } finally {
    child.kill('SIGKILL');
  }
}, 60_000);

it('works with the version check skipped: pushes land', async () => {
  const db = uniqueName('acl');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const svc = await spawnService('all', testEnv(db, { REDIS_URL: url, REDIS_SKIP_VERSION_CHECK: 'true', LOG_LEVEL: 'warn' }));
  try {
    const res = await fetch(`${svc.url}/push/realtime`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify({ vehicleno: 'ACL-1', type: 'can', data: { time: 1_763_700_000_000, soc: 9 } }) });
    expect(res.status).toBe(202);
    await waitUntil(async () => (await influxQuery(db, 'SELECT soc FROM can')).length === 1, 15_000, 'the point written');
  } finally {
    await svc.stop('SIGKILL');
  }
}, 60_000);
