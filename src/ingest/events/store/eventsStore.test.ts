import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, inject, vi } from 'vitest';
import { pickedValues, type WrittenRecord } from '../../../telemetry/record.js';
import { DEFAULT_DERIVE_OPTIONS, DERIVE_FIELDS, DERIVE_PICK, type Derived, type EventInput } from '../derive.js';
import { STREAMS } from '../inputs.js';
import { EventsStore, type CorrectionOutcome } from './eventsStore.js';
import type { PartitionKeys } from './partition.js';
import type { RecordSource } from '../corrections/records.js';
import { StateUpdateBatches } from '../../worker/batches.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
});
afterAll(() => redis?.disconnect());

const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);
const VEHICLES = Array.from({ length: 20 }, (_, i) => `KA01AB${String(1000 + i)}`);

function keysOf(prefix: string): PartitionKeys[] {
  return [
    {
      state: `${prefix}:state`,
      outbox: `${prefix}:outbox`,
      pending: `${prefix}:pending`,
      corrections: `${prefix}:corrections`,
      records: (v, stream) => `${prefix}:records:${stream}:${v}`,
      late: (v) => `${prefix}:late:${v}`,
    },
  ];
}

/** Job j: one CAN record of every vehicle at second j, its alarm flag flapping every 10 s. */
function job(j: number): WrittenRecord[] {
  const values = pickedValues(DERIVE_PICK, VEHICLES.length);
  const size = DERIVE_FIELDS.length;
  const slot = (name: string) => {
    const i = DERIVE_FIELDS.indexOf(name);
    if (i < 0) throw new Error(`derivation reads no ${name}`);
    return i;
  };
  return VEHICLES.map((vehicleno, i) => {
    values[i * size + slot('soc')] = 80 - j / 100;
    values[i * size + slot('alert_short_circuit')] = Math.floor(j / 10) % 2;
    return { vehicleno, type: 'can', time: T0 + j * 1000, values, at: i * size };
  });
}

/** A vehicle's events as `event@second`, in the order derived. */
function transitions(derived: readonly Derived[], vehicleno: string): string[] {
  return derived.flatMap((d) => d.events).filter((e) => e.vehicleno === vehicleno).map((e) => `${e.event}@${(e.time - T0) / 1000}`);
}

