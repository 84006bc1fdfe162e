import { afterAll, describe, expect, inject, it } from 'vitest';
import { influxQL } from '../../devstack/influxd.js';
import { startV2Front, type InfluxProfile, type V2Front } from '../../devstack/v2front.js';
import { CoalescingSink } from './coalesce.js';
import { InfluxSink } from './influx.js';
import { IsolatingSink } from './isolate.js';
import { Lines } from './lines.js';
import { PartialWriteError, WriteError } from './sink.js';

/**
 * The write path against each InfluxDB the service promises, as the front answers for it (v2front.ts),
 * storing through the real influxd: every valid line lands once, no valid line is refused, and nothing
 * a server said it stored is sent again.
 */
const raw = inject('influxRawUrl');
const TOKEN = 'servers-test';
const fronts: V2Front[] = [];
afterAll(async () => Promise.all(fronts.map((f) => f.close())));

let dbs = 0;
async function setUp(profile: InfluxProfile, opts: { maxBytes?: number; api?: 'v2' | 'v3' } = {}) {
  const front = await startV2Front({ upstream: raw, token: TOKEN, profile });
  fronts.push(front);
  const db = `servers_${profile.replace(/\W/g, '_')}_${dbs++}`;
  await influxQL(raw, db, `CREATE DATABASE "${db}"`);
  const sinkFor = (bucket: string) => new CoalescingSink(new IsolatingSink(new InfluxSink({ url: front.url, token: TOKEN, org: '', bucket, timeoutMs: 10_000, ...(opts.api ? { api: opts.api } : {}) })), { maxLines: 5_000, maxInFlight: 2, ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}) });
  const count = async (measurement = 'can', where = '') => ((await influxQL<{ count: number }>(raw, db, `SELECT count(soc) FROM ${measurement} ${where}`))[0]?.count ?? 0);
  return { front, db, sink: sinkFor(db), sinkFor, count };
}
const T = 1_763_700_000_000;
const good = (i: number, v = 'V1') => `can,vehicleno=${v} soc=${i}.5,battery_voltage=51.25 ${T + i}`;
/** soc as a string: a field-type conflict with the floats before it. */
const conflicting = (i: number) => `can,vehicleno=V1 soc="high" ${T + i}`;

describe.each(['1.8', '2', '3-core', 'serverless'] as const)('InfluxDB %s', (profile) => {
  it('a field-type conflict among good lines: only the conflicting lines are refused, every good one lands', async () => {
    const { sink, count, front } = await setUp(profile);
    await sink.write(Lines.of(Array.from({ length: 100 }, (_, i) => good(i))));
    const lines = Array.from({ length: 300 }, (_, i) => (i === 17 || i === 250 ? conflicting(1_000 + i) : good(1_000 + i)));
    const before = front.writeTimes().length;
    const err = await sink.write(Lines.of(lines)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PartialWriteError);
    expect((err as PartialWriteError).refused.map((r) => r.line)).toEqual([17, 250]);
    expect(await count()).toBe(100 + 298);
    // Cloud named the lines and wrote the rest: one request, nothing sent again.
    if (profile === 'serverless') expect(front.writeTimes().length - before).toBe(1);
  });

  it('a line that does not parse among good lines: only it is refused, every good one lands', async () => {
    const { sink, count } = await setUp(profile);
    const lines = Array.from({ length: 120 }, (_, i) => (i === 60 ? `can,vehicleno=V1 soc=1.5 not-a-time` : good(i)));
    const err = await sink.write(Lines.of(lines)).catch((e: unknown) => e);
    expect((err as PartialWriteError).refused.map((r) => r.line)).toEqual([60]);
    expect(await count()).toBe(119);
  });

  it('a database that does not exist: retried, no line refused (InfluxDB 3 makes it at the first write)', async () => {
    const { sinkFor } = await setUp(profile);
    const missing = `servers_missing_${profile.replace(/\W/g, '_')}_${dbs++}`;
    const write = sinkFor(missing).write(Lines.of([good(1), good(2)]));
    if (profile === '3-core') {
      await write;
      expect((await influxQL<{ count: number }>(raw, missing, 'SELECT count(soc) FROM can'))[0]?.count).toBe(2);
      return;
    }
    const err = await write.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect(err).not.toBeInstanceOf(PartialWriteError);
    expect((err as WriteError).retryable).toBe(true);
  });
});

