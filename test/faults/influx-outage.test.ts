import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { countPoints } from '../harness/reconcile.js';
import { waitUntil } from '../harness/service.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

it('InfluxDB down: the receiver keeps accepting, jobs retry with backoff past many attempts, and everything lands after it returns', async () => {
  const receiver = await stack.spawn('receiver');
  const worker = await stack.spawn('worker');
  await stack.influx.stopServer();
  await waitUntil(async () => (await fetch(`${worker.url}/readyz`)).status === 503, 10_000, 'worker not ready without InfluxDB');

  const feed = await runFeed({ url: receiver.url, token: TOKEN, mode: 'mixed', bulkSize: 100, count: 600, rate: 300, vehicles: 8, seed: 11, keep: true });
  expect(feed.acknowledged).toBe(600);
  expect(feed.failedDeliveries).toBe(0);

  // Retries are bounded by time (RETRY_SPAN, hours), not a small count: once a job has failed five
  // times (delays capped at 1 s: seconds), none has become a dead letter.
  const queue = new Queue(stack.env.QUEUE_NAME!, { connection: { url: stack.redis.url } });
  await waitUntil(async () => {
    const jobs = await queue.getJobs(['delayed', 'wait', 'active']);
    return jobs.length > 0 && Math.max(...jobs.map((j) => j.attemptsMade)) >= 5;
  }, 30_000, 'a job to fail five times while InfluxDB is down');
  expect(await queue.getFailedCount()).toBe(0);
  expect(await countPoints(stack.influx.rawUrl, stack.db)).toBe(0);

  await stack.influx.startServer();
  const r = await stack.settle(feed.records.acknowledged);
  expect(r).toEqual({ expected: 600, missing: [], wrong: [], extra: 0 });
  expect(await queue.getFailedCount()).toBe(0);
  await queue.close();
}, 90_000);
