/**
 * The fuel sync against the upstream as it is (issue #47): the emulator enforcing the provider's limits
 * (3 calls a second, 400 ms apart, 24 history calls per vehicle a day), the client paced in Redis as the
 * service's is, readings written to the real InfluxDB.
 *
 * Scaled: the second's bounds are FACTOR times tighter on both sides, the emulator's
 * (`scaledLimits(FACTOR)`: 60 calls a second, 20 ms apart) and the client's pacing (the same numbers),
 * so that a 1,000-vehicle run takes about half a minute instead of about 7 minutes; the day's budget,
 * 24 history calls per vehicle, is the provider's own.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/upstream/emulator/index.js';
import { scaledLimits, PROVIDER_LIMITS } from '../../src/upstream/emulator/limits.js';
import { UpstreamClient } from '../../src/upstream/client/index.js';
import { syncFuel, type FuelSyncOptions } from '../../src/ingest/sync/fuel.js';
import { RedisPacer } from '../../src/ingest/sync/pacer.js';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { InfluxSink } from '../../src/ingest/write/influx.js';
import { influxQuery } from '../harness/influx.js';
import { startTestService, uniqueName, waitUntil } from '../harness/service.js';

const FACTOR = 20;
const CLIENT_LIMITS = { maxCallsPerSecond: PROVIDER_LIMITS.maxCallsPerSecond * FACTOR, minGapMs: PROVIDER_LIMITS.minGapMs / FACTOR };
const MIN = 60_000;
const HOUR = 60 * MIN;

let redis: Redis;
const emulators: RunningEmulator[] = [];
beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await Promise.all(emulators.map((e) => e.close()));
  redis?.disconnect();
});

async function emulator(vehicles: number, now: () => number, limits = scaledLimits(FACTOR)): Promise<RunningEmulator> {
  const emu = await startEmulator({ seed: 11, vehicles, token: 'tok', now, limits });
  emulators.push(emu);
  return emu;
}

/** A fuel sync as the service runs it: paced in Redis, planned inside the budget, writing to its own database. */
async function setup(emu: RunningEmulator, now: () => number, o: { runForMs?: number; budget?: boolean } = {}) {
  const queue = uniqueName('fuelplan');
  await influxQuery(queue, `CREATE DATABASE "${queue}"`);
  const keys = redisKeys(queue);
  const client = new UpstreamClient({ baseUrl: emu.url, token: 'tok', pacer: new RedisPacer(redis, keys.upstreamPacing, CLIENT_LIMITS) });
  const sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: queue, timeoutMs: 10_000 });
  const opts: FuelSyncOptions = {
    client,
    sink,
    redis,
    watermarkKey: keys.fuelWatermarks,
    units: ['litres'],
    lookbackMs: HOUR,
    maxRangeMs: 24 * HOUR,
    now,
    ...(o.budget === false ? {} : { budget: { callsPerDay: 24, syncedKey: keys.fuelSynced, callsKey: keys.fuelHistoryCalls, runForMs: o.runForMs ?? 10 * MIN } }),
  };
  return { db: queue, keys, opts };
}

