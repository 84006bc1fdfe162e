import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/devstack/process.js';
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

it('deflates jobs only while a backlog builds: a job a worker takes at once costs no compression, a waiting one little Redis', async () => {
  const queue = `deflate_${Date.now()}`;
  const adminPort = await freePort();
  const receiver = await stack.spawn('receiver', { QUEUE_NAME: queue, ADMIN_PORT: String(adminPort), ADMIN_HOST: '127.0.0.1' });
  const jobsBy = async (payload: string) => {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    return Number(new RegExp(`^telematics_jobs_enqueued_total\\{payload="${payload}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  };
  const redis = new Redis(stack.redis.url);
  try {
    const bulk = (from: number) =>
      fetch(`${receiver.url}/push/bulk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ bulkData: Array.from({ length: 500 }, (_, i) => ({ vehicleno: `DEFLATE-${i % 7}`, type: 'can', data: { time: from + i, soc: 50 + (i % 40), battery_voltage: 48.25, current: -3.5 } })) }),
      });
    /** The payload forms of the queue's waiting jobs, newest first. */
    const forms = async () => {
      const ids = await redis.lrange(`bull:${queue}:wait`, 0, -1);
      return Promise.all(ids.map(async (id) => Object.keys(JSON.parse((await redis.hget(`bull:${queue}:${id}`, 'data'))!) as object).filter((k) => k === 't' || k === 'z').join('')));
    };
    // Until the receiver has sampled the queue (at once when Redis is ready, then every 500 ms) it
    // assumes a backlog; once it saw the queue empty, a large job goes as text.
    let at = T0 + 10_000;
    await waitUntil(async () => {
      expect((await bulk((at += 1_000))).status).toBe(202);
      return (await forms())[0] === 't';
    }, 5_000, 'the receiver to write a large job as text once it sampled an empty queue');
    // 70 jobs wait for a worker that is not there: a backlog; the next large job is deflated.
    for (let i = 0; i < 70; i++) expect((await push(receiver.url, T0 + 20_000 + i)).status).toBe(202);
    await waitUntil(async () => {
      expect((await bulk(T0 + 30_000 + Date.now() % 1000 * 1000)).status).toBe(202);
      return (await forms())[0] === 'z';
    }, 5_000, 'the receiver to deflate jobs once a backlog built');
    expect((await forms()).filter((f) => f === 't').length).toBeGreaterThan(70);
    // The operator sees the same: jobs by payload form.
    const forms_ = await forms();
    expect(await jobsBy('deflated')).toBe(forms_.filter((f) => f === 'z').length);
    expect(await jobsBy('text')).toBe(forms_.filter((f) => f === 't').length);
  } finally {
    redis.disconnect();
  }
});
