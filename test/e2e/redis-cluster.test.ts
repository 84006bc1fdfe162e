import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { partitionOf, redisKeys } from '../../src/ingest/queue/keys.js';
import { keySlot } from '../../src/redis/slots.js';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { influxQuery } from '../harness/influx.js';
import { reconcile, type SentRecord } from '../harness/reconcile.js';
import { startRedisCluster, type LocalCluster } from '../harness/redisCluster.js';
import { startTestService, uniqueName, waitUntil, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';
import { writeStatusChanges } from '../../src/ingest/fleet/changes.js';
import { fleetStateFor } from '../../src/ingest/fleet/state.js';
import { InfluxSink } from '../../src/ingest/write/influx.js';
import { connectRedis } from '../../src/redis/connect.js';

/**
 * The service on a real Redis Cluster (3 masters, a replica each, from Debian's redis-server), as an
 * operator who sets REDIS_CLUSTER_NODES finds it: pushes land exactly, partitions spread over the
 * masters, and the quarantine, admission, fuel sync and dead-letter CLI work.
 */

const run = promisify(execFile);
let cluster: LocalCluster;
const open: TestService[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1 });
}, 60_000);
afterAll(async () => {
  for (const s of open.reverse()) await s.close().catch(() => {});
  await cluster?.stop();
});

async function service(env: Record<string, string>, opts: { createDatabase?: boolean } = {}): Promise<TestService> {
  const svc = await startTestService({ REDIS_CLUSTER_NODES: cluster.seeds.join(','), ...env }, opts);
  open.push(svc);
  return svc;
}

async function deadletter(svc: TestService, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_CLUSTER_NODES: svc.cfg.REDIS_CLUSTER_NODES.join(','), QUEUE_NAME: svc.cfg.QUEUE_NAME, QUEUE_PARTITIONS: String(svc.cfg.QUEUE_PARTITIONS) };
  delete env.REDIS_URL;
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cmd/deadletter.ts', ...args], { env });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** A GPS and a CAN record for each of `n` vehicles, values derived from the index so each is checkable. */
function fleetRecords(prefix: string, n: number, t: number): SentRecord[] {
  const out: SentRecord[] = [];
  for (let i = 0; i < n; i++) {
    const vehicleno = `${prefix}-${String(i).padStart(3, '0')}`;
    out.push({ vehicleno, type: 'gps', data: { time: t + i, lat: 10 + i / 1000, lng: 70 + i / 100, alti: i, speed: i % 90, ignstatus: i % 2 } });
    out.push({ vehicleno, type: 'can', data: { time: t + i, soc: 20 + (i % 80), battery_voltage: 48 + i / 100, current: -i / 10 } });
  }
  return out;
}

/** Waiting jobs per master, found by scanning each master for the deployment's wait lists. */
async function waitingByMaster(queueName: string): Promise<Map<number, { lists: string[]; jobs: number }>> {
  const byMaster = new Map<number, { lists: string[]; jobs: number }>();
  for (const port of await cluster.masterPorts()) {
    byMaster.set(
      port,
      await cluster.onNode(port, async (node) => {
        const lists = (await node.keys(`bull:${queueName}{*}:wait`)).sort();
        let jobs = 0;
        for (const l of lists) jobs += await node.llen(l);
        return { lists, jobs };
      }),
    );
  }
  return byMaster;
}

it('spreads QUEUE_PARTITIONS=6 over all three masters and lands every bulk and realtime record exactly', async () => {
  const QUEUE_NAME = uniqueName('qc');
  const db = uniqueName('cluster');
  // A receiver alone first, so the jobs stay in Redis to be counted on each node.
  const receiver = await service({ SERVICE_MODE: 'receiver', QUEUE_NAME, QUEUE_PARTITIONS: '6', INFLUX_BUCKET: db, METRICS_SAMPLE_INTERVAL: '200ms' });
  const records = fleetRecords('CL', 120, T0);
  for (let i = 0; i < 200; i += 50) {
    const res = await receiver.post('/push/bulk', { bulkData: records.slice(i, i + 50) });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ status: 'SUCCESS', data: { accepted: 50, rejected: [] } });
  }
  // The rest one by one, as realtime senders push.
  for (const r of records.slice(200)) expect((await receiver.post('/push/realtime', r)).status).toBe(202);

  const partitions = redisKeys(QUEUE_NAME, { partitions: 6, cluster: true }).partitions;
  // The service's slot arithmetic is Redis's own: its keys, and keys with odd or empty tags.
  const odd = ['', 'a', 'a{b', '{}x', 'x{}{y}', 'a{{b}c}', 'ü{ö}', `k${'é'.repeat(40)}`, 'bull:q{p3.11}:wait', '{a}{b}'];
  const askRedis = (key: string) => cluster.onNode(port0, (n) => n.cluster('KEYSLOT', key));
  const port0 = (await cluster.masterPorts())[0]!;
  for (const key of [...partitions, ...odd]) expect([key, await askRedis(key)]).toEqual([key, keySlot(key)]);
  const byMaster = await waitingByMaster(QUEUE_NAME);
  expect(byMaster.size).toBe(3);
  for (const [, { lists, jobs }] of byMaster) {
    // Two partitions on each master, every one holding jobs.
    expect(lists).toHaveLength(2);
    expect(jobs).toBeGreaterThanOrEqual(2);
  }
  expect([...byMaster.values()].flatMap((m) => m.lists).sort()).toEqual(partitions.map((p) => `bull:${p}:wait`).sort());
  // The operator's gauge is the sum over the partitions, as counted on the nodes.
  const total = [...byMaster.values()].reduce((n, m) => n + m.jobs, 0);
  await waitUntil(async () => new RegExp(`^telematics_queue_jobs\\{state="waiting"\\} ${total}$`, 'm').test(await (await fetch(`${receiver.adminUrl}/metrics`)).text()), 5_000, `the waiting gauge at ${total}`);

  await service({ SERVICE_MODE: 'worker', QUEUE_NAME, QUEUE_PARTITIONS: '6', INFLUX_BUCKET: db }, { createDatabase: false });
  await waitUntil(async () => [...(await waitingByMaster(QUEUE_NAME)).values()].every((m) => m.jobs === 0), 30_000, 'the queues to drain');
  await waitUntil(async () => (await reconcile(inject('influxRawUrl'), db, records)).missing.length === 0, 20_000, 'every record in InfluxDB');
  expect(await reconcile(inject('influxRawUrl'), db, records)).toEqual({ expected: 240, missing: [], wrong: [], extra: 0 });
}, 90_000);

