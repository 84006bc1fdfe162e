import { afterAll, beforeAll, expect, it } from 'vitest';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { reconcile } from '../harness/reconcile.js';
import { waitUntil } from '../harness/service.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ SHUTDOWN_GRACE: '10s', EVENTS: 'off' });
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
  const receiver = await stack.spawn('receiver');
  const feed = await runFeed({ url: receiver.url, token: TOKEN, mode: 'bulk', bulkSize: 300, count: 300, rate: Infinity, seed: 22, keep: true });
  expect(feed.acknowledged).toBe(300);
  const before = stack.influx.front.writesStarted();
  stack.influx.front.setWriteDelay(2_000);
  // Without vehicle events, whose outbox writes could be the first write seen: the write waited for must be the job's.
  const worker = await stack.spawn('worker', { EVENTS: 'off' });
  await waitUntil(async () => stack.influx.front.writesStarted() > before, 10_000, 'the write under way');
  expect(await worker.stop('SIGTERM')).toBe(0);
  stack.influx.front.setWriteDelay(0);
  // No other worker ran: the points are there because the stopping worker finished its job.
  const r = await reconcile(stack.influx.rawUrl, stack.db, feed.records.acknowledged);
  expect(r.missing).toEqual([]);
  expect(r.wrong).toEqual([]);
}, 60_000);
