import { afterAll, beforeAll, expect, it } from 'vitest';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { waitUntil } from '../harness/service.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';
import { T0 } from '../harness/time.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const push = (url: string, time: number) =>
  fetch(`${url}/push/realtime`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ vehicleno: 'LOAD-1', type: 'can', data: { time, soc: 50 } }),
  });

it('above the queue-depth bound pushes get 429 with Retry-After, and are accepted again once workers drain the queue', async () => {
  const receiver = await stack.spawn('receiver', { QUEUE_MAX_JOBS: '5' });
  // No worker yet: every accepted push stays queued.
  for (let i = 0; i < 6; i++) expect((await push(receiver.url, T0 + i)).status).toBe(202);

  let refused: Response | undefined;
  await waitUntil(async () => {
    const res = await push(receiver.url, (T0 + 1000));
    if (res.status === 202) return false;
    refused = res;
    return true;
  }, 5_000, 'the receiver to shed load');
  expect(refused!.status).toBe(429);
  expect(refused!.headers.get('retry-after')).toBe('5');
  expect(await refused!.json()).toMatchObject({ status: 'FAILURE', err: 'overloaded', msg: expect.stringMatching(/jobs are waiting for workers \(bound 5\)/) });

  await stack.spawn('worker');
  // A sender that honours Retry-After gets everything in once the queue drains.
  const feed = await runFeed({ url: receiver.url, token: TOKEN, mode: 'realtime', count: 20, rate: Infinity, concurrency: 2, seed: 5, maxAttempts: 10, maxRetryAfterMs: 1_000, keep: true });
  expect(feed.acknowledged).toBe(20);
  const r = await stack.settle(feed.records.acknowledged.concat(
    Array.from({ length: 6 }, (_, i) => ({ vehicleno: 'LOAD-1', type: 'can', data: { time: T0 + i, soc: 50 } })),
  ));
  expect(r.missing).toEqual([]);
  expect(r.wrong).toEqual([]);
}, 60_000);

it('above the Redis memory bound pushes get 503 with Retry-After', async () => {
  const receiver = await stack.spawn('receiver', { REDIS_MEMORY_LIMIT: '1KiB' });
  let res: Response | undefined;
  await waitUntil(async () => {
    res = await push(receiver.url, (T0 + 2000));
    return res.status !== 202;
  }, 5_000, 'the memory bound to close admission');
  expect(res!.status).toBe(503);
  expect(res!.headers.get('retry-after')).toBe('5');
  expect(await res!.json()).toMatchObject({ err: 'overloaded', msg: expect.stringMatching(/^Redis memory \d+ bytes is at its bound of 1024; retry later$/) });
});
