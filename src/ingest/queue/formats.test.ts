import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { FIELD_DICTIONARY } from '../../telemetry/fields.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { rowsOf } from '../flatten/points.js';
import { decodeColumnar, decodeJob, DICTIONARY_WITHOUT_K, encodeJob, encodePointsJob, payloadFormat } from './codec.js';
import { agreed, flattenFor, FormatWatch, ReadsAnnouncer, THIS_RELEASE, unreadable, type JobFormat } from './formats.js';
import { Producer } from './producer.js';

const N = FIELD_DICTIONARY.length;
const LAST = FIELD_DICTIONARY[N - 1]!;
const T = 1_763_700_000_000;
const OLDER = { formats: [1, 2], dictionary: N - 1 };

describe('the format receivers write', () => {
  it('is this release’s newest with no live worker, else the newest version and smallest dictionary all read', () => {
    expect(agreed(THIS_RELEASE, [])).toEqual({ v: 3, dictionary: N });
    expect(agreed(THIS_RELEASE, [THIS_RELEASE])).toEqual({ v: 3, dictionary: N });
    expect(agreed(THIS_RELEASE, [THIS_RELEASE, OLDER])).toEqual({ v: 2, dictionary: N - 1 });
    expect(agreed(THIS_RELEASE, [{ formats: [2, 3], dictionary: N - 5 }, { formats: [1, 2, 3, 4], dictionary: N + 3 }])).toEqual({ v: 3, dictionary: N - 5 });
    // Never beyond what this release writes, however new the workers.
    expect(agreed(THIS_RELEASE, [{ formats: [3, 4], dictionary: N + 9 }])).toEqual({ v: 3, dictionary: N });
    // Nothing in common: this release's newest, which the workers that cannot read it leave for others.
    expect(agreed(THIS_RELEASE, [{ formats: [4], dictionary: N }])).toEqual({ v: 3, dictionary: N });
  });
});

describe('a job a worker cannot read', () => {
  it('is one of a newer payload version or a larger dictionary, never one that is merely malformed', () => {
    expect(unreadable({ v: 4, n: 1 }, THIS_RELEASE)).toMatchObject({ reason: 'format' });
    expect(unreadable({ v: 4 }, THIS_RELEASE)!.message).toBe('job written by a newer release (payload v4, this worker reads v1, v2, v3): this worker leaves it for one that reads it; upgrade the workers');
    expect(unreadable({ v: 3, k: N + 1, t: '' }, THIS_RELEASE)).toEqual({
      reason: 'dictionary',
      message: `job written by a newer release (dictionary ${N + 1} > ${N}): this worker leaves it for one that reads it; upgrade the workers`,
    });
    expect(unreadable({ v: 2, k: N + 1, c: [] }, THIS_RELEASE)).toMatchObject({ reason: 'dictionary' });
    expect(unreadable({ v: 3, k: N, t: '' }, THIS_RELEASE)).toBeUndefined();
    expect(unreadable({ v: 3, t: '' }, THIS_RELEASE)).toBeUndefined();
    expect(unreadable({ v: 1, records: [] }, { formats: [1], dictionary: 0 })).toBeUndefined();
    expect(unreadable({ v: 3, t: '' }, OLDER)).toMatchObject({ reason: 'format' });
    expect(unreadable({ v: 2, k: N, c: [] }, OLDER)).toMatchObject({ reason: 'dictionary' });
    // Not a payload of any release: it fails, and ends as a dead letter as before.
    for (const junk of [null, 'x', {}, { v: 'three' }, { v: 2.5 }, { v: 0 }]) expect(unreadable(junk, THIS_RELEASE)).toBeUndefined();
  });

  it('says its format: `k` absent is the dictionary of the releases before it, 74 names, unchanged since', () => {
    expect(DICTIONARY_WITHOUT_K).toBe(74);
    expect(FIELD_DICTIONARY.length).toBeGreaterThanOrEqual(DICTIONARY_WITHOUT_K);
    expect([FIELD_DICTIONARY[0], FIELD_DICTIONARY[5], FIELD_DICTIONARY[73]]).toEqual(['lat', 'time', 'alert_under_temp']);
    expect(payloadFormat({ v: 3, n: 1, d: 0, t: '' })).toEqual({ v: 3, k: 74 });
    expect(payloadFormat({ v: 2, n: 1, c: [] })).toEqual({ v: 2, k: 74 });
    expect(payloadFormat({ v: 1, records: [] })).toEqual({ v: 1, k: 0 });
    expect(payloadFormat({ n: 1 })).toBeUndefined();
  });
});

const records: TelemetryRecord[] = [
  { vehicleno: 'KA01AB1234', type: 'gps', time: T, fields: { lat: 12.5, lng: 77.25, alti: 920, speed: 38.5, ignstatus: 1 } },
  { vehicleno: 'MH12XY9876', type: 'can', time: T + 1, fields: { soc: 44, [LAST]: 1, new_param: 0.5 } },
];

