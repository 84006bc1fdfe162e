import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_DERIVE_OPTIONS, inputOf, eventId, flush, ingest, newState, sessionId, tripId, type EventInput } from '../../src/ingest/events/derive.js';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { waitUntil } from '../harness/service.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

const SECRET = `whsec_${Buffer.from('worker-kill-events-secret').toString('base64')}`;
/**
 * Wider than the feed's span of record time (it stamps records with its clock: a second or two), so
 * however the kill reorders jobs, the retried job's records are within the window and derive in order.
 */
const WINDOW_MS = 5_000;

let stack: Stack;
let hook: Server;
/** Webhook deliveries by webhook-id: each derived event, trip and session once, however often posted. */
const posted = new Map<string, number>();
beforeAll(async () => {
  hook = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      posted.set(id, (posted.get(id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  stack = await startStack({
    EVENTS_WINDOW: `${WINDOW_MS / 1000}s`,
    EVENTS_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks`,
    EVENTS_WEBHOOK_SECRET: SECRET,
  });
});
afterAll(async () => {
  await stack?.stop();
  await new Promise((r) => hook?.close(r));
});

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

  // The events derived through the kill are those an ordered run of the same records derives, each once.
  const byVehicle = new Map<string, EventInput[]>();
  for (const rec of feed.records.acknowledged) {
    const data = rec.data as Record<string, number>;
    const list = byVehicle.get(rec.vehicleno) ?? [];
    list.push(inputOf(rec.type, data.time!, data));
    byVehicle.set(rec.vehicleno, list);
  }
  const want = new Set<string>();
  const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: WINDOW_MS, idleMs: WINDOW_MS };
  for (const [v, inputs] of byVehicle) {
    const state = newState();
    const sorted = [...inputs].sort((a, b) => a.time - b.time);
    for (const d of [ingest(v, state, sorted, sorted.at(-1)!.time, opts), flush(v, state, Number.MAX_SAFE_INTEGER, opts)]) {
      for (const e of d.events) want.add(eventId(e));
      for (const t of d.trips) want.add(tripId(t));
      for (const c of d.sessions) want.add(sessionId(c));
    }
  }
  expect(want.size).toBeGreaterThan(0);
  await waitUntil(async () => posted.size >= want.size, WINDOW_MS + 30_000, `${want.size} events posted`);
  expect(new Set(posted.keys())).toEqual(want);
}, 180_000);
