/**
 * Releases that mix (issue #27): receivers and workers of two releases side by side, as in every
 * rolling upgrade. Receivers write only what every live worker reads; a worker never fails a job it
 * cannot read, it leaves it for one that can. On the run's real Redis and InfluxDB; the older release
 * is this code told to read less (`release`), as the release before a format change would.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { FIELD_DICTIONARY } from '../../src/telemetry/fields.js';
import { rowsOf } from '../../src/ingest/flatten/points.js';
import { encodePointsJob } from '../../src/ingest/queue/codec.js';
import { ReadsAnnouncer } from '../../src/ingest/queue/formats.js';
import { JOB_NAME } from '../../src/ingest/queue/producer.js';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { BACKOFF_TYPE } from '../../src/ingest/queue/retry.js';
import { connectRedis } from '../../src/redis/connect.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const N = FIELD_DICTIONARY.length;
/** The field a release after the older one added at the dictionary's end. */
const NEWEST_FIELD = FIELD_DICTIONARY[N - 1]!;

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const s of running.splice(0).reverse()) await s.close().catch(() => {});
});

async function start(env: Record<string, string>, opts: Parameters<typeof startTestService>[1] = {}): Promise<TestService> {
  const svc = await startTestService({ METRICS_SAMPLE_INTERVAL: '200ms', ...env }, opts);
  running.push(svc);
  return svc;
}

/** Services beside `first`: its queue and database. */
const beside = (first: TestService, env: Record<string, string>) => ({ QUEUE_NAME: first.cfg.QUEUE_NAME, INFLUX_BUCKET: first.cfg.INFLUX_BUCKET, ...env });

