/** What the benchmark reads back: records carry unique times, so a point's time names its record. */
import type { Redis } from 'ioredis';
import { influxQLStatements } from '../../src/devstack/influxd.js';
import { BenchData } from './data.js';
import type { LoadResult } from './load.js';
import { P } from './options.js';

export const now = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (m: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
};

const window = (from: number, to: number) => `time >= ${BenchData.timeOf(from)}ms AND time < ${BenchData.timeOf(to)}ms`;

/** Points of records [from, to) queryable now: every gps point has `lat`, every can point `soc`. */
export async function countPoints(rawUrl: string, db: string, from: number, to: number): Promise<number> {
  const w = window(from, to);
  const results = await influxQLStatements<{ count?: number }>(rawUrl, db, `SELECT count(lat) FROM gps WHERE ${w}; SELECT count(soc) FROM can WHERE ${w}`);
  let n = 0;
  for (const rows of results) for (const row of rows) n += Number(row.count ?? 0);
  return n;
}

/** Polls until `expected` points of [from, to) are queryable; returns when the poll that saw them answered. */
export async function waitForPoints(rawUrl: string, db: string, from: number, to: number, expected: number, intervalMs = 50): Promise<number> {
  const deadline = Date.now() + P.timeoutMs;
  let seen = 0;
  while (Date.now() < deadline) {
    const t = now();
    seen = await countPoints(rawUrl, db, from, to);
    if (seen >= expected) return now();
    const spent = now() - t;
    if (spent < intervalMs) await sleep(intervalMs - spent);
  }
  throw new Error(`only ${seen} of ${expected} records of [${from}, ${to}) reached InfluxDB within ${P.timeoutMs} ms`);
}

/**
 * Latency probe: polls for the points of [from, to) not seen yet (records carry unique times, so
 * a time names a record) and notes when each first became queryable (the answer time of the poll).
 */
export function probeVisibility(rawUrl: string, db: string, from: number, to: number, intervalMs = 20) {
  const seenAt = new Float64Array(to - from).fill(-1);
  let missing = to - from;
  let lowest = from;
  let stop = false;
  const done = (async () => {
    const deadline = Date.now() + P.timeoutMs + P.latencyMs;
    while (!stop && missing > 0 && Date.now() < deadline) {
      const t = now();
      const w = window(lowest, to);
      const results = await influxQLStatements<{ time: number }>(rawUrl, db, `SELECT lat FROM gps WHERE ${w}; SELECT soc FROM can WHERE ${w}`);
      const answered = now();
      for (const rows of results) {
        for (const row of rows) {
          const i = BenchData.indexOf(Number(row.time)) - from;
          if (seenAt[i] === -1) {
            seenAt[i] = answered;
            missing--;
          }
        }
      }
      while (lowest < to && seenAt[lowest - from] !== -1) lowest++;
      const spent = now() - t;
      if (spent < intervalMs) await sleep(intervalMs - spent);
    }
  })();
  return {
    seenAt,
    async finish(): Promise<number> {
      await done;
      stop = true;
      return missing;
    },
    cancel() {
      stop = true;
    },
  };
}

export function pct(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function checkAll2xx(what: string, r: LoadResult): void {
  const bad = Object.entries(r.statuses).filter(([s]) => !s.startsWith('2'));
  if (bad.length > 0) throw new Error(`${what}: non-2xx answers ${JSON.stringify(r.statuses)}; e.g. ${r.errors.join(' | ')}`);
}

export async function redisUsedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

