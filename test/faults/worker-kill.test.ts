import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_DERIVE_OPTIONS, inputOf, eventId, flush, ingest, newState, chargingSessionId, stopId, tripId, type EventInput } from '../../src/ingest/events/derive.js';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { waitUntil } from '../harness/service.js';
import { countPoints } from '../harness/reconcile.js';
import { startStack, TOKEN, type Stack } from '../harness/stack.js';

const SECRET = `whsec_${Buffer.from('worker-kill-events-secret').toString('base64')}`;
/**
 * Narrower than the feed's span of record time (it stamps records with its clock, a second or two) and
 * than the lock a killed worker's job waits out: the retried job's records come late, past the window, and
 * correct what the jobs derived meanwhile (EVENTS_ORDER_WAIT, under the lock, lets those go first).
 */
const WINDOW_MS = 1;

let stack: Stack;
let hook: Server;
/**
 * What a webhook receiver holds, applying each delivery as docs/events.md says: by `data.id`, a first or
 * `.corrected` delivery sets it, a `.retracted` one removes it; each `webhook-id` taken once.
 */
const held = new Map<string, string>();
const seen = new Set<string>();
beforeAll(async () => {
  hook = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      if (!seen.has(id)) {
        seen.add(id);
        const { type, data } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { id: string } };
        if (type.endsWith('.retracted')) held.delete(data.id);
        else held.set(data.id, type.replace(/\.corrected$/, ''));
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  stack = await startStack({
    EVENTS_WINDOW: `${WINDOW_MS}ms`,
    EVENTS_ORDER_WAIT: '1s',
    EVENTS_CORRECTION_DELAY: '1s',
    // Every alarm told at once: the feed's flags flip every few records, and each flip is an output the killed job's late records must correct.
    ALARM_MIN_DURATION: '0ms',
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
  stack.influx.front.setWriteDelay(90_000);
  // The victim takes the first job, one at a time; killed in its write, the job waits out its lock while
  // the other worker, started before the kill, writes and derives the jobs after it.
  const victim = await stack.spawn('worker', { WORKER_CONCURRENCY: '1' });

  const feed = await runFeed({ url: receiver.url, token: TOKEN, mode: 'bulk', bulkSize: 200, count: 1_000, rate: Infinity, vehicles: 12, seed: 7, keep: true });
  expect(feed.acknowledged).toBe(1_000);

  await waitUntil(async () => stack.influx.front.writesStarted() > 0, 10_000, 'a write under way');
  // Held 90 s, the victim's write, longer than the waits below may last: it is killed in it, never done; the writes after it go at once.
  stack.influx.front.setWriteDelay(0);
  const survivor = await stack.spawn('worker', { LOG_LEVEL: 'info' });
  // Killed once the survivor has written the jobs after the victim's and derived them (EVENTS_ORDER_WAIT
  // lets them go past the held job after 1 s): on a slow machine, a kill at once could let the survivor
  // take the victim's job before the later ones, in order, and the late path would go untested.
  await waitUntil(async () => (await countPoints(stack.influx.rawUrl, stack.db)) >= 800, 30_000, 'the later jobs written');
  await waitUntil(async () => held.size > 0, 30_000, 'the later jobs derived and told');
  await new Promise((r) => setTimeout(r, 2_000));
  await victim.stop('SIGKILL');

  const r = await stack.settle(feed.records.acknowledged);
  expect(r).toEqual({ expected: 1_000, missing: [], wrong: [], extra: 0 });

  // The events derived through the kill, once corrected, are those an ordered run of the same records derives.
  const byVehicle = new Map<string, EventInput[]>();
  for (const rec of feed.records.acknowledged) {
    const data = rec.data as Record<string, number>;
    const list = byVehicle.get(rec.vehicleno) ?? [];
    list.push(inputOf(rec.type, data.time!, data));
    byVehicle.set(rec.vehicleno, list);
  }
  const want = new Map<string, string>();
  const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: WINDOW_MS, streamQuietMs: WINDOW_MS, alarmMinDurationMs: 0 };
  for (const [v, inputs] of byVehicle) {
    const state = newState();
    const sorted = [...inputs].sort((a, b) => a.time - b.time);
    for (const d of [ingest(v, state, sorted, sorted.at(-1)!.time, opts), flush(v, state, Number.MAX_SAFE_INTEGER, opts)]) {
      for (const e of d.events) want.set(eventId(e), `vehicle.${e.event}`);
      for (const t of d.trips) want.set(tripId(t), 'vehicle.trip');
      for (const c of d.chargingSessions) want.set(chargingSessionId(c), 'vehicle.charging');
      for (const p of d.stops) want.set(stopId(p), 'vehicle.stop');
    }
  }
  expect(want.size).toBeGreaterThan(0);
  const same = () => held.size === want.size && [...want].every(([id, type]) => held.get(id) === type);
  await waitUntil(async () => same(), 60_000, `the ${want.size} events of an ordered run held`).catch(() => undefined);
  expect(new Map([...held].sort())).toEqual(new Map([...want].sort()));
  // Whether the killed job's records came late (derived after the jobs after it, then corrected) depends on
  // when the survivor takes it over, which a loaded machine moves (seen in CI: no correction logged, the events
  // still the ordered run's); either way the events above must be the ordered run's. The late path itself
  // is held by corrections.test.ts and test/e2e/events-late.test.ts; here it is only said which was taken.
  await waitUntil(async () => /corrected from a late record/.test(survivor.output()), 10_000, 'a correction logged').catch(() => undefined);
  if (!/corrected from a late record/.test(survivor.output())) console.warn('worker-kill: no correction was logged this run; the events still equal the ordered run');
}, 180_000);
