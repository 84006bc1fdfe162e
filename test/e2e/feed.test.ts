import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { countPoints, reconcile } from '../harness/reconcile.js';
import { startTestService, TEST_TOKEN, waitUntil, type TestService } from '../harness/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

it('emulator feed → receiver → workers → InfluxDB: every acknowledged record is stored with its values, every refused one is quarantined', async () => {
  const feed = await runFeed({ url: svc.url, token: TEST_TOKEN, mode: 'mixed', bulkSize: 150, count: 3_000, rate: Infinity, concurrency: 6, vehicles: 40, seed: 99, invalidRatio: 0.02, keep: true });
  expect(feed.failedDeliveries).toBe(0);
  expect(feed.injectedInvalid).toBeGreaterThan(0);
  // Exactly the records spoiled on purpose were refused; every valid one was acknowledged.
  expect(feed.rejected).toBe(feed.rejectedInjected);
  expect(feed.acknowledged + feed.rejected + feed.acknowledgedInvalid).toBe(3_000);

  const raw = inject('influxRawUrl');
  const want = new Set(feed.records.acknowledged.map((r) => `${r.type}|${r.vehicleno}|${r.data.time}`)).size;
  await waitUntil(async () => (await countPoints(raw, svc.cfg.INFLUX_BUCKET)) >= want, 30_000, 'all points');
  expect(await reconcile(raw, svc.cfg.INFLUX_BUCKET, feed.records.acknowledged)).toEqual({ expected: want, missing: [], wrong: [], extra: 0 });

  const held = await svc.quarantine.list({ count: 10_000 });
  const heldRaw = new Set(held.map((e) => e.raw));
  for (const r of feed.records.rejected) expect(heldRaw.has(JSON.stringify(r.record))).toBe(true);
});
