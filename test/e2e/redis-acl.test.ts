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
import { T0 } from '../harness/time.js';

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
    const res = await fetch(`${svc.url}/push/realtime`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify({ vehicleno: 'ACL-1', type: 'can', data: { time: T0, soc: 9 } }) });
    expect(res.status).toBe(202);
    await waitUntil(async () => (await influxQuery(db, 'SELECT soc FROM can')).length === 1, 15_000, 'the point written');
  } finally {
    await svc.stop('SIGKILL');
  }
}, 60_000);

const cpuSeconds = (pid: number) =>
  import('node:fs').then((fs) => {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 10 ms
  });

it('a fetch Redis refuses mid-run (READONLY, as during a failover): backs off, not ready, one log line; works again after', async () => {
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const db = uniqueName('ro');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const svc = await spawnService('all', testEnv(db, { REDIS_URL: redis.url, LOG_LEVEL: 'warn' }));
  const push = (soc: number) => fetch(`${svc.url}/push/realtime`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify({ vehicleno: 'RO-1', type: 'can', data: { time: T0 + soc, soc } }) });
  try {
    // The node becomes a replica of a master that is not there: every write, the worker's fetch included, is refused.
    const { freePort } = await import('../../src/devstack/process.js');
    await admin.call('REPLICAOF', '127.0.0.1', String(await freePort()));
    await waitUntil(async () => /Redis refused the worker’s fetch/.test(svc.output()), 10_000, 'the log line');
    const before = await cpuSeconds(svc.child.pid!);
    await new Promise((r) => setTimeout(r, 4_000));
    const used = (await cpuSeconds(svc.child.pid!)) - before;
    expect(used / 4).toBeLessThan(0.25);
    expect(svc.output().match(/Redis refused the worker’s fetch/g)).toHaveLength(1);
    expect(svc.output()).toMatch(/"err":"(UNBLOCKED|READONLY)/);
    const ready = await fetch(`${svc.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ data: { fetch: false } });
    expect((await push(1)).status).toBe(503);

    await admin.call('REPLICAOF', 'NO', 'ONE');
    await waitUntil(async () => (await push(2)).status === 202, 10_000, 'pushes accepted again');
    await waitUntil(async () => (await influxQuery(db, 'SELECT soc FROM can')).length === 1, 40_000, 'the point written once the worker resumed');
    await waitUntil(async () => (await fetch(`${svc.url}/readyz`)).status === 200, 10_000, 'ready again');
  } finally {
    await svc.stop('SIGKILL');
    admin.disconnect();
    await redis.stop();
  }
}, 90_000);

it('never logs a Redis password, one holding @ included', async () => {
  const admin = new Redis(server.url);
  await admin.call('ACL', 'SETUSER', 'app2', 'on', '>app@pass-w0rd-9876', '~*', '&*', '+@all');
  admin.disconnect();
  const db = uniqueName('acl');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const svc = await spawnService('all', testEnv(db, { REDIS_URL: server.url.replace('redis://', 'redis://app2:app@pass-w0rd-9876@'), LOG_LEVEL: 'debug' }));
  try {
    const res = await fetch(`${svc.url}/push/realtime`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify({ vehicleno: 'ACL-2', type: 'can', data: { time: T0, soc: 9 } }) });
    expect(res.status).toBe(202);
    await waitUntil(async () => (await influxQuery(db, 'SELECT soc FROM can')).length === 1, 15_000, 'the point written');
    expect(svc.output()).toContain('"redis":"redis://');
    expect(svc.output()).not.toContain('pass-w0rd');
  } finally {
    await svc.stop();
  }
}, 60_000);