describe('jobs for older workers', () => {
  it('v2 numbers names only below the dictionary limit and says it; the rest go as strings', () => {
    const job = encodeJob(records, N - 1);
    expect(job.k).toBe(N - 1);
    const names = job.c![2];
    expect(names).toContain(LAST);
    expect(names).toContain('new_param');
    expect(names.filter((x) => typeof x === 'number').every((x) => (x as number) < N - 1)).toBe(true);
    expect(decodeColumnar(job.c!, job.n)).toEqual(records);
    expect(encodeJob(records).k).toBe(N);
    expect(encodeJob(records).c![2]).toContain(N - 1);
  });

  it('v3 says the dictionary its rows were written for', () => {
    const rows = rowsOf(records, { temperatureSentinels: [] });
    expect(encodePointsJob([{ rows, from: 0, to: 2 }]).k).toBe(N);
    expect(encodePointsJob([{ rows, from: 0, to: 2 }], true, N - 1).k).toBe(N - 1);
  });

  it('FlattenOptions for a smaller dictionary are made once, and are the options themselves for the whole one', () => {
    const base = { temperatureSentinels: [-40] };
    expect(flattenFor(base, N)).toBe(base);
    expect(flattenFor(base, N - 1)).toBe(flattenFor(base, N - 1));
    expect(flattenFor(base, N - 1)).toEqual({ ...base, dictionary: N - 1 });
  });
});

/** On the run's real Redis. */
let redis: Redis;
beforeAll(async () => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
});
afterAll(() => redis?.disconnect());

const key = () => `formats_${randomBytes(4).toString('hex')}:readers`;

describe('workers announce what they read; receivers agree on it', () => {
  it('reads every live announcement, drops the expired ones, and forgets a worker that stopped', async () => {
    const k = key();
    const watch = new FormatWatch(redis, k);
    const read = async () => {
      const c = await watch.read();
      return { format: c.format, readers: c.live.length };
    };
    expect(watch.current).toEqual({ v: 3, dictionary: N });
    expect(await read()).toEqual({ format: { v: 3, dictionary: N }, readers: 0 });

    const current = new ReadsAnnouncer(redis, k, THIS_RELEASE);
    const older = new ReadsAnnouncer(redis, k, OLDER);
    await current.announce();
    await older.announce();
    expect(await read()).toEqual({ format: { v: 2, dictionary: N - 1 }, readers: 2 });
    expect(watch.current).toEqual({ v: 2, dictionary: N - 1 });
    expect(await redis.pttl(k)).toBeGreaterThan(60_000);

    await older.stop();
    expect(await read()).toEqual({ format: { v: 3, dictionary: N }, readers: 1 });

    // A worker killed stops counting once its announcement expires, and the receiver removes it.
    const killed = new ReadsAnnouncer(redis, k, OLDER);
    await killed.announce(Date.now() - 31_000);
    expect(await redis.hexists(k, killed.id)).toBe(1);
    expect((await watch.read()).format).toEqual({ v: 3, dictionary: N });
    expect(await redis.hexists(k, killed.id)).toBe(0);

    // A later release's announcement with more in it still counts; something else in the hash does not.
    await redis.hset(k, 'later', JSON.stringify({ formats: [2, 3, 4], dictionary: N + 2, until: Date.now() + 30_000, also: 'x' }), 'junk', 'not json');
    expect(await read()).toEqual({ format: { v: 3, dictionary: N }, readers: 2 });
    await current.stop();
    await redis.del(k);
  });

  it('the producer writes v2 for a live worker that reads no v3, numbering names below its dictionary', async () => {
    let format: JobFormat = { v: 2, dictionary: N - 1 };
    const p = new Producer(redis, {
      queueName: `formats_${randomBytes(4).toString('hex')}`,
      maxRecordsPerJob: 1_000,
      flatten: { temperatureSentinels: [] },
      timeoutMs: 5_000,
      retry: { spanMs: 3_600_000, baseMs: 1_000, maxMs: 60_000 },
      format: () => format,
    });
    try {
      await p.enqueue(records);
      format = { v: 3, dictionary: N };
      await p.enqueue(records);
      const jobs = (await p.queue.getJobs(['wait'], 0, -1, true)).map((j) => j.data as { v: number; k: number; c?: unknown[] });
      expect(jobs.map((j) => [j.v, j.k])).toEqual([
        [2, N - 1],
        [3, N],
      ]);
      expect(jobs[0]!.c![2]).toContain(LAST);
      for (const j of jobs) expect(decodeJob(j)).toEqual(records);
    } finally {
      await p.queue.obliterate({ force: true });
      await p.close();
    }
  });
});
