import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { Backlog, queuedJobs } from './backlog.js';

/** On the run's real Redis: the backlog summed over partitions, read under BullMQ's own key names. */
let redis: Redis;
const queues: Queue[] = [];

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'), { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
});
afterAll(async () => {
  for (const q of queues) await q.obliterate({ force: true }).then(() => q.close());
  redis.disconnect();
});

it('sums the partitions, finds the oldest waiting job under a configured prefix, and shares a fresh measurement', async () => {
  const name = `backlog_${randomBytes(4).toString('hex')}`;
  // A prefix other than BullMQ's default `bull`: key names must come from the queue, not be spelled out.
  for (const p of ['a', 'b']) queues.push(new Queue(`${name}-${p}`, { connection: redis, prefix: 'acme' }));
  const [a, b] = queues as [Queue, Queue];
  const first = await b.add('records', { n: 1 });
  await new Promise((r) => setTimeout(r, 5));
  await a.add('records', { n: 2 });
  await a.add('records', { n: 3 }, { delay: 60_000 });
  await redis.xadd(`${name}:quarantine`, '*', 'k', 'v');

  const backlog = new Backlog(queues, redis, `${name}:quarantine`);
  const s = await backlog.read();
  expect(s.counts).toMatchObject({ waiting: 2, delayed: 1, active: 0, failed: 0 });
  expect(queuedJobs(s)).toBe(3);
  expect(s.oldestWaitingAt).toBe(first.timestamp);
  expect(s.quarantined).toBe(1);

  await b.add('records', { n: 4 });
  expect(await backlog.read(60_000)).toBe(s);
  expect((await backlog.read(0)).counts.waiting).toBe(3);
  await redis.del(`${name}:quarantine`);
});
