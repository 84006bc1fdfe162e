import { afterAll, beforeAll, expect, it } from 'vitest';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { waitUntil } from '../harness/service.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

it('a worker killed with SIGKILL in the middle of a write: its job is taken again and every record lands exactly once', async () => {
  const receiver = await stack.spawn('receiver');
  stack.influx.front.setWriteDelay(1_500);
  const victim = await stack.spawn('worker');

  const feed = await runFeed({ url: receiver.url, token: TOKEN, mode: 'bulk', bulkSize: 200, count: 1_000, rate: Infinity, vehicles: 12, seed: 7, keep: true });
  expect(feed.acknowledged).toBe(1_000);

  await waitUntil(async () => stack.influx.front.writesStarted() > 0, 10_000, 'a write under way');
  await victim.stop('SIGKILL');
  stack.influx.front.setWriteDelay(0);
  await stack.spawn('worker');

  const r = await stack.settle(feed.records.acknowledged);
  expect(r).toEqual({ expected: 1_000, missing: [], wrong: [], extra: 0 });
});
