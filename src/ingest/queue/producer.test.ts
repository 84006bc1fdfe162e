import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { decodeJob } from './codec.js';
import { EnqueueError, PartitionedProducer, Producer } from './producer.js';
import { partitionOf } from './keys.js';
import { attemptsForSpan, BACKOFF_TYPE } from './retry.js';

/** On the run's real Redis: grouping of concurrent pushes into jobs, and nothing lost or reordered. */
let redis: Redis;
const producers: Producer[] = [];

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'), { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
});
afterAll(async () => {
  for (const p of producers) await p.close();
  redis.disconnect();
});

function producer(maxRecordsPerJob = 1_000, lingerMs = 0): Producer {
  const p = new Producer(redis, {
    queueName: `producer_${randomBytes(4).toString('hex')}`,
    maxRecordsPerJob,
    flatten: { temperatureSentinels: [] },
    lingerMs,
    timeoutMs: 5_000,
    retry: { spanMs: 3_600_000, baseMs: 1_000, maxMs: 60_000 },
  });
  producers.push(p);
  return p;
}

const record = (i: number): TelemetryRecord => ({ vehicleno: `V${i % 7}`, type: i % 2 ? 'can' : 'gps', time: 1_763_700_000_000 + i, fields: { soc: i, lat: i / 10 } });

async function queued(p: Producer): Promise<TelemetryRecord[][]> {
  const jobs = await p.queue.getJobs(['wait'], 0, -1, true);
  return jobs.map((j) => decodeJob(j.data));
}

describe('Producer', () => {
  it('puts the records of many concurrent pushes into a few jobs, losing and duplicating none', async () => {
    const p = producer();
    await Promise.all(Array.from({ length: 300 }, (_, i) => p.enqueue([record(i)])));
    const jobs = await queued(p);
    expect(jobs.length).toBeLessThan(30);
    const times = jobs.flat().map((r) => r.time).sort((a, b) => a - b);
    expect(times).toEqual(Array.from({ length: 300 }, (_, i) => record(i).time));
    expect(jobs.flat().find((r) => r.time === record(5).time)).toEqual(record(5));
  });

  it('under load lingers (ENQUEUE_LINGER) to gather records into fewer jobs, losing none; idle, sends at once', async () => {
    // Open loop, as realtime senders push: a record about every millisecond for 300 ms.
    const stream = async (p: Producer) => {
      const sent: Array<Promise<void>> = [];
      for (let i = 0; i < 250; i++) {
        sent.push(p.enqueue([record(i)]));
        await new Promise((r) => setTimeout(r, 1));
      }
      await Promise.all(sent);
      return queued(p);
    };
    const plain = await stream(producer(1_000, 0));
    const lingering = await stream(producer(1_000, 8));
    expect(lingering.length).toBeLessThan(plain.length / 2);
    expect(lingering.flat().map((r) => r.time).sort((a, b) => a - b)).toEqual(Array.from({ length: 250 }, (_, i) => record(i).time));

    // Idle: sent at once, well before a linger of two seconds (a margin no loaded machine eats up).
    const idle = producer(1_000, 2_000);
    const t0 = performance.now();
    await idle.enqueue([record(1)]);
    expect(performance.now() - t0).toBeLessThan(1_000);
  });

  it('never makes a job larger than JOB_MAX_RECORDS', async () => {
    const p = producer(1_000);
    await p.enqueue(Array.from({ length: 2_500 }, (_, i) => record(i)));
    const sizes = (await queued(p)).map((j) => j.length).sort((a, b) => b - a);
    expect(sizes).toEqual([1_000, 1_000, 500]);
  });

  it('settles nothing before Redis confirmed, and close() waits for what is in flight', async () => {
    const p = producer();
    let settled = 0;
    const all = Array.from({ length: 50 }, (_, i) => p.enqueue([record(i)]).then(() => settled++));
    expect(settled).toBe(0);
    await p.close();
    await Promise.all(all);
    expect(settled).toBe(50);
    expect((await queued(p)).flat()).toHaveLength(50);
  });

  it('gives a job the retry options whether it went alone (add) or with others (addBulk)', async () => {
    const p = producer(1_000);
    await p.enqueue([record(1)]);
    await p.enqueue(Array.from({ length: 1_500 }, (_, i) => record(i)));
    const jobs = await p.queue.getJobs(['wait'], 0, -1, true);
    expect(jobs.map((j) => decodeJob(j.data).length).sort((a, b) => a - b)).toEqual([1, 500, 1_000]);
    for (const j of jobs) {
      expect(j.opts).toMatchObject({
        attempts: attemptsForSpan({ spanMs: 3_600_000, baseMs: 1_000, maxMs: 60_000 }),
        backoff: { type: BACKOFF_TYPE },
        removeOnComplete: true,
        removeOnFail: false,
      });
    }
  });
});

describe('PartitionedProducer', () => {
  it('sends each vehicle’s records to its partition, every record once', async () => {
    const parts = [producer(), producer(), producer()];
    const pp = new PartitionedProducer(parts);
    const records = Array.from({ length: 140 }, (_, i) => record(i));
    await Promise.all([pp.enqueue(records.slice(0, 70)), pp.enqueue(records.slice(70))]);
    for (let i = 0; i < 3; i++) {
      const got = (await queued(parts[i]!)).flat().sort((a, b) => a.time - b.time);
      expect(got).toEqual(records.filter((r) => partitionOf(r.vehicleno, 3) === i));
    }
  });

  it('rejects a push when one partition it touched did not confirm, though the others did', async () => {
    // A connection to a port nothing listens on: that partition's enqueue fails at once, as when its
    // master is gone. (A lazy connection to the test's Redis would connect during the first enqueue,
    // and the next would pass on a loaded machine.)
    const closed = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => null });
    const healthy = producer();
    const broken = new Producer(closed, { queueName: `producer_${randomBytes(4).toString('hex')}`, maxRecordsPerJob: 1_000, flatten: { temperatureSentinels: [] }, timeoutMs: 5_000, retry: { spanMs: 3_600_000, baseMs: 1_000, maxMs: 60_000 } });
    const pp = new PartitionedProducer([healthy, broken]);
    const records = Array.from({ length: 40 }, (_, i) => record(i));
    expect(new Set(records.map((r) => partitionOf(r.vehicleno, 2)))).toEqual(new Set([0, 1]));
    await expect(pp.enqueue(records)).rejects.toBeInstanceOf(EnqueueError);
    await expect(pp.enqueueOnce(records, { id: 'once', ttlMs: 60_000 })).rejects.toBeInstanceOf(EnqueueError);
    // A push that touches only the healthy partition is confirmed.
    await pp.enqueue(records.filter((r) => partitionOf(r.vehicleno, 2) === 0));
    expect((await queued(healthy)).flat().length).toBeGreaterThan(0);
    await broken.queue.close().catch(() => {});
    closed.disconnect();
  });
});
