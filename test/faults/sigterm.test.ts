import { afterAll, beforeAll, expect, it } from 'vitest';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { reconcile } from '../harness/reconcile.js';
import { waitUntil } from '../harness/service.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ SHUTDOWN_GRACE: '10s' });
});
afterAll(async () => stack?.stop());

it('SIGTERM on a receiver under load: it stops taking pushes, answers those in flight, exits in time, and every acknowledged record lands', async () => {
  const receiver = await stack.spawn('receiver');
  const feed = runFeed({ url: receiver.url, token: TOKEN, mode: 'mixed', bulkSize: 50, durationMs: 3_000, rate: Infinity, concurrency: 8, maxAttempts: 1, seed: 21, keep: true });
  await new Promise((r) => setTimeout(r, 700));
  const t = Date.now();
  expect(await receiver.stop('SIGTERM')).toBe(0);
  expect(Date.now() - t).toBeLessThan(10_000);
  const result = await feed;
  expect(result.acknowledged).toBeGreaterThan(0);
  expect(result.failed).toBeGreaterThan(0); // pushes after the stop were refused, not half-taken
  expect(result.unconfirmed).toBe(0);

  await stack.spawn('worker');
  const r = await stack.settle(result.records.acknowledged);
  expect(r).toEqual({ expected: result.acknowledged, missing: [], wrong: [], extra: 0 });
}, 60_000);

it('SIGTERM on a worker in the middle of a write: it finishes the job before it exits', async () => {
  for (const p of stack.procs) await p.stop('SIGKILL');
  // A queue of its own: the one job in it is this test's.
  const queue = { QUEUE_NAME: `${stack.env.QUEUE_NAME!}-sigterm` };
  const receiver = await stack.spawn('receiver', queue);
  const feed = await runFeed({ url: receiver.url, token: TOKEN, mode: 'bulk', bulkSize: 300, count: 300, rate: Infinity, seed: 22, keep: true });
  expect(feed.acknowledged).toBe(300);
  // The write waited for is the job's (records), not one of vehicle events derived from an earlier test's.
  const records = ['gps', 'can'];
  const before = stack.influx.front.writesStarted(records);
  stack.influx.front.setWriteDelay(2_000);
  const worker = await stack.spawn('worker', queue);
  await waitUntil(async () => stack.influx.front.writesStarted(records) > before, 10_000, 'the write under way');
  expect(await worker.stop('SIGTERM')).toBe(0);
  stack.influx.front.setWriteDelay(0);
  // No other worker ran: the points are there because the stopping worker finished its job.
  const r = await reconcile(stack.influx.rawUrl, stack.db, feed.records.acknowledged);
  expect(r.missing).toEqual([]);
  expect(r.wrong).toEqual([]);
}, 60_000);
