/**
 * Reconciliation as a run goes, in memory bounded by the rate times the check lag (#23): acknowledged
 * records wait in buckets of their own time until a check has found them in InfluxDB, then are
 * dropped; a bucket keeps only two counts once nothing of it is pending. An hour at 1,500 records/s
 * (5.4 M records) keeps what was acknowledged in the last few tens of seconds, not 5.4 M records.
 *
 * A bucket is a window of record time, `bucketMs` wide. Once it ended `checkAfterMs` ago, a check
 * reads the window's points of both measurements back (`SELECT *`, the window's bounds, times in ms)
 * and compares every pending record with its point (`pointProblems`, the suite's oracle). A record
 * found right is verified and dropped; one not found, or found with other values (InfluxDB 1.x may
 * show a point before all its fields), is checked again next time, and counted missing or wrong once
 * it has waited `giveUpAfterMs` since its acknowledgement, or at the end of the run. Every window of
 * the run is read at least once, and its points beyond those accounted for are counted as extra
 * (points no acknowledged record accounts for); a record acknowledged after its window was read
 * opens the window again, so an acknowledgement that comes late is not mistaken for an extra point.
 */
import { setImmediate } from 'node:timers/promises';
import { pointKey, pointProblems, recordKey, type SentRecord } from '../harness/reconcile.js';

export interface CheckerOptions {
  rawUrl: string;
  db: string;
  /** Start of the run: the first window starts here (rounded down to `bucketMs`). */
  startMs: number;
  /**
   * Width of a window of record time; default 30 s. A read of InfluxDB 1.x costs about a second
   * whatever the window (an iterator per series and field: 5,000 vehicles' CAN series have ~70
   * fields), plus ~50 µs a point; wider windows verify more per second, narrower ones hold fewer
   * records (the checker holds about rate × (window + checkAfterMs + a read)).
   */
  bucketMs?: number;
  /** A window is read once it ended this long ago; default 5 s. */
  checkAfterMs?: number;
  /** A record not found right this long after its acknowledgement counts as missing or wrong; default 5 min. */
  giveUpAfterMs?: number;
  /** A window with records still pending is read again at most this often; default 5 s. */
  recheckMs?: number;
  now?: () => number;
}

export interface CheckerTotals {
  /** Records handed to the checker (acknowledged). */
  acknowledged: number;
  /** Found with exactly their values. */
  verified: number;
  missing: number;
  wrong: number;
  /** Points in the windows read that no acknowledged record accounts for. */
  extra: number;
  /** Records acknowledged and not yet found right: what the checker holds now. */
  pending: number;
  /** Windows read, InfluxQL requests made, and the time they took. */
  windows: number;
  queries: number;
  queryMs: number;
  /** The first few problems, for a readable report. */
  problems: string[];
}

interface Batch {
  at: number;
  records: SentRecord[];
}

interface Bucket {
  pending: Batch[];
  pendingCount: number;
  /** Records of this window found in InfluxDB (right or wrong): the points they account for. */
  accounted: number;
  /** Points of the window beyond those accounted for, at its last reading. */
  extra: number;
  read: boolean;
  lastReadAt: number;
}

const MAX_PROBLEMS = 10;

export class IncrementalChecker {
  private readonly buckets = new Map<number, Bucket>();
  private readonly bucketMs: number;
  private readonly checkAfterMs: number;
  private readonly giveUpAfterMs: number;
  private readonly recheckMs: number;
  private readonly now: () => number;
  private readonly firstBucket: number;
  /** Every window up to this one exists (so that each is read at least once). */
  private lastCreated: number;
  private readonly totals: CheckerTotals = { acknowledged: 0, verified: 0, missing: 0, wrong: 0, extra: 0, pending: 0, windows: 0, queries: 0, queryMs: 0, problems: [] };
  private running: Promise<void> | undefined;

  constructor(private readonly opts: CheckerOptions) {
    this.bucketMs = opts.bucketMs ?? 30_000;
    this.checkAfterMs = opts.checkAfterMs ?? 5_000;
    this.giveUpAfterMs = opts.giveUpAfterMs ?? 300_000;
    this.recheckMs = opts.recheckMs ?? 5_000;
    this.now = opts.now ?? Date.now;
    this.firstBucket = Math.floor(opts.startMs / this.bucketMs);
    this.lastCreated = this.firstBucket - 1;
  }

  /** Acknowledged records (the feed's `onAck`): held until a check finds them. */
  add(records: readonly SentRecord[]): void {
    if (records.length === 0) return;
    const at = this.now();
    // A delivery mixes vehicles and types, but its records' times are close: usually one window.
    const byBucket = new Map<number, SentRecord[]>();
    for (const r of records) {
      const b = Math.floor(Number(r.data.time) / this.bucketMs);
      let list = byBucket.get(b);
      if (!list) byBucket.set(b, (list = []));
      list.push(r);
    }
    for (const [b, list] of byBucket) {
      const bucket = this.bucket(b);
      bucket.pending.push({ at, records: list });
      bucket.pendingCount += list.length;
    }
    this.totals.acknowledged += records.length;
    this.totals.pending += records.length;
  }

  /** The counts so far (a copy). */
  snapshot(): CheckerTotals {
    return { ...this.totals, problems: [...this.totals.problems] };
  }

  /** Reads the windows that are due; one pass at a time (a call while one runs waits for it). */
  check(opts: { final?: boolean } = {}): Promise<void> {
    const run = (this.running ?? Promise.resolve()).then(() => this.pass(opts.final ?? false));
    this.running = run.catch(() => {});
    return run;
  }

