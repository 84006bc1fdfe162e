/**
 * The edges around the push path (issue #46), through the real service on the run's Redis and
 * InfluxDB: what one sender, one name or one page can do to everyone else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { expireVehicles } from '../../src/ingest/fleet/expire.js';
import { RECORD_SETS } from '../../src/ingest/events/store/partition.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { encodePointsJob } from '../../src/ingest/queue/codec.js';
import { rowsOf } from '../../src/ingest/flatten/points.js';
import { T0 } from '../harness/time.js';

const A = 'fleet-a-token-0123456789';
const B = 'fleet-b-token-0123456789';

describe('the quarantine, bounded in bytes and shared by the senders', () => {
  let svc: TestService;
  // 1.5 MiB shared by two senders and the service: 512 KiB each.
  const SHARE = 512 * 1_024;
  beforeAll(async () => {
    svc = await startTestService({ PUSH_TOKENS: `fleet-a:${A},fleet-b:${B}`, QUARANTINE_MAX_BYTES: '1536KiB', QUARANTINE_RAW_LIMIT: '64KiB' });
  });
  afterAll(async () => svc?.close());

  /** One valid CAN record and one invalid one carrying 60 KB: the second is kept whole in the quarantine. */
  const push = (plate: string, i: number) => ({
    bulkData: [
      { vehicleno: plate, type: 'can', data: { time: T0 + i * 1_000, soc: 50 } },
      { vehicleno: plate, type: 'can', data: { time: T0 + i * 1_000 + 1, soc: 'x'.repeat(60_000) } },
    ],
  });
  const entriesOf = async (sender: string) => (await svc.quarantine.list({ count: 100_000 })).filter((e) => e.sender === sender);

  it('refuses a sender past its share whole, before storing anything, and no one else', async () => {
    const answered: number[] = [];
    let refusal: Response | undefined;
    for (let i = 0; i < 20 && !refusal; i++) {
      const res = await svc.post('/push/bulk', push('QA-1', i), { token: A });
      if (res.status === 202) answered.push(i);
      else refusal = res;
    }
    // 512 KiB hold eight entries of ~60 KB: the ninth push is refused.
    expect(answered).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(refusal!.status).toBe(429);
    expect(refusal!.headers.get('retry-after')).toBe('60');
    const body = (await refusal!.json()) as { err: string; msg: string };
    expect(body.err).toBe('quarantine_share_full');
    expect(body.msg).toMatch(/^push refused, nothing of it stored: 1 of its records cannot be stored and fleet-a's share of the quarantine is full \(it holds \d+ bytes of 524288; these need \d+\); send its 1 valid record\(s\) again without the others, or once an operator/);

    // Every entry answered 202 is kept; the refused push left nothing, in the quarantine or in InfluxDB.
    const kept = await entriesOf('fleet-a');
    expect(kept.map((e) => JSON.parse(e.raw).data.time - T0)).toEqual(answered.map((i) => i * 1_000 + 1));
    const bytes = (await svc.quarantine.bytesBySender()).get('fleet-a')!;
    expect(bytes).toBeLessThanOrEqual(SHARE);
    expect(bytes).toBeGreaterThan(SHARE - 61_000);
    const rows = await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'QA-1'`, 8);
    expect(rows.map((r) => Number(r.time) - T0)).toEqual(answered.map((i) => i * 1_000));

    // The other sender's invalid records are still kept, its valid ones stored.
    const other = await svc.post('/push/bulk', push('QB-1', 0), { token: B });
    expect(other.status).toBe(202);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'QB-1'`, 1)).toHaveLength(1);
    expect(await entriesOf('fleet-b')).toHaveLength(1);

    // A's valid records alone are taken; they need no room.
    const valid = await svc.post('/push/bulk', { bulkData: [push('QA-1', 30).bulkData[0]] }, { token: A });
    expect(valid.status).toBe(202);

    const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    expect(metrics).toContain('telematics_quarantine_refused_pushes_total{sender="fleet-a"} 1');
    expect(metrics).toContain(`telematics_quarantine_share_bytes ${SHARE}`);
  });

  it('gives room back when an operator removes entries', async () => {
    const kept = await entriesOf('fleet-a');
    const before = (await svc.quarantine.bytesBySender()).get('fleet-a')!;
    expect(await svc.quarantine.remove(kept.slice(0, 2).map((e) => e.id))).toBe(2);
    // Removing again frees nothing twice.
    expect(await svc.quarantine.remove(kept.slice(0, 2).map((e) => e.id))).toBe(0);
    const after = (await svc.quarantine.bytesBySender()).get('fleet-a')!;
    expect(before - after).toBeGreaterThan(2 * 60_000);
    expect(before - after).toBeLessThan(2 * 61_000);
    const res = await svc.post('/push/bulk', push('QA-1', 40), { token: A });
    expect(res.status).toBe(202);
  });

  it('refuses a realtime record and an unreadable body past the share the same way', async () => {
    const realtime = await svc.post('/push/realtime', push('QA-1', 50).bulkData[1], { token: A });
    const body = await svc.post('/push/bulk', `{"bulkData":[${'x'.repeat(60_000)}`, { token: A });
    // The last push may have fitted in the room two removals left; past it, both are refused.
    const second = await svc.post('/push/realtime', push('QA-1', 51).bulkData[1], { token: A });
    expect([realtime.status, body.status, second.status].filter((s) => s === 429).length).toBeGreaterThanOrEqual(2);
    expect(((await second.json()) as { err: string }).err).toBe('quarantine_share_full');
    expect((await svc.quarantine.bytesBySender()).get('fleet-a')!).toBeLessThanOrEqual(SHARE);
  });
});