/** A sample's value on a service's /metrics (0 when the series has none yet). */
async function metric(svc: TestService, series: string): Promise<number> {
  const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

const queueOf = (svc: TestService) => {
  const q = new Queue(svc.cfg.QUEUE_NAME, { connection: { url: svc.cfg.REDIS_URL } });
  running.push(q);
  return q;
};

describe('a worker of the older format beside a current receiver', () => {
  it('the receiver switches to v2 for it; every record lands within seconds, no job deferred or failed', async () => {
    const receiver = await start({ SERVICE_MODE: 'receiver' });
    expect(await metric(receiver, `telematics_job_format{payload="3",dictionary="${N}"}`)).toBe(1);
    expect(await metric(receiver, `telematics_queue_readers{payloads="1,2,3",dictionary="${N}"}`)).toBe(0);
    const older = await start(beside(receiver, { SERVICE_MODE: 'worker' }), { createDatabase: false, release: { formats: [1, 2], dictionary: N } });
    await waitUntil(async () => (await metric(receiver, `telematics_job_format{payload="2",dictionary="${N}"}`)) === 1, 5_000, 'the receiver writing v2');
    expect(await metric(receiver, `telematics_job_format{payload="3",dictionary="${N}"}`)).toBe(0);
    expect(await metric(receiver, `telematics_queue_readers{payloads="1,2",dictionary="${N}"}`)).toBe(1);

    const started = Date.now();
    const bulk = Array.from({ length: 300 }, (_, i) =>
      i % 2 ? { vehicleno: `A-${i % 7}`, type: 'gps', data: { lat: 12.5 + i / 1000, lng: 77.25, alti: 920, speed: 38.5, ignstatus: 1, time: T0 + i } } : { vehicleno: `A-${i % 7}`, type: 'can', data: { time: T0 + i, soc: i / 4, [NEWEST_FIELD]: 1 } },
    );
    for (let i = 0; i < 3; i++) expect((await receiver.post('/push/bulk', { bulkData: bulk.slice(i * 100, i * 100 + 100) })).status).toBe(202);
    expect(await receiver.waitForRows(`SELECT soc FROM can WHERE vehicleno =~ /^A-/`, 150, 10_000)).toHaveLength(150);
    expect(await receiver.waitForRows(`SELECT lat FROM gps WHERE vehicleno =~ /^A-/`, 150, 10_000)).toHaveLength(150);
    expect(await receiver.query(`SELECT count(${NEWEST_FIELD}) FROM can WHERE vehicleno =~ /^A-/`)).toEqual([{ time: 0, count: 150 }]);
    expect(Date.now() - started).toBeLessThan(10_000);

    expect(await metric(older, 'telematics_jobs_deferred_total{reason="format"}')).toBe(0);
    expect(await metric(older, 'telematics_job_retries_total')).toBe(0);
    expect(await queueOf(receiver).getFailedCount()).toBe(0);
  });
});

describe('a job of a newer release than the worker', () => {
  it('is left for a worker that reads it, never failed, however often it comes back; once readable it lands', async () => {
    const worker = await start({ SERVICE_MODE: 'all', RETRY_BASE_DELAY: '100ms', RETRY_MAX_DELAY: '200ms' });
    const queue = queueOf(worker);
    const opts = { attempts: 2, backoff: { type: BACKOFF_TYPE } };
    const newer = await queue.add(JOB_NAME, { v: 4, n: 1, future: 'a payload this release has never seen' }, opts);
    const rows = rowsOf([{ vehicleno: 'B-1', type: 'can', time: T0 + 1, fields: { soc: 61.5 } }], { temperatureSentinels: [] });
    const bigger = await queue.add(JOB_NAME, { ...encodePointsJob([{ rows, from: 0, to: 1 }]), k: N + 1 }, opts);

    await waitUntil(async () => (await metric(worker, 'telematics_jobs_deferred_total{reason="dictionary"}')) >= 3 && (await metric(worker, 'telematics_jobs_deferred_total{reason="format"}')) >= 3, 15_000, 'three deferrals of each');
    for (const id of [newer.id!, bigger.id!]) {
      const job = (await queue.getJob(id))!;
      expect(job.attemptsMade).toBe(0);
      expect(job.failedReason).toBeUndefined();
      expect(['delayed', 'waiting', 'active', 'prioritized']).toContain(await job.getState());
    }
    expect(await queue.getFailedCount()).toBe(0);
    expect(await metric(worker, 'telematics_job_retries_total')).toBe(0);
    expect(await metric(worker, 'telematics_jobs_failed_total')).toBe(0);

    // Rewritten for this release's dictionary (as a worker that reads it would take it), it is written.
    await (await queue.getJob(bigger.id!))!.updateData({ ...bigger.data, k: N });
    expect(await worker.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'B-1'`, 1, 10_000)).toEqual([{ time: T0 + 1, soc: 61.5 }]);
    await waitUntil(async () => (await (await queue.getJob(bigger.id!))!.getState()) === 'completed', 5_000, 'the job completed');
    expect((await queue.getJob(bigger.id!))!.attemptsMade).toBe(1);
    expect(await queue.getFailedCount()).toBe(0);
    expect((await queue.getJob(newer.id!))!.attemptsMade).toBe(0);
    await (await queue.getJob(newer.id!))!.remove().catch(() => {});
  });
});

describe('a dictionary grown by one field between two releases', () => {
  it('the receiver writes the new field by name for a worker whose dictionary ends before it, which stores its exact value', async () => {
    const receiver = await start({ SERVICE_MODE: 'receiver' });
    const queue = queueOf(receiver);
    // A worker of the older release announces first (its process is started only once the job is looked at).
    const redis = connectRedis(receiver.cfg, 'tool');
    running.push({ close: async () => redis.disconnect() });
    const announcer = new ReadsAnnouncer(redis, redisKeys(receiver.cfg.QUEUE_NAME).readers, { formats: [1, 2, 3], dictionary: N - 1 });
    await announcer.announce();
    await waitUntil(async () => (await metric(receiver, `telematics_job_format{payload="3",dictionary="${N - 1}"}`)) === 1, 5_000, `the receiver writing for dictionary ${N - 1}`);

    const value = 0.123456789012345;
    const res = await receiver.post('/push/bulk', { bulkData: [{ vehicleno: 'C-1', type: 'can', data: { time: T0 + 7, soc: 50, [NEWEST_FIELD]: 1, current: value } }] });
    expect(res.status).toBe(202);
    const [job] = await queue.getJobs(['wait'], 0, -1, true);
    const data = job!.data as { v: number; k: number; t: string };
    expect([data.v, data.k]).toEqual([3, N - 1]);
    expect(data.t).toContain(`;${NEWEST_FIELD}=1`);

    const older = await start(beside(receiver, { SERVICE_MODE: 'worker' }), { createDatabase: false, release: { formats: [1, 2, 3], dictionary: N - 1 } });
    expect(await receiver.waitForRows(`SELECT soc, current, ${NEWEST_FIELD} FROM can WHERE vehicleno = 'C-1'`, 1, 10_000)).toEqual([{ time: T0 + 7, soc: 50, current: value, [NEWEST_FIELD]: 1 }]);
    expect(await metric(older, 'telematics_jobs_deferred_total{reason="dictionary"}')).toBe(0);
    expect(await queue.getFailedCount()).toBe(0);
    await announcer.stop();
  });
});