it('quarantines invalid records, sheds by summed depth and by each master’s memory, with one partition', async () => {
  const svc = await service({ SERVICE_MODE: 'receiver', QUEUE_MAX_JOBS: '3' });
  const good = fleetRecords('CQ', 2, T0);
  const bad = { vehicleno: 'CQ-BAD', type: 'gps', data: { time: T0, lat: 123, lng: 0, alti: 0, speed: 0, ignstatus: 0 } };
  const res = await svc.post('/push/bulk', { bulkData: [...good, bad] });
  expect(res.status).toBe(202);
  expect(await res.json()).toMatchObject({ status: 'SUCCESS', data: { accepted: 4, rejected: [{ index: 4, error: 'data.lat: must be between -90 and 90' }] } });
  const listed = await deadletter(svc, 'list', '--json');
  expect(listed.stderr).toBe('');
  expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ source: 'quarantine', stage: 'receive', reason: 'data.lat: must be between -90 and 90' })]);

  // No worker runs: jobs pile up until the sampled depth reaches QUEUE_MAX_JOBS.
  let sent = 0;
  await waitUntil(async () => {
    const r = await svc.post('/push/realtime', fleetRecords('CQ2', 1, T0 + ++sent)[0]);
    if (r.status !== 202 && r.status !== 429) throw new Error(`unexpected ${r.status}: ${await r.text()}`);
    return r.status === 429;
  }, 15_000, 'a 429 once 3 jobs wait');

  const tight = await service({ SERVICE_MODE: 'receiver', REDIS_MEMORY_LIMIT: '1' });
  await waitUntil(async () => (await tight.post('/push/realtime', good[0])).status === 503, 10_000, 'a 503 at the memory bound');
  const shed = await tight.post('/push/realtime', good[0]);
  expect(shed.headers.get('retry-after')).toBe('5');
  expect(((await shed.json()) as { msg: string }).msg).toMatch(/^Redis memory of master 127\.0\.0\.1:\d+ \d+ bytes is at its bound of 1; retry later$/);
}, 60_000);

it('runs the fuel sync on its scheduler and lists, replays failed jobs by job:<partition>:<id>', async () => {
  // The scheduled sync asks for the hour before now: the emulator's fleet lives in real time.
  const emulator = await startEmulator({ seed: 4, vehicles: 3 });
  try {
    const fuel = await service({ UPSTREAM_URL: emulator.url, UPSTREAM_TOKEN: emulator.token, FUEL_SYNC_INTERVAL: '1s', FUEL_SYNC_LOOKBACK: '1h' });
    await waitUntil(async () => (await fuel.query('SELECT value FROM fuel')).length >= 3 * 12, 20_000, 'scheduled fuel sync on the cluster');
  } finally {
    await emulator.close();
  }

  // The database does not exist yet: writes fail past the retry span and the jobs become dead letters.
  const svc = await service({ QUEUE_PARTITIONS: '3', RETRY_SPAN: '1s', RETRY_BASE_DELAY: '100ms', RETRY_MAX_DELAY: '200ms' }, { createDatabase: false });
  const records = fleetRecords('CD', 30, T0);
  expect((await svc.post('/push/bulk', { bulkData: records })).status).toBe(202);
  let jobs: Array<{ id: string; records: number }> = [];
  await waitUntil(async () => {
    jobs = (JSON.parse((await deadletter(svc, 'list', '--json', '--source', 'failed')).stdout) as typeof jobs);
    return jobs.reduce((n, j) => n + j.records, 0) === records.length;
  }, 20_000, 'every job to fail for good');
  expect(new Set(jobs.map((j) => j.id.split(':')[1])).size).toBe(3);
  for (const j of jobs) expect(j.id).toMatch(/^job:[0-2]:\d+$/);
  const shown = await deadletter(svc, 'show', jobs[0]!.id, '--json');
  expect(shown.code).toBe(0);
  const detail = JSON.parse(shown.stdout) as { item: { id: string; records: number }; records: Array<{ vehicleno: string }> };
  expect(detail.item).toMatchObject({ id: jobs[0]!.id, records: jobs[0]!.records });
  expect(detail.records.every((r) => r.vehicleno.startsWith('CD-'))).toBe(true);

  await influxQuery(svc.cfg.INFLUX_BUCKET, `CREATE DATABASE "${svc.cfg.INFLUX_BUCKET}"`);
  const replayed = await deadletter(svc, 'replay', '--all', '--source', 'failed');
  expect(replayed.code).toBe(0);
  await waitUntil(async () => (await reconcile(inject('influxRawUrl'), svc.cfg.INFLUX_BUCKET, records)).missing.length === 0, 20_000, 'the replayed records in InfluxDB');
  expect(await reconcile(inject('influxRawUrl'), svc.cfg.INFLUX_BUCKET, records)).toEqual({ expected: 60, missing: [], wrong: [], extra: 0 });
  expect(JSON.parse((await deadletter(svc, 'list', '--json')).stdout)).toEqual([]);
}, 90_000);