describe('vehicle events in Redis', () => {
  it('many jobs of the same vehicles at once, in one process and in two, all commit: each transition once, none refused as "kept changing"', async () => {
    const prefix = `ev-${randomUUID()}`;
    const derived: Derived[] = [];
    // A window over all 60 s: jobs run in any order, so no record may be late here.
    const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: 120_000, streamQuietMs: 5_000 };
    // Two processes serving the one partition, each running 12 jobs of the same 20 vehicles at once.
    const a = new EventsStore(redis, keysOf(prefix), opts, { onCommit: (d) => derived.push(...d) });
    const b = new EventsStore(redis, keysOf(prefix), opts, { onCommit: (d) => derived.push(...d) });
    const jobs = Array.from({ length: 60 }, (_, j) => job(j));
    const results = await Promise.allSettled(jobs.map((writtenRecords, j) => (j % 2 === 0 ? a : b).record(0, writtenRecords, T0 + 100_000)));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    // Everything pending committed once the vehicles fall quiet.
    while ((await a.sweep(0, T0 + 200_000)) > 0);
    expect(derived.reduce((n, d) => n + d.late, 0)).toBe(0);
    const events = derived.flatMap((d) => d.events);
    // Flags at 0 for 0–9 s, 1 for 10–19, …: raised at 10, 30, 50 s, cleared at 20, 40 s, for each vehicle, once.
    for (const v of VEHICLES) {
      expect(transitions(derived, v)).toEqual([
        'alert_short_circuit_raised@10',
        'alert_short_circuit_cleared@20',
        'alert_short_circuit_raised@30',
        'alert_short_circuit_cleared@40',
        'alert_short_circuit_raised@50',
      ]);
    }
    expect(await redis.xlen(`${prefix}:outbox`)).toBe(events.length);
  });

  it('takes a state it committed last from its cache unread, and derives from the stored one when another process moved it on', async () => {
    const prefix = `ev-${randomUUID()}`;
    const derived: Derived[] = [];
    const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: 120_000, streamQuietMs: 5_000 };
    const own = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
    try {
      const a = new EventsStore(own, keysOf(prefix), opts, { onCommit: (d) => derived.push(...d) });
      const b = new EventsStore(redis, keysOf(prefix), opts, { onCommit: (d) => derived.push(...d) });
      const reads = vi.spyOn(own, 'hmgetBuffer');
      for (let j = 0; j <= 15; j++) await a.record(0, job(j), T0 + 100_000);
      // The first job read the (absent) states; the next fifteen read nothing.
      expect(reads).toHaveBeenCalledTimes(1);
      // Another process takes the vehicles on: the flags clear at 20 s in its commits, not in a's cache.
      for (let j = 16; j <= 25; j++) await b.record(0, job(j), T0 + 100_000);
      // a's cached versions are stale now: its commit is refused, it reads the stored states and derives again.
      for (let j = 26; j <= 35; j++) await a.record(0, job(j), T0 + 100_000);
      expect(reads).toHaveBeenCalledTimes(2);
      while ((await a.sweep(0, T0 + 200_000)) > 0);
      for (const v of VEHICLES) expect(transitions(derived, v)).toEqual(['alert_short_circuit_raised@10', 'alert_short_circuit_cleared@20', 'alert_short_circuit_raised@30']);
    } finally {
      own.disconnect();
    }
  });

  it('derives the jobs a worker batches (worker/batches.ts) in one commit; a job that cannot be derived fails alone', async () => {
    const prefix = `ev-${randomUUID()}`;
    const commits: Derived[][] = [];
    const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: 120_000, streamQuietMs: 5_000 };
    const store = new EventsStore(redis, keysOf(prefix), opts, { onCommit: (d) => commits.push([...d]) });
    const batches = new StateUpdateBatches((partition, writtenRecords) => store.record(partition, writtenRecords, T0 + 100_000), { lingerMs: 0, maxJobs: 64, maxRecords: 10_000 });
    // Twelve jobs come at once: the first opens the partition's batch, the rest join it before it starts.
    await Promise.all(Array.from({ length: 12 }, (_, j) => batches.add(0, job(j))));
    expect(commits).toHaveLength(1);
    expect(commits[0]).toHaveLength(VEHICLES.length);
    // A vehicle whose stored state cannot be read fails the batch it is in: its job fails, the others commit alone.
    await redis.hset(`${prefix}:state`, 'KA01ZZ0001', '1 not a state');
    const values = pickedValues(DERIVE_PICK, 1);
    values[DERIVE_FIELDS.indexOf('soc')] = 50;
    const broken: WrittenRecord[] = [{ vehicleno: 'KA01ZZ0001', type: 'can', time: T0 + 12_000, values, at: 0 }];
    const results = await Promise.allSettled([...[12, 13, 14].map((j) => batches.add(0, job(j))), batches.add(0, broken), batches.add(0, job(15))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(commits).toHaveLength(5);
    while ((await store.sweep(0, T0 + 200_000)) > 0);
    for (const v of VEHICLES) expect(transitions(commits.flat(), v)).toEqual(['alert_short_circuit_raised@10']);
    expect(await redis.xlen(`${prefix}:outbox`)).toBe(VEHICLES.length);
  });

  it('commits a vehicle that adds thousands of pending records in one job (a buffer sent after a tunnel), each at its exact score', async () => {
    const prefix = `ev-${randomUUID()}`;
    const store = new EventsStore(redis, keysOf(prefix), { ...DEFAULT_DERIVE_OPTIONS, windowMs: 3_600_000 });
    const n = 5_000;
    const values = pickedValues(DERIVE_PICK, n);
    values.fill(NaN);
    const writtenRecords: WrittenRecord[] = Array.from({ length: n }, (_, i) => {
      values[i * DERIVE_FIELDS.length + DERIVE_FIELDS.indexOf('soc')] = 50;
      return { vehicleno: 'KA01AB0001', type: 'can', time: T0 + i * 100, values, at: i * DERIVE_FIELDS.length };
    });
    await store.record(0, writtenRecords, T0 + 600_000);
    // The buffer keeps maxPending (4096) records: the oldest beyond it are committed at once (forced).
    const members = await redis.zrange(`${prefix}:records:${STREAMS.get('can')!.streamId}:KA01AB0001`, 0, -1, 'WITHSCORES');
    expect(members.length / 2).toBe(DEFAULT_DERIVE_OPTIONS.maxPending);
    const scores = members.filter((_, i) => i % 2 === 1).map(Number);
    expect(scores).toEqual(Array.from({ length: scores.length }, (_, i) => T0 + (n - scores.length + i) * 100));
  });

  it('a record of the same instant in a later job merges into the stored one, which it replaces', async () => {
    const prefix = `ev-${randomUUID()}`;
    const derived: Derived[] = [];
    const store = new EventsStore(redis, keysOf(prefix), DEFAULT_DERIVE_OPTIONS, { onCommit: (d) => derived.push(...d) });
    const one = (fields: Record<string, number>): WrittenRecord[] => {
      const values = pickedValues(DERIVE_PICK, 1);
      for (const [k, x] of Object.entries(fields)) values[DERIVE_FIELDS.indexOf(k)] = x;
      return [{ vehicleno: 'KA01AB0001', type: 'can', time: T0, values, at: 0 }];
    };
    await store.record(0, one({ soc: 60, alert_short_circuit: 1 }), T0 + 1_000);
    // Another process (no cache) takes the second record of that instant: it reads the stored one and merges.
    const other = new EventsStore(redis, keysOf(prefix), DEFAULT_DERIVE_OPTIONS, { onCommit: (d) => derived.push(...d) });
    await other.record(0, one({ soc: 61, battery_voltage: 52, alert_short_circuit: 0 }), T0 + 2_000);
    const key = `${prefix}:records:${STREAMS.get('can')!.streamId}:KA01AB0001`;
    expect(await redis.zcard(key)).toBe(1);
    while ((await other.sweep(0, T0 + 100_000)) > 0);
    const events = derived.flatMap((d) => d.events);
    expect(events.map((e) => [e.event, e.fields])).toEqual([['alert_short_circuit_raised', { soc: 61, battery_voltage: 52 }]]);
  });

  it('keeps a vehicle’s checkpoints and ledger, dropping what the horizon passed; a late record is corrected from its records, once', async () => {
    const prefix = `ev-${randomUUID()}`;
    const MIN = 60_000;
    const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: 10_000, streamQuietMs: 5_000, checkpointIntervalMs: MIN, horizonMs: 5 * MIN };
    // Where the corrector reads a vehicle's records back: what was delivered (InfluxDB in the service).
    const kept = new Map<string, EventInput>();
    const source: RecordSource = {
      read: async (v, after, until) => [...kept.values()].filter((r) => r.time > after.get(STREAMS.get(r.type)!.streamId)! && r.time <= until.get(STREAMS.get(r.type)!.streamId)!),
    };
    const outcomes: CorrectionOutcome[] = [];
    const store = new EventsStore(redis, keysOf(prefix), opts, { source, correctionDelayMs: 1_000, onCorrection: (c) => outcomes.push(c) });
    const V = 'KA01LATE01';
    // 20 minutes of CAN a second, the soc falling a point a minute to a low at minute 15 (soc_low), each second's record written then derived.
    const rec = (t: number, soc: number, raised = 0): WrittenRecord & EventInput => {
      const values = pickedValues(DERIVE_PICK, 1);
      values[DERIVE_FIELDS.indexOf('soc')] = soc;
      values[DERIVE_FIELDS.indexOf('alert_short_circuit')] = raised;
      const r = { vehicleno: V, type: 'can', time: t, values, at: 0 };
      kept.set(`can:${t}`, r);
      return r;
    };
    for (let m = 0; m < 20; m++) await store.record(0, Array.from({ length: 60 }, (_, j) => rec(T0 + m * MIN + j * 1_000, 35 - m)), T0 + (m + 1) * MIN);
    const hash = async () => Object.keys(await redis.hgetall(`${prefix}:late:${V}`)).sort();
    // Checkpoints of the last five minutes and the newest before them; the ledger of their epochs (soc_low's, at minute 15).
    const fields = await hash();
    const epochs = fields.filter((f) => f.startsWith('c')).map((f) => Number(/^c(\d+):/.exec(f)![1]));
    expect(epochs.length).toBeGreaterThanOrEqual(6);
    expect(epochs.length).toBeLessThanOrEqual(8);
    expect(Math.min(...epochs)).toBeGreaterThan(0);
    expect(fields.filter((f) => f.startsWith('t'))).toHaveLength(1);
    // A record from minute 17, late, raising the short circuit: due in the corrections set, corrected from its records.
    await store.record(0, [rec(T0 + 17 * MIN + 500, 18, 1)], T0 + 20 * MIN + 1);
    expect(await redis.zscore(`${prefix}:corrections`, V)).toBe(String(T0 + 20 * MIN + 1 + 1_000));
    await redis.del(`${prefix}:outbox`);
    expect(await store.correctDue(0, T0 + 20 * MIN + 2_000)).toBe(1);
    expect(outcomes).toEqual([expect.objectContaining({ vehicleno: V, outcome: 'corrected', added: 2, corrected: 0, retracted: 0 })]);
    const told = (await redis.xrange(`${prefix}:outbox`, '-', '+')).map(([, f]) => JSON.parse(f[1]!) as { event: string; time: number; fields: { late?: number } });
    expect(told.map((e) => [e.event, e.time, e.fields.late])).toEqual([
      ['alert_short_circuit_raised', T0 + 17 * MIN + 500, 1],
      ['alert_short_circuit_cleared', T0 + 17 * MIN + 1_000, 1],
    ]);
    // Done: out of the set, and run again it finds nothing due; a record past the horizon is counted and changes nothing.
    expect(await redis.zscore(`${prefix}:corrections`, V)).toBeNull();
    const d: Derived[] = [];
    const again = new EventsStore(redis, keysOf(prefix), opts, { source, onCommit: (x) => d.push(...x) });
    await again.record(0, [rec(T0 + 2 * MIN, 33, 1)], T0 + 20 * MIN + 3_000);
    expect(d.map((x) => [x.late, x.tooLate])).toEqual([[1, 1]]);
    expect(await redis.zscore(`${prefix}:corrections`, V)).toBeNull();
  });
  it('a correction asked for from outside the records (the ledger set an immobilisation) judges them again from then, with what the derivation reads now; one asked for past what was committed, or of no vehicle, is dropped', async () => {
    const prefix = `ev-${randomUUID()}`;
    const MIN = 60_000;
    const immobilisations: Array<{ id: string; type: string; from: number; to: number }> = [];
    const lookup = { at: (_v: string, t: number) => immobilisations.find((im) => im.from <= t && t < im.to) };
    const opts = { ...DEFAULT_DERIVE_OPTIONS, windowMs: 10_000, streamQuietMs: 5_000, checkpointIntervalMs: MIN, immobilisations: { current: lookup } };
    const kept = new Map<string, EventInput>();
    const source: RecordSource = {
      read: async (v, after, until) => [...kept.values()].filter((r) => v === V && r.time > after.get(STREAMS.get(r.type)!.streamId)! && r.time <= until.get(STREAMS.get(r.type)!.streamId)!),
    };
    const outcomes: CorrectionOutcome[] = [];
    const store = new EventsStore(redis, keysOf(prefix), opts, { source, correctionDelayMs: 1_000, onCorrection: (c) => outcomes.push(c) });
    const V = 'KA01IMMO01';
    const fix = (t: number, ign: number): WrittenRecord & EventInput & { vehicleno: string } => {
      const values = pickedValues(DERIVE_PICK, 1);
      for (const [f, x] of Object.entries({ lat: 12.9, lng: 77.6, speed: 0, ignstatus: ign })) values[DERIVE_FIELDS.indexOf(f)] = x;
      const r = { vehicleno: V, type: 'gps', time: t, values, at: 0 };
      kept.set(`gps:${t}`, r);
      return r;
    };
    // Parked 5 minutes, then the ignition on for a minute: derived while the workers knew of no immobilisation.
    for (let m = 0; m < 6; m++) await store.record(0, Array.from({ length: 60 }, (_, j) => fix(T0 + m * MIN + j * 1_000, m === 5 ? 1 : 0)), T0 + (m + 1) * MIN);
    await store.sweep(0, T0 + 7 * MIN);
    // The ledger confirmed one from minute 2 (a device clock ahead of it): it asks, and the correction tells the event at the ignition on.
    immobilisations.push({ id: 'c1', type: 'movement', from: T0 + 2 * MIN, to: Infinity });
    await store.requestCorrection(V, T0 + 2 * MIN, T0 + 7 * MIN);
    expect(await redis.hexists(`${prefix}:late:${V}`, `r${T0 + 2 * MIN}`)).toBe(1);
    await redis.del(`${prefix}:outbox`);
    expect(await store.correctDue(0, T0 + 7 * MIN + 1_000)).toBe(1);
    const told = (await redis.xrange(`${prefix}:outbox`, '-', '+')).map(([, f]) => JSON.parse(f[1]!) as { event: string; time: number; fields: Record<string, number>; tags: Record<string, string> });
    expect(told.map((e) => [e.event, e.time, e.fields.late, e.tags.command_type])).toEqual([['moved_while_immobilised', T0 + 5 * MIN, 1, 'movement']]);
    // Done: the request dropped, nothing due.
    expect(await redis.hexists(`${prefix}:late:${V}`, `r${T0 + 2 * MIN}`)).toBe(0);
    expect(await redis.zscore(`${prefix}:corrections`, V)).toBeNull();
    // Asked for after all the vehicle committed: nothing to judge again, dropped unreplayed; of a vehicle never seen: the same, no state made.
    await store.requestCorrection(V, T0 + 30 * MIN, T0 + 30 * MIN);
    await store.requestCorrection('KA01NEVER1', T0 + 30 * MIN, T0 + 30 * MIN);
    expect(await store.correctDue(0, T0 + 31 * MIN)).toBe(0);
    expect(outcomes.slice(1).map((c) => [c.vehicleno, c.outcome]).sort()).toEqual([['KA01IMMO01', 'none'], ['KA01NEVER1', 'none']]);
    expect(await redis.exists(`${prefix}:late:KA01NEVER1`)).toBe(0);
    expect(await redis.hexists(`${prefix}:state`, 'KA01NEVER1')).toBe(0);
    await expect(store.requestCorrection(V, Number.NaN)).rejects.toThrow(/not a time/);
  });
});
