/**
 * A rolling upgrade under load, in either order: 10,000 records pushed while receivers and workers of
 * an older release (one that reads no payload v3, and whose dictionary ends one name before this
 * release's) are replaced by this release's. Every record lands exactly once, with its exact values;
 * no job fails. In-process services on the run's Redis and InfluxDB.
 */
import { afterEach, expect, it } from 'vitest';
import { inject } from 'vitest';
import { Queue } from 'bullmq';
import { FIELD_DICTIONARY } from '../../src/telemetry/fields.js';
import type { Reads } from '../../src/ingest/queue/formats.js';
import { startTestService, uniqueName, waitUntil, type TestService } from '../harness/service.js';
import { reconcile, type SentRecord } from '../harness/reconcile.js';
import { influxQuery } from '../harness/influx.js';
import { T0 } from '../harness/time.js';

const N = FIELD_DICTIONARY.length;
const OLDER: Reads = { formats: [1, 2], dictionary: N - 1 };
const RECORDS = 10_000;
const BULK = 200;

const running = new Set<TestService>();
afterEach(async () => {
  for (const s of running) await s.close().catch(() => {});
  running.clear();
});

/** One deployment: its queue and database, shared by every receiver and worker started in it. */
function deployment() {
  const env = { QUEUE_NAME: uniqueName('q'), INFLUX_BUCKET: uniqueName('upgrade'), METRICS_SAMPLE_INTERVAL: '200ms' };
  let first = true;
  const start = async (mode: 'receiver' | 'worker', release?: Reads) => {
    const svc = await startTestService({ ...env, SERVICE_MODE: mode }, { createDatabase: first, ...(release ? { release } : {}) });
    first = false;
    running.add(svc);
    return svc;
  };
  const stop = async (svc: TestService) => {
    running.delete(svc);
    await svc.close();
  };
  return { env, start, stop };
}

/** Record i: CAN records carry the field the older release's dictionary lacks, and one no dictionary has. */
function record(i: number): SentRecord {
  const vehicleno = `U-${i % 40}`;
  const time = T0 + 10 * i;
  return i % 3 === 0
    ? { vehicleno, type: 'gps', data: { lat: 12.9 + (i % 1000) / 1e4, lng: 77.5, alti: 900 + (i % 50), speed: (i % 90) + 0.5, ignstatus: i % 2, time } }
    : { vehicleno, type: 'can', data: { time, soc: (i % 100) + 0.25, current: -((i % 40) / 3), [FIELD_DICTIONARY[N - 1]!]: i % 2, my_probe: i / 7 } };
}

/**
 * Pushes RECORDS records in bulks, one every `everyMs`, each to one of the receivers live at the time;
 * `steps[k]` runs (awaited, while pushes go on) once bulk `at` has been sent.
 */
async function pushWhile(receivers: () => TestService[], steps: Array<{ at: number; run: () => Promise<void> }>, everyMs = 100): Promise<SentRecord[]> {
  const sent: Array<Promise<SentRecord[]>> = [];
  const stepping: Array<Promise<void>> = [];
  for (let b = 0; b * BULK < RECORDS; b++) {
    for (const s of steps) if (s.at === b) stepping.push(s.run());
    const live = receivers();
    const to = live[b % live.length]!;
    const bulk = Array.from({ length: BULK }, (_, i) => record(b * BULK + i));
    sent.push(
      to.post('/push/bulk', { bulkData: bulk }).then(async (res) => {
        expect(res.status, await res.clone().text()).toBe(202);
        return bulk;
      }),
    );
    await new Promise((r) => setTimeout(r, everyMs));
  }
  await Promise.all(stepping);
  return (await Promise.all(sent)).flat();
}

/** Every record a point with its exact values, none other; no job failed or left behind. */
async function landed(env: { QUEUE_NAME: string; INFLUX_BUCKET: string }, sent: readonly SentRecord[]): Promise<void> {
  const count = async (q: string) => Number((await influxQuery(env.INFLUX_BUCKET, q))[0]?.count ?? 0);
  await waitUntil(async () => (await count('SELECT count(soc) FROM can')) + (await count('SELECT count(lat) FROM gps')) >= RECORDS, 20_000, `${RECORDS} points`);
  expect(await reconcile(inject('influxRawUrl'), env.INFLUX_BUCKET, sent)).toEqual({ expected: RECORDS, missing: [], wrong: [], extra: 0 });
  const queue = new Queue(env.QUEUE_NAME, { connection: { url: inject('redisUrl') } });
  try {
    expect(await queue.getFailedCount()).toBe(0);
    expect(await queue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(0);
  } finally {
    await queue.close();
  }
}

async function metric(svc: TestService, series: string): Promise<number> {
  const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

it('receivers first: the new receivers write v2 while an older worker lives, v3 once the last is replaced', async () => {
  const d = deployment();
  const r0 = await d.start('receiver', OLDER);
  const w0 = await d.start('worker', OLDER);
  let receivers = [r0];
  let r1: TestService | undefined;
  let w1: TestService | undefined;
  const sent = await pushWhile(() => receivers, [
    {
      at: 8,
      run: async () => {
        r1 = await d.start('receiver');
        receivers = [r0, r1];
      },
    },
    {
      at: 16,
      run: async () => {
        receivers = [r1!];
        await d.stop(r0);
        expect(await metric(r1!, `telematics_job_format{payload="2",dictionary="${N - 1}"}`)).toBe(1);
      },
    },
    { at: 24, run: async () => void (w1 = await d.start('worker')) },
    { at: 36, run: () => d.stop(w0) },
  ]);
  await landed(d.env, sent);
  await waitUntil(async () => (await metric(r1!, `telematics_job_format{payload="3",dictionary="${N}"}`)) === 1, 5_000, 'the receiver back to v3');
  expect(await metric(w1!, 'telematics_job_retries_total')).toBe(0);
});

it('workers first: the new workers read what the older receivers write; the new receivers write v3', async () => {
  const d = deployment();
  const r0 = await d.start('receiver', OLDER);
  const w0 = await d.start('worker', OLDER);
  let receivers = [r0];
  let w1: TestService | undefined;
  let r1: TestService | undefined;
  const sent = await pushWhile(() => receivers, [
    { at: 8, run: async () => void (w1 = await d.start('worker')) },
    { at: 16, run: () => d.stop(w0) },
    {
      at: 24,
      run: async () => {
        r1 = await d.start('receiver');
        receivers = [r0, r1];
      },
    },
    {
      at: 36,
      run: async () => {
        receivers = [r1!];
        await d.stop(r0);
      },
    },
  ]);
  await landed(d.env, sent);
  expect(await metric(r1!, `telematics_job_format{payload="3",dictionary="${N}"}`)).toBe(1);
  expect(await metric(w1!, 'telematics_jobs_deferred_total{reason="format"}')).toBe(0);
  expect(await metric(w1!, 'telematics_job_retries_total')).toBe(0);
});