it('keeps each vehicle’s last-seen state beside its partition, on that partition’s master, and finds the silent ones with a set clock', async () => {
  const QUEUE_NAME = uniqueName('qf');
  const db = uniqueName('clfleet');
  const svc = await service({ QUEUE_NAME, QUEUE_PARTITIONS: '3', INFLUX_BUCKET: db, FLEET_STATUS_INTERVAL: '1h' });
  const now = Date.now();
  // Twelve vehicles report now; three of them last reported two hours ago.
  const fresh = fleetRecords('CF', 12, now - 60_000).filter((r) => Number(r.vehicleno.slice(3)) >= 3);
  const old = fleetRecords('CF', 3, now - 2 * 3_600_000);
  const res = await svc.post('/push/bulk', { bulkData: [...old, ...fresh] });
  expect(await res.json()).toMatchObject({ data: { accepted: 24, rejected: [] } });

  const fleet = fleetStateFor(svc.cfg, clusterClient(svc));
  await waitUntil(async () => (await fleet.counts(now, [3_600_000])).known === 12, 20_000, 'twelve vehicles seen');
  expect(await fleet.counts(now, [60 * 60_000, 3 * 3_600_000])).toEqual({ known: 12, silent: [3, 0] });
  expect((await fleet.silent(now, 3_600_000, 100)).map((v) => [v.vehicleno, v.lastSeen, v.position?.lat])).toEqual([
    ['CF-000', now - 2 * 3_600_000, 10],
    ['CF-001', now - 2 * 3_600_000 + 1, 10.001],
    ['CF-002', now - 2 * 3_600_000 + 2, 10.002],
  ]);
  // Each partition's fleet keys hash to its queue's slot, so one script updates them on the queue's master.
  const partitions = redisKeys(QUEUE_NAME, { partitions: 3, cluster: true }).partitions;
  for (const [i, k] of fleet.partitions.entries()) {
    expect(keySlot(k.seen)).toBe(keySlot(partitions[i]!));
    expect(keySlot(k.positions)).toBe(keySlot(partitions[i]!));
    expect(keySlot(k.resumed)).toBe(keySlot(partitions[i]!));
  }
  // The status job, run as the scheduler runs it, at a clock set an hour on: nine more vehicles fall silent.
  const sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 });
  const later = await writeStatusChanges(fleet, sink, svc.cfg.SILENT_AFTER, now + 3_600_000);
  expect(later.silent).toEqual({ '15m': 12, '1h': 12, '24h': 0 });
  expect(await influxQuery(db, `SELECT count("silent") FROM "fleet_status" WHERE "after" = '1h'`)).toMatchObject([{ count: 12 }]);
  // One comes back a minute later (recorded as a worker would at that clock): told back at that record, by the partition's scripts.
  await fleet.record(partitionOf('CF-000', 3), [{ vehicleno: 'CF-000', type: 'gps', time: now + 3_660_000, lat: 10, lng: 70 }], now + 3_660_000);
  const told: Array<{ vehicleno: string; event: string; time: number }> = [];
  await writeStatusChanges(fleet, sink, svc.cfg.SILENT_AFTER, now + 3_720_000, async (e) => void told.push(...e));
  await sink.close();
  expect(told.map((e) => [e.vehicleno, e.event, e.time])).toEqual([['CF-000', 'back', now + 3_660_000]]);
}, 60_000);

function clusterClient(svc: TestService) {
  const c = connectRedis(svc.cfg, 'tool');
  c.on('error', () => {});
  closers.push(() => c.disconnect());
  return c;
}
const closers: Array<() => void> = [];
afterAll(() => closers.forEach((c) => c()));
