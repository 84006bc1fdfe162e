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

/** Count polls made so far (each a query InfluxDB spends CPU on: the store rounds report their share). */
export const polls = { count: 0 };

/** Records a poll counts together; a chunk found complete is not counted again. */
const CHUNK = 10_000;

/**
 * Polls until `expected` points of [from, to) are queryable; returns when the poll that saw them
 * answered. The window is counted in chunks of CHUNK records, and a chunk found whole is left out of
 * later polls: a count costs influxd CPU in proportion to the points it reads (50–70 core-ms over
 * 200,000), and counting the whole window every 50 ms while a queue drains spent more of influxd's CPU
 * on the polls than the ceiling's one poll does (round 8). `gate`: polled every 10 ms before any count, for 30 s at most.
 */
export async function waitForPoints(rawUrl: string, db: string, from: number, to: number, expected: number, intervalMs = 50, gate?: () => Promise<boolean>): Promise<number> {
  const deadline = Date.now() + P.timeoutMs;
  // A cheap question first, when the caller has one (influxd's own count of points taken): no data is
  // read until it says yes, or for 30 s (then the counts decide, as without it).
  const gateDeadline = Math.min(deadline, Date.now() + 30_000);
  while (gate && Date.now() < gateDeadline && !(await gate())) await sleep(10);
  let open: Array<[number, number]> = [];
  for (let a = from; a < to; a += CHUNK) open.push([a, Math.min(to, a + CHUNK)]);
  let whole = 0;
  let seen = 0;
  while (Date.now() < deadline) {
    const t = now();
    const q = open.map(([a, b]) => `SELECT count(lat) FROM gps WHERE ${window(a, b)}; SELECT count(soc) FROM can WHERE ${window(a, b)}`).join('; ');
    const results = open.length > 0 ? await influxQLStatements<{ count?: number }>(rawUrl, db, q) : [];
    polls.count++;
    const counts = open.map((_, i) => [results[2 * i], results[2 * i + 1]].reduce((n, rows) => n + (rows ?? []).reduce((m, row) => m + Number(row.count ?? 0), 0), 0));
    seen = whole + counts.reduce((a, b) => a + b, 0);
    if (seen >= expected) return now();
    open = open.filter(([a, b], i) => {
      if (counts[i]! < b - a) return true;
      whole += b - a;
      return false;
    });
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