describe('jobs put on the queue by hand', () => {
  let svc: TestService;
  let queue: Queue;
  beforeAll(async () => {
    svc = await startTestService();
    queue = new Queue(redisKeys(svc.cfg.QUEUE_NAME).partitions[0]!, { connection: { url: svc.cfg.REDIS_URL } as never });
  });
  afterAll(async () => {
    await queue?.close();
    await svc?.close();
  });
  const Y2100 = Date.UTC(2100, 0, 1);
  const queued = async (sender: string) => (await svc.quarantine.list({ count: 1_000 })).filter((e) => e.route === 'queue' && e.sender === sender);

  it('checks a v1 payload as a push: what a push would be refused is quarantined, the rest written', async () => {
    // What the queue UI's "add job" sent: records that never passed a receiver.
    await queue.add('push', {
      v: 1,
      records: [
        { vehicleno: 'HAND-1', type: 'can', time: T0, fields: { soc: 40 } },
        { vehicleno: 'HAND-1', type: 'can', time: Y2100, fields: { soc: 41 } },
        { vehicleno: 'HAND-1\nvehicle_events', type: 'can', time: T0 + 1, fields: { soc: 42 } },
        { vehicleno: 'HAND-1', type: 'vehicle_events', time: T0 + 2, fields: { value: 1 } },
        { vehicleno: 'HAND-1', type: 'can', time: T0 + 3, fields: { soc: 400 } },
      ],
    });
    await waitUntil(async () => (await queued('')).length >= 4, 15_000, 'four entries quarantined');
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'HAND-1'`, 1)).toEqual([{ time: T0, soc: 40 }]);
    expect(await svc.query(`SELECT * FROM vehicle_events`)).toEqual([]);
    const reasons = (await queued('')).map((e) => e.reason);
    expect(reasons).toEqual([
      expect.stringMatching(/^in a job no receiver sealed: data\.time: .*ahead/),
      expect.stringMatching(/^in a job no receiver sealed: vehicleno: must not contain control characters/),
      expect.stringMatching(/^in a job no receiver sealed: type: /),
      expect.stringMatching(/^in a job no receiver sealed: no field left to store: data\.soc: /),
    ]);
  });

  it('checks a v3 job whose rows were changed after the receiver sealed them', async () => {
    const records = [{ vehicleno: 'HAND-2', type: 'can' as const, time: T0, fields: { soc: 50 } }];
    const genuine = encodePointsJob([{ rows: rowsOf(records, { temperatureSentinels: [] }), from: 0, to: 1 }], false);
    // The same shape, its time moved to 2100 and a second line smuggled into a value.
    const forged = { ...genuine, t: genuine.t!.replace(String(T0), String(Y2100)), s: 'AAAAAAAAAAAAAAAAAAAAAA' };
    const injected = { ...genuine, t: genuine.t!.replace('50', '50\nvehicle_events,vehicleno=X value=1 1') };
    await queue.add('push', forged);
    const smuggled = await queue.add('push', injected);
    await waitUntil(async () => (await queued('')).some((e) => e.raw.includes('HAND-2')), 15_000, 'forged rows quarantined');
    // Rows that do not parse hold no records at all: the job fails (added with one attempt, as the queue UI adds) and stays as a dead letter.
    await waitUntil(async () => (await smuggled.getState()) === 'failed', 15_000, 'the smuggled job failed');
    expect((await queue.getJob(smuggled.id!))!.failedReason).toMatch(/./);
    expect(await svc.query(`SELECT soc FROM can WHERE vehicleno = 'HAND-2'`)).toEqual([]);
    expect(await svc.query(`SELECT * FROM vehicle_events`)).toEqual([]);
  });

  it('writes a receiver’s sealed job as it is', async () => {
    const res = await svc.post('/push/realtime', { vehicleno: 'HAND-3', type: 'can', data: { time: T0, soc: 60 } });
    expect(res.status).toBe(202);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'HAND-3'`, 1)).toEqual([{ time: T0, soc: 60 }]);
    expect((await queued('')).some((e) => e.raw.includes('HAND-3'))).toBe(false);
  });
});

