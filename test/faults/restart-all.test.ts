import { afterAll, beforeAll, expect, it } from 'vitest';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { freePort } from '../../src/devstack/process.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

it('everything killed and restarted mid-stream, Redis with AOF: nothing acknowledged is lost or duplicated', async () => {
  const port = String(await freePort());
  const receiver = await stack.spawn('receiver', { PORT: port });
  const worker = await stack.spawn('worker');
  // A slow store keeps records queued in Redis when the lights go out.
  stack.influx.front.setWriteDelay(300);

  const feed = runFeed({
    url: receiver.url, token: TOKEN, mode: 'mixed', bulkSize: 100, durationMs: 6_000, rate: 400,
    concurrency: 4, seed: 31, vehicles: 20, maxAttempts: 30, backoffMs: 200, maxBackoffMs: 1_000, keep: true,
  });
  await new Promise((r) => setTimeout(r, 2_000));
  await Promise.all([receiver.stop('SIGKILL'), worker.stop('SIGKILL'), stack.redis.stop({ signal: 'SIGKILL', keepData: true })]);
  await new Promise((r) => setTimeout(r, 500));
  await stack.redis.restart();
  stack.influx.front.setWriteDelay(0);
  await Promise.all([stack.spawn('receiver', { PORT: port }), stack.spawn('worker')]);

  const result = await feed;
  expect(result.failed).toBe(0);
  expect(result.unconfirmed).toBe(0);
  expect(result.retries).toBeGreaterThan(0);
  const r = await stack.settle(result.records.acknowledged);
  expect(r).toEqual({ expected: result.acknowledged, missing: [], wrong: [], extra: 0 });
  expect(result.acknowledged).toBe(result.sent);
}, 90_000);
