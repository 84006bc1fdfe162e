import { expect } from 'vitest';
import { influxQL } from '../../src/devstack/influxd.js';
import type { KeptFeedResult } from '../../src/upstream/emulator/index.js';

/** A push record as a sender sends it. */
export interface SentRecord {
  vehicleno: string;
  type: string;
  data: Record<string, unknown>;
}

export interface Reconciliation {
  expected: number;
  missing: string[];
  wrong: string[];
  /** Points in InfluxDB that no acknowledged record accounts for (duplicates or strays). */
  extra: number;
}

const key = (type: string, vehicleno: string, time: number) => `${type}|${vehicleno}|${time}`;

/**
 * The README's rule, written out again here as an independent oracle: a cell temperature is not
 * stored when its sensor number is beyond no_of_temperature_sensors or its value is the -40 sentinel.
 */
export function unusedSensor(field: string, rec: SentRecord): boolean {
  const m = /^cell_temperature_(\d\d)$/.exec(field);
  if (!m || rec.type !== 'can') return false;
  const count = rec.data.no_of_temperature_sensors;
  return (count !== undefined && Number(m[1]) > Number(count)) || Number(rec.data[field]) === -40;
}

/** The record's key in InfluxDB: measurement (its type), vehicle, time in ms. */
export function recordKey(r: SentRecord): string {
  return key(r.type, r.vehicleno, Number(r.data.time));
}

/** A point's key, from a row of `SELECT *` (times as epoch ms) of `measurement`. */
export function pointKey(measurement: string, row: Record<string, unknown>): string {
  return key(measurement, String(row.vehicleno), Number(row.time));
}

/**
 * What is wrong with the point stored for `rec` (a row of `SELECT *`): a value other than the one
 * sent, an unused sensor's reading stored, a field stored that was never sent. Empty when it is right.
 */
export function pointProblems(rec: SentRecord, p: Record<string, unknown>): string[] {
  const k = recordKey(rec);
  const wrong: string[] = [];
  for (const [f, v] of Object.entries(rec.data)) {
    if (f === 'time') continue;
    const stored = p[f] ?? null;
    if (unusedSensor(f, rec)) {
      if (stored !== null) wrong.push(`${k} ${f}: unused sensor reading ${String(v)} was stored`);
    } else if (stored !== Number(v)) wrong.push(`${k} ${f}: sent ${String(v)}, stored ${String(stored)}`);
  }
  for (const [f, v] of Object.entries(p)) {
    if (f !== 'time' && f !== 'vehicleno' && v !== null && !(f in rec.data)) wrong.push(`${k} ${f}: stored ${String(v)} but never sent`);
  }
  return wrong;
}

/**
 * Every acknowledged record must be a point with exactly its values, and InfluxDB must hold no
 * other point: none missing, none duplicated. Records are assumed to carry `time` (the emulator's do).
 */
export async function reconcile(rawUrl: string, db: string, acked: readonly SentRecord[]): Promise<Reconciliation> {
  // InfluxDB 1.x may show a just-written point before all its fields are visible: let writes settle.
  await new Promise((r) => setTimeout(r, 250));
  const want = new Map<string, SentRecord>();
  for (const r of acked) want.set(key(r.type, r.vehicleno, Number(r.data.time)), r);
  const points = new Map<string, Record<string, unknown>>();
  for (const m of ['gps', 'can']) {
    for (const row of await influxQL(rawUrl, db, `SELECT * FROM "${m}"`)) {
      points.set(key(m, String(row.vehicleno), Number(row.time)), row);
    }
  }
  const missing: string[] = [];
  const wrong: string[] = [];
  for (const [k, rec] of want) {
    const p = points.get(k);
    if (!p) missing.push(k);
    else wrong.push(...pointProblems(rec, p));
  }
  let extra = 0;
  for (const k of points.keys()) if (!want.has(k)) extra++;
  return { expected: want.size, missing, wrong, extra };
}

/** Points in both measurements (rows of `SELECT *`: CAN points share no field to count by). */
export async function countPoints(rawUrl: string, db: string): Promise<number> {
  let n = 0;
  for (const m of ['gps', 'can']) n += (await influxQL(rawUrl, db, `SELECT * FROM "${m}"`).catch(() => [])).length;
  return n;
}

/**
 * Reconciles until nothing is missing or `timeoutMs` passed (writes may still be settling after a
 * fault), then returns the last reconciliation with at most five missing keys, for a readable diff.
 */
export async function reconcileSettled(rawUrl: string, db: string, acked: readonly SentRecord[], timeoutMs = 30_000): Promise<Reconciliation> {
  const deadline = Date.now() + timeoutMs;
  let r = await reconcile(rawUrl, db, acked);
  while (r.missing.length > 0 && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 250));
    r = await reconcile(rawUrl, db, acked);
  }
  return { ...r, missing: r.missing.slice(0, 5) };
}

/**
 * What a fault test asserts of a retrying sender's feed that ran through the fault: it met the fault
 * (retried), gave up on nothing, had at least `minAcked` records acknowledged, and every one of them
 * is in InfluxDB exactly, with nothing extra.
 */
export async function expectFeedLandedThroughFault(rawUrl: string, db: string, feed: KeptFeedResult, minAcked: number): Promise<void> {
  expect(feed.failed).toBe(0);
  expect(feed.acknowledged).toBeGreaterThan(minAcked);
  expect(feed.retries).toBeGreaterThan(0);
  expect(await reconcileSettled(rawUrl, db, feed.records.acknowledged)).toEqual({ expected: feed.acknowledged, missing: [], wrong: [], extra: 0 });
}