describe('vehicles: bounded, refused at the edge, forgotten when silent', () => {
  let svc: TestService;
  let redis: Redis;
  beforeAll(async () => {
    svc = await startTestService({ MAX_VEHICLES: '5', SILENT_AFTER: '1m', EVENTS_HORIZON: '1m', VEHICLE_EXPIRY: '2m', EVENTS_WINDOW: '1ms' });
    redis = new Redis(svc.cfg.REDIS_URL);
  });
  afterAll(async () => {
    redis?.disconnect();
    await svc?.close();
  });
  const can = (plate: string, t: number) => ({ vehicleno: plate, type: 'can', data: { time: t, soc: 50 } });
  const keys = () => redisKeys(svc.cfg.QUEUE_NAME);

  it('admits known and listed vehicles, and refuses invented plates past MAX_VEHICLES without costing a real one its data', async () => {
    const now = Date.now();
    const fleet = ['REAL-1', 'REAL-2', 'REAL-3', 'REAL-4', 'REAL-5'];
    expect((await svc.post('/push/bulk', { bulkData: fleet.map((p) => can(p, now - 60_000)) })).status).toBe(202);
    await waitUntil(async () => (await redis.zcard(keys().fleet(0).seen)) === 5, 15_000, 'five vehicles known');
    await redis.sadd(keys().listedVehicles, 'LISTED-1');

    const invented = Array.from({ length: 50 }, (_, i) => `FAKE-${i}`);
    const res = await svc.post('/push/bulk', { bulkData: [can('REAL-1', now - 30_000), ...invented.map((p) => can(p, now - 30_000)), can('LISTED-1', now - 30_000)] });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { data: { accepted: number; rejected: Array<{ index: number; error: string; rule?: string }> } };
    expect(body.data.accepted).toBe(2);
    expect(body.data.rejected.map((r) => r.index)).toEqual(invented.map((_, i) => i + 1));
    expect(body.data.rejected[0]).toMatchObject({ rule: 'vehicles_max', error: expect.stringMatching(/^vehicle "FAKE-0", "FAKE-1", .* and 45 more not admitted: the service keeps state for MAX_VEHICLES \(5\) vehicles/) });

    const realtime = await svc.post('/push/realtime', can('FAKE-99', now - 30_000));
    expect(realtime.status).toBe(403);
    expect(((await realtime.json()) as { err: string }).err).toBe('vehicle_not_admitted');

    // The real vehicles' records landed; the invented plates made no series, and cost no Redis state.
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'REAL-1'`, 2)).toHaveLength(2);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'LISTED-1'`, 1)).toHaveLength(1);
    const plates = (await svc.query(`SHOW TAG VALUES FROM can WITH KEY = "vehicleno"`)).map((r) => r.value);
    expect(plates.filter((p) => String(p).startsWith('FAKE'))).toEqual([]);
    expect(await redis.zscore(keys().fleet(0).seen, 'FAKE-0')).toBeNull();
    // Kept for replay, once, whole; counted.
    expect((await svc.quarantine.list({ count: 100 })).filter((e) => e.reason.includes('not admitted'))).toHaveLength(2);
    expect(await (await fetch(`${svc.adminUrl}/metrics`)).text()).toContain(`telematics_vehicles_refused_total{sender="token-1"} 51`);
  });

  it('forgets a vehicle not heard from for VEHICLE_EXPIRY, its events state too, and keeps the others', async () => {
    const now = Date.now();
    await redis.sadd(keys().listedVehicles, 'OLD-1');
    expect((await svc.post('/push/bulk', { bulkData: [can('OLD-1', now - 10 * 60_000), can('OLD-1', now - 10 * 60_000 + 1_000)] })).status).toBe(202);
    await waitUntil(async () => (await redis.zscore(keys().fleet(0).seen, 'OLD-1')) !== null && (await redis.hexists(keys().vehicleState(0), 'OLD-1')) === 1, 15_000, 'OLD-1 known, its events state kept');
    const before = await redis.keys(`*OLD-1*`);
    expect(before.length).toBeGreaterThan(0);
    const removed = await expireVehicles(redis, keys(), RECORD_SETS.map((r) => r.id), ['1m'], Date.now(), 2 * 60_000);
    expect(removed).toEqual(['OLD-1']);
    expect(await redis.keys(`*OLD-1*`)).toEqual([]);
    expect(await redis.zscore(keys().fleet(0).seen, 'OLD-1')).toBeNull();
    expect(await redis.hexists(keys().vehicleState(0), 'OLD-1')).toBe(0);
    expect(await redis.zscore(keys().fleet(0).seen, 'REAL-1')).not.toBeNull();
  });
});
