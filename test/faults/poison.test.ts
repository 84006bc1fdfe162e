import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { inject } from 'vitest';
import { encodeJob } from '../../src/ingest/queue/codec.js';
import { JOB_NAME } from '../../src/ingest/queue/producer.js';
import { startTestService, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

it('a field-type conflict made by another writer: the rest of the batch lands, the refused points are quarantined with InfluxDB’s error', async () => {
  // Another writer stores soc as an integer in the same measurement and shard.
  const other = await fetch(`${inject('influxRawUrl')}/write?db=${svc.cfg.INFLUX_BUCKET}&precision=ms`, {
    method: 'POST',
    body: `can,vehicleno=OTHER soc=5i ${T0}`,
  });
  expect(other.status).toBe(204);

  const bulk = [
    { vehicleno: 'P-1', type: 'gps', data: { lat: 1, lng: 2, alti: 3, speed: 4, ignstatus: 1, time: T0 + 1 } },
    { vehicleno: 'P-1', type: 'can', data: { time: T0 + 2, soc: 80.5 } },
    { vehicleno: 'P-1', type: 'can', data: { time: T0 + 3, battery_voltage: 51.2 } },
    { vehicleno: 'P-2', type: 'can', data: { time: T0 + 4, soc: 12, current: 3 } },
    { vehicleno: 'P-2', type: 'gps', data: { lat: 5, lng: 6, alti: 7, speed: 8, ignstatus: 0, time: T0 + 5 } },
  ];
  const res = await svc.post('/push/bulk', { bulkData: bulk });
  expect(res.status).toBe(202);

  expect(await svc.waitForRows(`SELECT lat FROM gps WHERE vehicleno =~ /^P-/`, 2)).toHaveLength(2);
  expect(await svc.waitForRows(`SELECT battery_voltage FROM can WHERE vehicleno = 'P-1' AND battery_voltage > 0`, 1)).toEqual([
    { time: T0 + 3, battery_voltage: 51.2 },
  ]);

  let held: Awaited<ReturnType<TestService['quarantine']['list']>> = [];
  for (let i = 0; i < 100 && held.length < 2; i++) {
    held = (await svc.quarantine.list()).filter((e) => e.stage === 'write');
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(held.map((e) => JSON.parse(e.raw))).toEqual([bulk[1], bulk[3]]);
  for (const e of held) {
    expect(e.reason).toMatch(/^InfluxDB refused the point: InfluxDB answered 400: partial write: field type conflict: input field "soc" on measurement "can" is type float, already exists as type integer/);
    expect(e.deliveryId).toMatch(/^job:/);
  }
  const queue = new Queue(svc.cfg.QUEUE_NAME, { connection: { url: svc.cfg.REDIS_URL } });
  expect(await queue.getFailedCount()).toBe(0);
  expect(await queue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(0);
  await queue.close();
});

it('a record a push would refuse, in a job from a faulty producer, is quarantined by the worker; the rest of its job lands, nothing retries forever', async () => {
  const queue = new Queue(svc.cfg.QUEUE_NAME, { connection: { url: svc.cfg.REDIS_URL } });
  const records = [
    { vehicleno: 'M-1', type: 'can' as const, time: T0 + 10, fields: { soh: 90 } },
    // A trailing backslash escapes the separator: the validator refuses it. The job bypassed the receiver,
    // so it carries no seal: the worker checks it as a push, and InfluxDB never sees the line.
    { vehicleno: 'M-bad\\', type: 'can' as const, time: T0 + 11, fields: { soh: 91 } },
    { vehicleno: 'M-2', type: 'can' as const, time: T0 + 12, fields: { soh: 92 } },
  ];
  const job = await queue.add(JOB_NAME, encodeJob(records), { attempts: 1000, backoff: { type: 'capped-exponential' } });
  expect(await svc.waitForRows(`SELECT soh, vehicleno FROM can WHERE vehicleno =~ /^M-/`, 2)).toEqual([
    { time: T0 + 10, soh: 90, vehicleno: 'M-1' },
    { time: T0 + 12, soh: 92, vehicleno: 'M-2' },
  ]);
  let entry;
  for (let i = 0; i < 100 && !entry; i++) {
    entry = (await svc.quarantine.list()).find((e) => e.deliveryId === `job:${job.id}`);
    if (!entry) await new Promise((r) => setTimeout(r, 100));
  }
  expect(entry && JSON.parse(entry.raw)).toEqual({ vehicleno: 'M-bad\\', type: 'can', data: { soh: 91, time: T0 + 11 } });
  expect(entry!.reason).toBe('in a job no receiver sealed: vehicleno: must not end with a backslash (InfluxDB line protocol cannot store it)');
  expect(entry!.route).toBe('queue');
  for (let i = 0; i < 50 && !(await job.isCompleted()) && (await job.getState()) !== 'unknown'; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await queue.getFailedCount()).toBe(0);
  await queue.close();
});
