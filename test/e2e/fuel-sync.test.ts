import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { UpstreamClient } from '../../src/upstream/client/index.js';
import { fuelChanges, syncFuel } from '../../src/ingest/sync/fuel.js';
import { Lines } from '../../src/ingest/write/lines.js';
import { formatLine } from '../../src/telemetry/lineProtocol.js';
import { pointOf } from '../../src/ingest/events/outbox.js';
import { loadConfig } from '../../src/config/index.js';
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
  expect(first).toEqual({ vehicles: 3, readings: want1.length, changes: 0, whileMoving: 0, failedCount: 0, failed: [] });
  expect(want1.length).toBe(3 * 2 * 73); // a reading every 5 minutes over 6 hours, both ends included, per vehicle and unit
  expect(sorted(await stored())).toEqual(sorted(want1));

  const before = clock;
  clock += HOUR;
  const second = await syncFuel(opts);
  const fresh = (await expected(before + 1, clock)).length;
  expect(fresh).toBe(3 * 2 * 12);
  expect(second).toEqual({ vehicles: 3, readings: fresh, changes: 0, whileMoving: 0, failedCount: 0, failed: [] });
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

it('tells a theft and a refuel once, not a drop while driving, through a failed delivery and ranges read again', async () => {
  const db = uniqueName('fuelchg');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const MIN = 60_000;
  const t0 = Date.UTC(2026, 10, 21, 0, 0, 0);
  // One vehicle's scripted litres, a reading every 5 minutes for 6 hours: parked at 40 l; at 1 h siphoned to
  // 32 l in 10 minutes; at 3 h refuelled to 60 l; at 4 h 8 l less over 10 minutes while it drives.
  const level = (t: number) => {
    const m = (t - t0) / MIN;
    if (m < 60) return 40;
    if (m < 70) return 40 - 4 * ((m - 55) / 5);
    if (m < 180) return 32;
    if (m < 240) return 60;
    if (m < 250) return 60 - 4 * ((m - 235) / 5);
    return 52;
  };
  const scripted = await startEmulator({ seed: 4, vehicles: 1, now: () => clock });
  const v = scripted.fleet.vehicles[0]!;
  scripted.fleet.fuelReadings = (_v, from, to) => {
    const out = [];
    for (let t = Math.ceil(from / (5 * MIN)) * 5 * MIN; t <= to; t += 5 * MIN) if (t >= t0) out.push({ time: t, value: level(t) });
    return out;
  };
  try {
    const sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 });
    // The drive at 4 h, as the record path stored it.
    await sink.write(Lines.of([235, 240, 245].map((m) => formatLine('gps', { vehicleno: v.vehicleno }, { lat: 12.9, lng: 77.6, speed: 32 }, t0 + m * MIN))));
    let failing = true;
    const cfg = loadConfig({ PUSH_AUTH: 'none', INFLUX_URL: inject('influxUrl'), INFLUX_TOKEN: inject('influxToken'), INFLUX_BUCKET: db });
    const changes = fuelChanges(cfg, async (events) => {
      if (failing) throw new Error('webhook queue unreachable');
      await sink.write(Lines.of(events.map((e) => pointOf({ kind: 'event', ...e }))));
    });
    const client = new UpstreamClient({ baseUrl: scripted.url, token: scripted.token });
    const opts = { client, sink, redis, watermarkKey: `${db}:wm`, units: ['litres'] as const, lookbackMs: 2 * HOUR, maxRangeMs: HOUR, changes };

    // Two hours in: the theft ended, but its delivery fails, so nothing is remembered.
    clock = t0 + 2 * HOUR;
    expect((await syncFuel({ ...opts, now: () => clock })).failed).toEqual([{ vehicleno: v.vehicleno, error: 'webhook queue unreachable' }]);
    failing = false;
    const run1 = await syncFuel({ ...opts, now: () => clock });
    expect([run1.changes, run1.whileMoving, run1.failed]).toEqual([1, 0, []]);
    // A release that does not judge fuel changes reads the next two hours and moves the watermark on.
    clock = t0 + 4 * HOUR;
    const { changes: _, ...previousRelease } = opts;
    await syncFuel({ ...previousRelease, now: () => clock });
    // This one reads them again from its own progress; and then to the end, twice.
    clock = t0 + 6 * HOUR;
    const run2 = await syncFuel({ ...opts, now: () => clock });
    expect([run2.changes, run2.whileMoving]).toEqual([1, 1]);
    expect((await syncFuel({ ...opts, now: () => clock })).changes).toBe(0);

    const rows = await influxQuery(db, `SELECT event, unit, value, fuel_before, fuel_after, fuel_amount, over_s FROM vehicle_events WHERE vehicleno = '${v.vehicleno}'`);
    expect(rows).toEqual([
      { time: t0 + 55 * MIN, event: 'fuel_drop', unit: 'litres', value: 1, fuel_before: 40, fuel_after: 32, fuel_amount: 8, over_s: 600 },
      { time: t0 + 175 * MIN, event: 'fuel_refuel', unit: 'litres', value: 1, fuel_before: 32, fuel_after: 60, fuel_amount: 28, over_s: 300 },
    ]);
  } finally {
    await scripted.close();
  }
});

it('refuses a vehicle number line protocol cannot carry, and names only the first failures of many', async () => {
  const db = uniqueName('fuelnames');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 });
  // What an upstream's listvehicles may answer: a number with a line break in it, and 3,000 whose history fails.
  const failing = Array.from({ length: 3_000 }, (_, i) => ({ vehicleno: `GONE-${i}` }));
  const client = {
    listVehicles: async () => [{ vehicleno: 'FUEL-1\nvehicle_events' }, { vehicleno: 'FUEL-2' }, ...failing],
    getFuelHistory: async ({ vehicleno }: { vehicleno: string }) => {
      if (vehicleno.startsWith('GONE-')) throw new Error(`no such vehicle ${vehicleno}: ${'x'.repeat(200)}`);
      return [{ time: clock - 60_000, value: 12.5 }];
    },
  };
  const r = await syncFuel({ client: client as never, sink, redis, watermarkKey: `${db}:wm`, units: ['litres'], lookbackMs: HOUR, maxRangeMs: 2 * HOUR, now: () => clock });
  expect(r.failedCount).toBe(3_001);
  expect(r.failed).toHaveLength(10);
  expect(r.failed[0]).toEqual({ vehicleno: '"FUEL-1\\nvehicle_events"', error: 'vehicle number refused: must not contain control characters' });
  expect(JSON.stringify(r.failed).length).toBeLessThan(5_000);
  expect(await influxQuery(db, 'SELECT value, vehicleno FROM fuel')).toEqual([{ time: clock - 60_000, value: 12.5, vehicleno: 'FUEL-2' }]);
  expect(await influxQuery(db, 'SELECT * FROM vehicle_events')).toEqual([]);
});