describe('the fuel sync inside the provider\'s limits', () => {
  it('syncs 1,000 vehicles against the emulator\'s limits without a 429, and every vehicle\'s readings land in InfluxDB', async () => {
    const clock = Date.UTC(2026, 10, 24, 9, 2, 0);
    const emu = await emulator(1_000, () => clock);
    const { db, opts } = await setup(emu, () => clock);
    const started = performance.now();
    const r = await syncFuel(opts);
    const took = performance.now() - started;
    expect(emu.state.throttledTotal()).toBe(0);
    expect(emu.state.calls.get('getfuelhistory')).toBe(1_000);
    expect(r).toMatchObject({ vehicles: 1_000, failedCount: 0, plan: { due: 1_000, synced: 1_000, notReached: 0, outOfBudget: 0, behindMs: 0, spacingMs: HOUR } });
    // Every vehicle's hour of readings, each once: as many as the emulator has for it.
    const counts = (await influxQuery(db, 'SELECT count(value) FROM fuel GROUP BY vehicleno')) as Array<{ vehicleno: string; count: number }>;
    const want = emu.fleet.vehicles.map((v) => ({ vehicleno: v.vehicleno, count: emu.fleet.fuelReadings(v, clock - HOUR, clock, true).length }));
    expect(counts.map((c) => ({ vehicleno: c.vehicleno, count: c.count })).sort((a, b) => a.vehicleno.localeCompare(b.vehicleno))).toEqual(
      want.sort((a, b) => a.vehicleno.localeCompare(b.vehicleno)),
    );
    expect(r.readings).toBe(want.reduce((n, w) => n + w.count, 0));
    // Paced: 1,001 calls at least 25 ms apart (the scaled 20 ms and the margin).
    expect(took).toBeGreaterThanOrEqual(1_000 * (CLIENT_LIMITS.minGapMs + 5));
  });

  it('spends at most 24 history calls per vehicle a day, runs every 15 minutes, and loses no reading; unplanned, the emulator refuses', async () => {
    let clock = Date.UTC(2026, 10, 25, 0, 0, 0);
    const dayEnd = clock + 24 * HOUR;
    const emu = await emulator(3, () => clock);
    const { db, opts } = await setup(emu, () => clock);
    const firstClock = clock;
    let planned = 0;
    for (; clock < dayEnd; clock += 15 * MIN) planned += (await syncFuel(opts)).plan!.synced;
    expect(emu.state.throttledTotal()).toBe(0);
    // One sync of each vehicle an hour: 24 calls each, spread over the day.
    expect(emu.state.calls.get('getfuelhistory')).toBe(3 * 24);
    expect(planned).toBe(3 * 24);
    for (const v of emu.fleet.vehicles) {
      const stored = (await influxQuery(db, `SELECT value FROM fuel WHERE vehicleno = '${v.vehicleno}'`)) as Array<{ time: number; value: number }>;
      // From the first run's lookback to the last sync (the last whole hour), every reading once.
      const lastSync = firstClock + 23 * HOUR;
      expect(stored.map((s) => [s.time, s.value])).toEqual(emu.fleet.fuelReadings(v, firstClock - HOUR, lastSync, true).map((p) => [p.time, p.value]));
    }

    // The same day as before issue #47, every vehicle every run: 96 calls each, and the emulator refuses past 24.
    let old = Date.UTC(2026, 10, 25, 0, 0, 0);
    const unplannedEmu = await emulator(3, () => old);
    const unplanned = await setup(unplannedEmu, () => old, { budget: false });
    let failed = 0;
    for (; old < dayEnd; old += 15 * MIN) failed += (await syncFuel(unplanned.opts)).failedCount;
    expect(unplannedEmu.state.throttled.get('getfuelhistory')).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);
  });

  it('tells how far behind a fleet larger than its runs is, and reads the longest waiting first', async () => {
    let clock = Date.UTC(2026, 10, 26, 6, 0, 0);
    const emu = await emulator(40, () => clock);
    // A run may call for about 400 ms: some 15 vehicles of 40 at 25 ms a call.
    const { opts, keys } = await setup(emu, () => clock, { runForMs: 400 });
    const first = (await syncFuel(opts)).plan!;
    expect(first.due).toBe(40);
    expect(first.synced).toBeGreaterThan(0);
    expect(first.notReached).toBe(40 - first.synced);
    // Due from the moment they were first listed: not behind yet.
    expect(first.behindMs).toBe(0);
    const syncedFirst = new Set(await redis.zrangebyscore(keys.fuelSynced, clock, clock));
    expect(syncedFirst.size).toBe(first.synced);

    clock += 15 * MIN;
    const second = (await syncFuel(opts)).plan!;
    // Those synced a quarter of an hour ago are not due again for an hour; the rest are, and went first.
    expect(second.due).toBe(40 - first.synced);
    expect(second.notReached).toBe(40 - first.synced - second.synced);
    expect(second.notReached).toBeGreaterThan(0);
    expect(second.behindMs).toBe(15 * MIN);
    const syncedSecond = await redis.zrangebyscore(keys.fuelSynced, clock, clock);
    expect(syncedSecond.filter((v) => syncedFirst.has(v))).toEqual([]);
    expect(emu.state.throttledTotal()).toBe(0);
  });

  it('stops a run between calls when the process stops, failing no vehicle; the next run reads the rest', async () => {
    const clock = Date.UTC(2026, 10, 26, 9, 0, 0);
    const emu = await emulator(30, () => clock);
    const { opts, keys } = await setup(emu, () => clock);
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 200);
    const started = performance.now();
    const stopped = await syncFuel({ ...opts, signal: stop.signal });
    // 30 vehicles at 25 ms a call would take about 800 ms; it ended at the stop.
    expect(performance.now() - started).toBeLessThan(600);
    expect(stopped.failedCount).toBe(0);
    expect(stopped.plan!.synced).toBeGreaterThan(0);
    expect(stopped.plan!.notReached).toBe(30 - stopped.plan!.synced);
    const rest = await syncFuel(opts);
    expect(rest.plan).toMatchObject({ due: 30 - stopped.plan!.synced, synced: 30 - stopped.plan!.synced, notReached: 0 });
    expect(await redis.zcount(keys.fuelSynced, clock, clock)).toBe(30);
    expect(emu.state.throttledTotal()).toBe(0);
  });

  it('runs so in the service: paced in Redis to its settings, planned, with the token\'s expiry and the plan in its metrics', async () => {
    const emu = await emulator(5, Date.now);
    const expiresAt = Math.floor((Date.now() + 2 * 86_400_000) / 1000) * 1000;
    const token = emu.state.issueToken('demo', expiresAt);
    const svc = await startTestService({
      UPSTREAM_URL: emu.url,
      UPSTREAM_TOKEN: token,
      // The provider's limits scaled as the emulator's are.
      UPSTREAM_MAX_CALLS_PER_SECOND: String(CLIENT_LIMITS.maxCallsPerSecond),
      UPSTREAM_MIN_CALL_GAP: `${CLIENT_LIMITS.minGapMs}ms`,
      FUEL_SYNC_INTERVAL: '2s',
      FUEL_SYNC_LOOKBACK: '1h',
    });
    try {
      const metric = async (name: string) => {
        const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
        return text.split('\n').find((l) => l.startsWith(name))?.split(' ').at(-1);
      };
      await waitUntil(async () => (await metric('telematics_fuel_sync_vehicles{state="synced"}')) === '5', 20_000, 'a planned fuel sync run');
      expect(await metric('telematics_upstream_token_expiry_timestamp_seconds{source="jwt_exp"}')).toBe(String(expiresAt / 1000));
      expect(await metric('telematics_fuel_sync_behind_seconds')).toBe('0');
      const keys = redisKeys(svc.cfg.QUEUE_NAME);
      expect(await redis.zcard(keys.fuelSynced)).toBe(5);
      // Every call went through the Redis pacer: its hash holds the last answers.
      expect(await redis.hget(keys.upstreamPacing, 'a')).toMatch(/^\d+(\.\d+)?( \d+(\.\d+)?)*$/);
      // The next runs, every 2 s, find nobody due for an hour: no more history calls.
      const calls = emu.state.calls.get('getfuelhistory');
      expect(calls).toBe(5);
      await new Promise((r) => setTimeout(r, 4_500));
      expect(emu.state.calls.get('getfuelhistory')).toBe(5);
      expect(emu.state.calls.get('listvehicles')).toBeGreaterThanOrEqual(2);
      expect(emu.state.throttledTotal()).toBe(0);
    } finally {
      await svc.close();
    }
  });

  it('takes the upstream\'s word when it says a vehicle\'s day is spent sooner than the budget: out of budget, not failed, no further call that day', async () => {
    let clock = Date.UTC(2026, 10, 27, 0, 0, 0);
    // The provider keeps 2 history calls a vehicle a day; the service was told 24.
    const emu = await emulator(2, () => clock, { ...scaledLimits(FACTOR), historyCallsPerDay: 2 });
    const { opts } = await setup(emu, () => clock);
    const results = [];
    for (let hour = 0; hour < 5; hour++, clock += HOUR) results.push((await syncFuel(opts)).plan!);
    expect(results.map((p) => [p.synced, p.outOfBudget])).toEqual([[2, 0], [2, 0], [0, 2], [0, 2], [0, 2]]);
    expect(emu.state.throttled.get('getfuelhistory')).toBe(2);
    expect(emu.state.calls.get('getfuelhistory')).toBe(6);
  });
});