describe('InfluxDB 3 Core through /api/v3/write_lp (INFLUX_API=v3)', () => {
  it('writes the good lines of a request with a bad one, names the bad ones, and nothing is sent again', async () => {
    const { sink, count, front } = await setUp('3-core', { api: 'v3' });
    await sink.write(Lines.of(Array.from({ length: 100 }, (_, i) => good(i))));
    const before = front.writeTimes().length;
    const err = await sink.write(Lines.of(Array.from({ length: 300 }, (_, i) => (i === 17 || i === 250 ? conflicting(1_000 + i) : good(1_000 + i))))).catch((e: unknown) => e);
    expect((err as PartialWriteError).refused.map((r) => r.line)).toEqual([17, 250]);
    expect((err as PartialWriteError).refused[0]!.error).toMatch(/field type conflict/);
    expect(front.writeTimes().length - before).toBe(1);
    expect(await count()).toBe(100 + 298);
  });
});

describe.each(['3-core', 'serverless'] as const)('InfluxDB %s: a body over its cap', (profile) => {
  it('is split on 413 and refuses no line; with WRITE_MAX_BYTES under the cap, no request is refused at all', async () => {
    const { sink, count, front } = await setUp(profile);
    front.setLimits({ maxBytes: 64 * 1024 });
    const lines = Array.from({ length: 5_000 }, (_, i) => good(i, `V${i % 7}`));
    await sink.write(Lines.of(lines));
    expect(await count()).toBe(5_000);
    const capped = await setUp(profile, { maxBytes: 60 * 1024 });
    capped.front.setLimits({ maxBytes: 64 * 1024 });
    const before = capped.front.writeTimes().length;
    await capped.sink.write(Lines.of(lines));
    expect(await capped.count()).toBe(5_000);
    // 5,000 lines of about 60 bytes in requests under 60 KiB: five or six, none refused.
    expect(capped.front.writeTimes().length - before).toBeLessThanOrEqual(6);
  });
});

describe('InfluxDB 3 Core: a sixth database', () => {
  it('is a refusal of the request: retried with its cause, no line refused; once the limit is raised every line lands', async () => {
    const { front, sinkFor } = await setUp('3-core');
    for (let d = 0; d < 5; d++) {
      const db = `servers_core_limit_${d}_${dbs}`;
      await sinkFor(db).write(Lines.of([good(d)]));
    }
    const sixth = `servers_core_limit_sixth_${dbs}`;
    const lines = Lines.of(Array.from({ length: 200 }, (_, i) => good(i)));
    const err = await sinkFor(sixth).write(lines).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect(err).not.toBeInstanceOf(PartialWriteError);
    expect((err as WriteError).retryable).toBe(true);
    expect((err as WriteError).message).toMatch(/exceed number of databases limit of 5/);
    front.setLimits({ maxDatabases: 10 });
    await sinkFor(sixth).write(lines);
    expect((await influxQL<{ count: number }>(raw, sixth, 'SELECT count(soc) FROM can'))[0]?.count).toBe(200);
  });
});

describe('InfluxDB Cloud Serverless: throttled', () => {
  it.each([429, 503] as const)('%i with Retry-After: retried, and no request reaches the store before it ends', async (status) => {
    const { front, sink, count } = await setUp('serverless');
    front.answerNext(status, 2);
    const err = await sink.write(Lines.of([good(1)])).catch((e: unknown) => e);
    expect((err as WriteError).retryable).toBe(true);
    expect((err as WriteError).answer.retryAfterMs).toBe(2_000);
    const refusedAt = front.writeTimes().at(-1)!;
    await sink.write(Lines.of([good(2)]));
    expect(front.writeTimes().at(-1)! - refusedAt).toBeGreaterThanOrEqual(1_990);
    expect(await count()).toBe(1);
  });
});
