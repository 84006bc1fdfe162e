import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { UpstreamClient } from '../../src/upstream/client/index.js';
import { syncFuel } from '../../src/ingest/sync/fuel.js';
import { InfluxSink } from '../../src/ingest/write/influx.js';
import { influxQuery } from '../harness/influx.js';
import { startTestService, uniqueName, waitUntil, type TestService } from '../harness/service.js';

const HOUR = 3_600_000;
let clock = Date.UTC(2026, 10, 20, 12, 0, 0);
let emulator: Awaited<ReturnType<typeof startEmulator>>;
let redis: Redis;

beforeAll(async () => {
  emulator = await startEmulator({ seed: 4, vehicles: 3, now: () => clock });
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await emulator?.close();
  redis?.disconnect();
});

it('pulls each vehicle’s fuel history into measurement fuel once; a second run adds only the new readings', async () => {
  const db = uniqueName('fuel');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const client = new UpstreamClient({ baseUrl: emulator.url, token: emulator.token });
  const sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 });
  const opts = { client, sink, redis, watermarkKey: `${db}:wm`, units: ['litres', 'percent'] as const, lookbackMs: 6 * HOUR, maxRangeMs: 2 * HOUR, now: () => clock };

  const expected = async (from: number, to: number) => {
    const rows: Array<{ time: number; unit: string; value: number; vehicleno: string }> = [];
    for (const { vehicleno } of await client.listVehicles()) {
      for (const unit of ['litres', 'percent'] as const) {
        for (const r of await client.getFuelHistory({ vehicleno, from, to, inLitres: unit === 'litres' })) rows.push({ time: r.time, unit, value: r.value, vehicleno });
      }
    }
    return rows;
  };
  const stored = async () =>
    (await influxQuery(db, 'SELECT value, unit, vehicleno FROM fuel')) as Array<{ time: number; unit: string; value: number; vehicleno: string }>;
  const sorted = <T extends { vehicleno: string; unit: string; time: number }>(xs: T[]) =>
    [...xs].sort((a, b) => a.vehicleno.localeCompare(b.vehicleno) || a.unit.localeCompare(b.unit) || a.time - b.time);

  const first = await syncFuel(opts);
  const want1 = await expected(clock - 6 * HOUR, clock);
  expect(first).toEqual({ vehicles: 3, readings: want1.length, failed: [] });
  expect(want1.length).toBe(3 * 2 * 73); // a reading every 5 minutes over 6 hours, both ends included, per vehicle and unit
  expect(sorted(await stored())).toEqual(sorted(want1));

  const before = clock;
  clock += HOUR;
  const second = await syncFuel(opts);
  const fresh = (await expected(before + 1, clock)).length;
  expect(fresh).toBe(3 * 2 * 12);
  expect(second).toEqual({ vehicles: 3, readings: fresh, failed: [] });
  expect(sorted(await stored())).toEqual(sorted(await expected(clock - 7 * HOUR, clock)));

  const third = await syncFuel(opts);
  expect(third.readings).toBe(0);
});

it('advances a watermark only after InfluxDB accepted the points', async () => {
  const db = uniqueName('fuelfail');
  const client = new UpstreamClient({ baseUrl: emulator.url, token: emulator.token });
  const sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 });
  const opts = { client, sink, redis, watermarkKey: `${db}:wm`, units: ['percent'] as const, lookbackMs: HOUR, maxRangeMs: HOUR, now: () => clock };
  // The database does not exist yet: every write is refused.
  const failed = await syncFuel(opts);
  expect(failed.readings).toBe(0);
  expect(failed.failed.map((f) => f.error)).toEqual(Array(3).fill('InfluxDB answered 404: database not found: "' + db + '"'));
  expect(await redis.hlen(`${db}:wm`)).toBe(0);

  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const retried = await syncFuel(opts);
  expect(retried.failed).toEqual([]);
  expect(retried.readings).toBe(3 * 13);
  expect(await influxQuery(db, 'SELECT count(value) FROM fuel')).toEqual([{ time: 0, count: 3 * 13 }]);
});

it('runs on a schedule in the worker when UPSTREAM_URL is set', async () => {
  let svc: TestService | undefined;
  clock = Date.now();
  try {
    svc = await startTestService({ UPSTREAM_URL: emulator.url, UPSTREAM_TOKEN: emulator.token, FUEL_SYNC_INTERVAL: '1s', FUEL_SYNC_LOOKBACK: '1h' });
    await waitUntil(async () => (await svc!.query('SELECT value FROM fuel')).length >= 3 * 12, 20_000, 'scheduled fuel sync');
    const rows = await svc.query(`SELECT value, unit FROM fuel WHERE vehicleno = '${emulator.fleet.vehicles[0]!.vehicleno}'`);
    // An hour of readings on a 5-minute grid: 12 or 13 depending on where the grid falls.
    expect(rows.length).toBeGreaterThanOrEqual(12);
    expect(rows.length).toBeLessThanOrEqual(13);
    expect(new Set(rows.map((r) => r.unit))).toEqual(new Set(['litres']));
  } finally {
    await svc?.close();
  }
});
