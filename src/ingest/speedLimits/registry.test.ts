import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runProgram } from '../../cli/program.js';
import { FLEET } from '../fleet/commands.js';
import { redisKeys } from '../queue/keys.js';
import { captureIO } from '../../../test/harness/io.js';
import { SpeedLimitRegistry, SpeedLimitWatch } from './registry.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
});
afterAll(() => redis?.disconnect());

describe('per-vehicle speed limits', () => {
  it('hold from when they are set: a record is judged by the limit of its own time', async () => {
    const r = new SpeedLimitRegistry(redis, `sl-${randomUUID()}`);
    await r.set('KA01', 40, 1_000);
    await r.set('KA01', 25, 5_000);
    await r.set('KA01', 0, 9_000);
    const limits = await r.read();
    expect([999, 1_000, 4_999, 5_000, 8_999, 9_000].map((t) => limits.at('KA01', t))).toEqual([undefined, 40, 40, 25, 25, undefined]);
    expect(limits.at('KA02', 5_000)).toBeUndefined();
    expect(limits.current()).toEqual([]);
    await expect(r.set('KA01', -1)).rejects.toThrow(RangeError);
  });

  it('telematics-fleet speed-limit sets, lists and clears, and a worker’s watch sees it at its next read', async () => {
    const queue = `q-${randomUUID()}`;
    const cli = async (...argv: string[]) => {
      const c = captureIO({ REDIS_URL: inject('redisUrl'), QUEUE_NAME: queue });
      const code = await runProgram(FLEET, argv, c.io);
      return { code, out: c.out(), err: c.err() };
    };
    const watch = new SpeedLimitWatch(new SpeedLimitRegistry(redis, redisKeys(queue).speedLimits));
    await watch.refresh();
    expect((await cli('speed-limit', 'set', 'KA01AB1234', '25')).out).toMatch(/^KA01AB1234: 25 km\/h from \d{4}-/);
    expect((await cli('speed-limit', 'list')).out).toMatch(/^VEHICLE +KM\/H +FROM\nKA01AB1234 +25 +\d{4}-/);
    await watch.refresh();
    expect(watch.current.at('KA01AB1234', Date.now())).toBe(25);
    expect((await cli('speed-limit', 'clear', 'KA01AB1234')).code).toBe(0);
    expect((await cli('speed-limit', 'list')).out).toBe('no vehicle has a speed limit of its own\n');
    expect(await cli('speed-limit', 'set', 'KA01AB1234', 'fast')).toMatchObject({ code: 2 });
  });
});