  /**
   * At the end of a run: checks until nothing is pending or `timeoutMs` passed, reading every window;
   * then whatever is still pending counts as missing or wrong.
   */
  async settle(timeoutMs: number, pauseMs = 1_000): Promise<CheckerTotals> {
    const deadline = this.now() + timeoutMs;
    for (;;) {
      await this.check({ final: true });
      if (this.totals.pending === 0 || this.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
    await this.check({ final: true });
    for (const [b, bucket] of this.buckets) if (bucket.pendingCount > 0) await this.readWindow(b, bucket, true);
    return this.snapshot();
  }

  private bucket(b: number): Bucket {
    let bucket = this.buckets.get(b);
    if (!bucket) {
      bucket = { pending: [], pendingCount: 0, accounted: 0, extra: 0, read: false, lastReadAt: 0 };
      this.buckets.set(b, bucket);
    }
    return bucket;
  }

  private async pass(final: boolean): Promise<void> {
    const now = this.now();
    // Windows that ended checkAfterMs ago (every window, at the end).
    let due = Math.floor((now - this.checkAfterMs) / this.bucketMs) - 1;
    if (final) for (const b of this.buckets.keys()) due = Math.max(due, b);
    for (let b = this.lastCreated + 1; b <= due; b++) this.bucket(b);
    this.lastCreated = Math.max(this.lastCreated, due);
    const todo = [...this.buckets.entries()]
      .filter(([b, bucket]) => b <= due && (!bucket.read || (bucket.pendingCount > 0 && (final || now - bucket.lastReadAt >= this.recheckMs))))
      .sort(([a], [c]) => a - c);
    for (const [b, bucket] of todo) await this.readWindow(b, bucket, false);
  }

  /** Reads window `b` and settles its pending records; with `giveUp`, all of them. */
  private async readWindow(b: number, bucket: Bucket, giveUp: boolean): Promise<void> {
    const lo = b * this.bucketMs;
    const hi = lo + this.bucketMs;
    const want = new Map<string, { rec: SentRecord; at: number; problems?: string[] }>();
    for (const batch of bucket.pending) for (const rec of batch.records) want.set(recordKey(rec), { rec, at: batch.at });
    // The window's points are streamed (InfluxDB's chunked answers) and compared as they come: the
    // soak's event loop, which also runs the feed, is never held by one large answer.
    let points = 0;
    for (const m of ['gps', 'can']) {
      const t = Date.now();
      for await (const rows of queryChunks(this.opts.rawUrl, this.opts.db, `SELECT * FROM "${m}" WHERE time >= ${lo}ms AND time < ${hi}ms`)) {
        points += rows.length;
        for (const row of rows) {
          const k = pointKey(m, row);
          const w = want.get(k);
          if (!w) continue;
          const problems = pointProblems(w.rec, row);
          if (problems.length > 0) {
            w.problems = problems;
            continue;
          }
          want.delete(k);
          bucket.accounted++;
          bucket.pendingCount--;
          this.totals.verified++;
          this.totals.pending--;
        }
        await setImmediate();
      }
      this.totals.queries++;
      this.totals.queryMs += Date.now() - t;
    }
    if (!bucket.read) this.totals.windows++;
    bucket.read = true;
    const now = this.now();
    bucket.lastReadAt = now;
    const still = new Map<number, SentRecord[]>();
    for (const [k, w] of want) {
      if (giveUp || now - w.at >= this.giveUpAfterMs) {
        if (w.problems) {
          bucket.accounted++;
          this.totals.wrong++;
        } else this.totals.missing++;
        for (const p of w.problems ?? [`${k}: missing`]) if (this.totals.problems.length < MAX_PROBLEMS) this.totals.problems.push(p);
        bucket.pendingCount--;
        this.totals.pending--;
      } else {
        let list = still.get(w.at);
        if (!list) still.set(w.at, (list = []));
        list.push(w.rec);
      }
    }
    bucket.pending = [...still].map(([at, records]) => ({ at, records }));
    const extra = Math.max(0, points - bucket.accounted);
    this.totals.extra += extra - bucket.extra;
    bucket.extra = extra;
  }
}

/**
 * The rows of one InfluxQL statement, a chunk at a time (`chunked=true`: InfluxDB 1.x answers with one
 * JSON object a line), times as epoch ms, tags as columns.
 */
async function* queryChunks(rawUrl: string, db: string, q: string, chunkSize = 5_000): AsyncGenerator<Array<Record<string, unknown>>> {
  const res = await fetch(`${rawUrl}/query?db=${encodeURIComponent(db)}&epoch=ms&chunked=true&chunk_size=${chunkSize}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ q }).toString(),
  });
  if (!res.ok || !res.body) throw new Error(`InfluxQL ${q}: HTTP ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffered = '';
  const parse = (line: string): Array<Record<string, unknown>> => {
    const body = JSON.parse(line) as InfluxChunk;
    const err = body.error ?? body.results?.find((r) => r.error)?.error;
    if (err) throw new Error(`InfluxQL ${q}: ${err}`);
    const rows: Array<Record<string, unknown>> = [];
    for (const r of body.results ?? []) {
      for (const series of r.series ?? []) {
        for (const values of series.values) {
          const row: Record<string, unknown> = { ...series.tags };
          series.columns.forEach((c, i) => (row[c] = values[i]));
          rows.push(row);
        }
      }
    }
    return rows;
  };
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim() !== '') yield parse(line);
    }
  }
  buffered += decoder.decode();
  if (buffered.trim() !== '') yield parse(buffered);
}

interface InfluxChunk {
  error?: string;
  results?: Array<{ error?: string; series?: Array<{ tags?: Record<string, string>; columns: string[]; values: unknown[][] }> }>;
}
