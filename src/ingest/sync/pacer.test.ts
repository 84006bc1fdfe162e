/**
 * The Redis-shared pacer keeps one account's limits across processes (issue #47): two clients, each on
 * its own Redis connection as two worker replicas would be, call at once against an emulator enforcing
 * the limits, and none of their calls is refused; with a pacer each of its own, they are.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../upstream/emulator/app.js';
import { scaledLimits } from '../../upstream/emulator/limits.js';
import { UpstreamClient } from '../../upstream/client/client.js';
import { InProcessPacer, type CallLimits, type UpstreamPacer } from '../../upstream/client/pacer.js';
import { RedisPacer } from './pacer.js';
import { uniqueName } from '../../../test/harness/service.js';

/** The provider's limits four times faster, on both sides: a gap of 100 ms, 12 calls a second. */
const FACTOR = 4;
const LIMITS: CallLimits = { maxCallsPerSecond: 3 * FACTOR, minGapMs: 400 / FACTOR };

let emu: RunningEmulator;
const connections: Redis[] = [];
const connect = (): Redis => {
  const r = new Redis(inject('redisUrl'));
  connections.push(r);
  return r;
};

beforeAll(async () => {
  emu = await startEmulator({ seed: 5, vehicles: 3, token: 'tok', limits: scaledLimits(FACTOR) });
});
afterAll(async () => {
  await emu.close();
  for (const r of connections) r.disconnect();
});

/** Two clients, each with its own pacer, each making `n` calls at once of every read; what the emulator refused meanwhile. */
async function twoClients(pacers: [UpstreamPacer, UpstreamPacer], n: number): Promise<number> {
  const before = emu.state.throttledTotal();
  const vehicleno = emu.fleet.vehicles[0]!.vehicleno;
  const calls = pacers.flatMap((pacer) => {
    const c = new UpstreamClient({ baseUrl: emu.url, token: 'tok', pacer, retries: 0 });
    return Array.from({ length: n }, (_, i) =>
      i % 2 === 0 ? c.listVehicles() : c.getFuelUsed({ vehicleno, from: Date.now() - 3_600_000, to: Date.now() }),
    );
  });
  await Promise.allSettled(calls);
  return emu.state.throttledTotal() - before;
}

describe('the Redis pacer', () => {
  it('holds two processes\' calls to one account\'s limits together: no 429; a pacer each gets them', async () => {
    const key = uniqueName('pacing');
    const started = performance.now();
    expect(await twoClients([new RedisPacer(connect(), key, LIMITS), new RedisPacer(connect(), key, LIMITS)], 8)).toBe(0);
    // 16 calls one at a time, each at least 100 ms after the answer before.
    expect(performance.now() - started).toBeGreaterThanOrEqual(15 * 100);
    // The pacing lives no longer than it matters: a minute after its last moment.
    const ttl = await connections[0]!.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(61_000);

    await new Promise((r) => setTimeout(r, 200));
    expect(await twoClients([new InProcessPacer(LIMITS), new InProcessPacer(LIMITS)], 8)).toBeGreaterThan(0);
  });

  it('holds every process on a Retry-After one of them was told', async () => {
    const key = uniqueName('pacing');
    const a = new RedisPacer(connect(), key, LIMITS);
    const b = new RedisPacer(connect(), key, LIMITS);
    await a.hold(600);
    const started = performance.now();
    const release = await b.acquire();
    expect(performance.now() - started).toBeGreaterThanOrEqual(590);
    await release();
  });

  it('lets a turn whose process died go after its lease', async () => {
    const key = uniqueName('pacing');
    const dead = new RedisPacer(connect(), key, LIMITS, { leaseMs: 300 });
    await dead.acquire(); // never released
    const started = performance.now();
    const release = await new RedisPacer(connect(), key, LIMITS).acquire();
    expect(performance.now() - started).toBeGreaterThanOrEqual(280);
    expect(performance.now() - started).toBeLessThan(2_000);
    await release();
  });
});
