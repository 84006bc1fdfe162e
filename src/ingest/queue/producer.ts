import { Queue } from 'bullmq';
import { masterFor, type RedisClient } from '../../redis/connect.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import type { Metrics } from '../../metrics/index.js';
import type { JobSeal } from './seal.js';
import { encodeJob, encodePointsJob, recordsOfParts, type JobPayload, type RowsPart } from './codec.js';
import { PointRows, rowsOf } from '../flatten/points.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { FIELD_DICTIONARY } from '../../telemetry/fields.js';
import { flattenFor, newestOf, THIS_RELEASE, type JobFormat } from './formats.js';
import { partitionOf } from './keys.js';
import { attemptsForSpan, BACKOFF_TYPE, type RetryPolicy } from './retry.js';

export const JOB_NAME = 'records';

export class EnqueueError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EnqueueError';
  }
}

export interface ProducerOptions {
  queueName: string;
  /** Where the enqueue round trips are timed. */
  metrics?: Metrics | undefined;
  /** BullMQ's check of the Redis version runs INFO, which restricted ACL users may lack. */
  skipVersionCheck?: boolean;
  /**
   * Replicas that must hold an enqueue before it counts as done (Redis WAIT; REDIS_WAIT_REPLICAS):
   * with asynchronous replication a failover can otherwise lose writes the primary confirmed.
   */
  waitReplicas?: number;
  maxRecordsPerJob: number;
  /** How records given as records (a dead letter's replay) are flattened into rows: the receiver's rules. */
  flatten: FlattenOptions;
  /** Whether jobs are deflated now (a backlog builds: `LoadShedding.backlogged`); always when unset. */
  deflate?: () => boolean;
  /**
   * The format jobs are written in now: what every live worker reads (formats.ts, `FormatWatch`);
   * this release's newest when unset. Read when a round trip's jobs are encoded.
   */
  format?: () => JobFormat;
  timeoutMs: number;
  retry: RetryPolicy;
  /**
   * ENQUEUE_LINGER: under load (a round trip returned less than BUSY_WITHIN_MS ago), how long the next
   * round trip waits for more records. Redis and the worker pay per job; realtime pushes otherwise make
   * jobs of the few records that arrived during one round trip. An idle producer sends at once.
   */
  lingerMs?: number;
  /** Seals the v3 jobs written (queue/seal.ts), so workers copy their rows unchecked; unsealed jobs are checked record by record. */
  seal?: JobSeal;
}

const NO_ROWS = new PointRows(0);
const NEWEST = newestOf(THIS_RELEASE);
const WHOLE_DICTIONARY = FIELD_DICTIONARY.length;

const asEnqueueError = (err: unknown): EnqueueError =>
  err instanceof EnqueueError ? err : new EnqueueError(`enqueue failed: ${(err as Error)?.message ?? err}`, { cause: err });

/**
 * `sent`, or an EnqueueError once `waitMs` have passed: the caller is answered within ENQUEUE_TIMEOUT
 * however long Redis takes (the round trip itself goes on; BullMQ ids make a late success harmless).
 */
async function confirmedWithin(sent: Promise<unknown>, waitMs: number, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EnqueueError(`Redis did not confirm the enqueue within ${timeoutMs} ms`)), waitMs);
  });
  try {
    await Promise.race([sent, timeout]);
  } catch (err) {
    throw asEnqueueError(err);
  } finally {
    clearTimeout(timer);
  }
}

/** A caller's rows, and the dictionary size their masks stay below (what their writer was given). */
interface Rows {
  rows: PointRows;
  dictionary: number;
}

interface Waiter extends Rows {
  /** When the caller asked; its promise settles within ENQUEUE_TIMEOUT of this. */
  at: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Enqueue round trips in flight at once. While they are out, the records of new pushes wait and
 * then go together in the next round trip (group commit): under load the jobs grow with the
 * load, so a realtime push costs a sliver of one Redis call, of one job's overhead in Redis, and
 * of one InfluxDB write; when idle a push is sent at once.
 */
const MAX_IN_FLIGHT = 1;

/** A round trip that returned this recently means pushes are arriving back to back: linger. */
const BUSY_WITHIN_MS = 10;

/**
 * Puts validated records into BullMQ in chunks, never a job per record. Records of concurrent
 * pushes share one `addBulk` round trip: those arriving in the same turn of the event loop, and
 * those arriving while the previous round trip is out. A caller's promise settles only when Redis
 * has confirmed the jobs holding its records, or rejects within ENQUEUE_TIMEOUT.
 */
export class Producer {
  readonly queue: Queue;
  readonly flatten: FlattenOptions;
  private pending: Waiter[] = [];
  private scheduled = false;
  private inFlight = 0;
  /** When the last round trip returned (performance.now()). */
  private lastReturnAt = -Infinity;
  /** Closing: what is pending goes at once, no linger. */
  private closing = false;
  private readonly idle: Array<() => void> = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly opts: ProducerOptions,
  ) {
    this.flatten = opts.flatten;
    this.queue = new Queue(opts.queueName, {
      connection: redis,
      skipVersionCheck: opts.skipVersionCheck ?? false,
      defaultJobOptions: {
        attempts: attemptsForSpan(opts.retry),
        backoff: { type: BACKOFF_TYPE },
        removeOnComplete: true,
        // Failed jobs stay: they are the dead letter an operator inspects and replays.
        removeOnFail: false,
      },
    });
    // Errors surface on the awaited calls; without a listener the emitter would throw.
    this.queue.on('error', () => {});
  }

  /** The format jobs are written in now. */
  format(): JobFormat {
    return this.opts.format?.() ?? NEWEST;
  }

  /** Records as rows in the format of now (a dead letter's replay). */
  rowsOf(records: readonly TelemetryRecord[]): Rows {
    const { dictionary } = this.format();
    return { rows: rowsOf(records, flattenFor(this.flatten, dictionary)), dictionary };
  }

  enqueue(records: TelemetryRecord[]): Promise<void> {
    const { rows, dictionary } = this.rowsOf(records);
    return this.enqueueRows(rows, dictionary);
  }

  /**
   * Flattened records (the receiver's rows), whose masks stay below `dictionary` (FlattenOptions.dictionary);
   * settles once Redis holds them.
   */
  enqueueRows(rows: PointRows, dictionary = WHOLE_DICTIONARY): Promise<void> {
    if (rows.records === 0) return Promise.resolve();
    if (this.redis.status !== 'ready') {
      return Promise.reject(new EnqueueError(`Redis is not reachable (connection ${this.redis.status})`));
    }
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ rows, dictionary, at: Date.now(), resolve, reject });
      this.schedule();
    });
  }

  /**
   * Flushes at the end of this turn of the event loop, or when a round trip in flight returns; under
   * load after the linger.
   */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= MAX_IN_FLIGHT || this.pending.length === 0) return;
    this.scheduled = true;
    const go = () => {
      this.scheduled = false;
      this.flush();
    };
    const linger = this.opts.lingerMs ?? 0;
    if (linger > 0 && performance.now() - this.lastReturnAt < BUSY_WITHIN_MS) setTimeout(go, linger);
    else setImmediate(go);
  }

  private flush(): void {
    if (this.pending.length === 0 || this.inFlight >= MAX_IN_FLIGHT) return;
    let waiters = this.pending;
    this.pending = [];

    // Those that waited their whole time behind a slow round trip are answered now.
    const now = Date.now();
    const late = waiters.filter((w) => now - w.at >= this.opts.timeoutMs);
    if (late.length > 0) {
      const e = new EnqueueError(`Redis did not confirm the enqueue within ${this.opts.timeoutMs} ms`);
      for (const w of late) w.reject(e);
      waiters = waiters.filter((w) => now - w.at < this.opts.timeoutMs);
      if (waiters.length === 0) return;
    }

    const jobs: Array<{ name: string; data: JobPayload }> = [];
    try {
      for (const data of chunked(waiters, this.opts.maxRecordsPerJob, this.opts.deflate?.() ?? true, this.format())) jobs.push({ name: JOB_NAME, data: this.sealed(data) });
      // Encoded: the rows need not live through the round trip (see receive/push.ts).
      for (const w of waiters) w.rows = NO_ROWS;
    } catch (err) {
      const e = asEnqueueError(err);
      for (const w of waiters) w.reject(e);
      return;
    }

    const waitMs = Math.max(0, this.opts.timeoutMs - (Date.now() - waiters[0]!.at));
    this.inFlight++;
    // One job (the usual case of group-committed realtime pushes) goes by `add`: a single EVALSHA.
    // `addBulk` builds an ioredis Pipeline, which copies every BullMQ script command onto itself
    // on creation, a third of a group commit's cost in the receiver.
    const started = performance.now();
    const sent = (jobs.length === 1 ? this.queue.add(jobs[0]!.name, jobs[0]!.data) : this.queue.addBulk(jobs))
      .then(() => this.replicated(waitMs - (performance.now() - started)))
      .then(() => {
        this.opts.metrics?.enqueueDuration.observe((performance.now() - started) / 1000);
        this.count(jobs);
      });
    confirmedWithin(sent, waitMs, this.opts.timeoutMs)
      .then(() => {
        for (const w of waiters) w.resolve();
      })
      .catch((e: EnqueueError) => {
        for (const w of waiters) w.reject(e);
      })
      .finally(() => {
        this.inFlight--;
        this.lastReturnAt = performance.now();
        if (this.closing) this.flush();
        else this.schedule();
        if (this.inFlight === 0 && this.pending.length === 0) for (const done of this.idle.splice(0)) done();
      });
  }

  /**
   * Enqueues the records of one delivery at most once within `ttlMs`: its jobs carry BullMQ
   * deduplication ids derived from `id`, checked and set in the same Redis script that adds them, so
   * a retried delivery enqueues nothing however its retry races the first. Not group-committed: the
   * id belongs to this delivery's jobs alone.
   */
  enqueueOnce(records: TelemetryRecord[], once: { id: string; ttlMs: number }): Promise<void> {
    const { rows, dictionary } = this.rowsOf(records);
    return this.enqueueRowsOnce(rows, once, dictionary);
  }

  async enqueueRowsOnce(rows: PointRows, once: { id: string; ttlMs: number }, dictionary = WHOLE_DICTIONARY): Promise<void> {
    if (rows.records === 0) return;
    if (this.redis.status !== 'ready') throw new EnqueueError(`Redis is not reachable (connection ${this.redis.status})`);
    const jobs = chunked([{ rows, dictionary }], this.opts.maxRecordsPerJob, this.opts.deflate?.() ?? true, this.format()).map((data, i) => ({ name: JOB_NAME, data: this.sealed(data), opts: { deduplication: { id: `${once.id}:${i}`, ttl: once.ttlMs } } }));
    await confirmedWithin(this.queue.addBulk(jobs).then(() => this.replicated(this.opts.timeoutMs)), this.opts.timeoutMs, this.opts.timeoutMs);
    this.count(jobs);
  }

  private sealed(data: JobPayload): JobPayload {
    return data.v === 3 && this.opts.seal ? this.opts.seal.seal(data) : data;
  }

  /** Jobs Redis confirmed, by payload form. */
  private count(jobs: ReadonlyArray<{ data: JobPayload }>): void {
    const m = this.opts.metrics;
    if (!m) return;
    let deflated = 0;
    for (const j of jobs) if ('z' in j.data && j.data.z !== undefined) deflated++;
    if (deflated > 0) m.jobsEnqueued.inc({ payload: 'deflated' }, deflated);
    if (jobs.length > deflated) m.jobsEnqueued.inc({ payload: 'text' }, jobs.length - deflated);
  }

  /** With `waitReplicas`, resolves once that many replicas hold every write of this connection so far. */
  private async replicated(withinMs: number): Promise<void> {
    const want = this.opts.waitReplicas ?? 0;
    if (want === 0) return;
    // On a cluster, the master of this queue's slot: WAIT counts the writes of the connection it is sent on.
    const master = masterFor(this.redis, this.queue.toKey('id'));
    if (!master) throw new EnqueueError(`no Redis master is known for queue ${this.opts.queueName} (cluster slots refreshing); retry`);
    // Four fifths of the time left, so the answer says that replicas, not Redis itself, were missing.
    const got = await master.wait(want, Math.max(1, Math.floor(withinMs * 0.8)));
    if (got < want) throw new EnqueueError(`only ${got} of ${want} Redis replica(s) confirmed the enqueue (REDIS_WAIT_REPLICAS)`);
  }

  /** Sends what is pending, waits for every round trip out, then closes the queue. */
  async close(): Promise<void> {
    this.closing = true;
    this.flush();
    if (this.inFlight > 0 || this.pending.length > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    await this.queue.close();
  }
}

/** The records of `all`, in order, as jobs of at most `max` records each, in `format`. */
function chunked(all: readonly Rows[], max: number, deflate: boolean, format: JobFormat): JobPayload[] {
  const jobs: JobPayload[] = [];
  let parts: RowsPart[] = [];
  let count = 0;
  let dictionary = 0;
  const job = () => {
    jobs.push(encoded(parts, dictionary, deflate, format));
    parts = [];
    count = dictionary = 0;
  };
  for (const { rows, dictionary: d } of all) {
    for (let from = 0; from < rows.records; ) {
      const to = Math.min(rows.records, from + max - count);
      parts.push({ rows, from, to });
      // A row written for a smaller dictionary is read by any reader of a larger one: the job says the largest.
      dictionary = Math.max(dictionary, d);
      count += to - from;
      from = to;
      if (count === max) job();
    }
  }
  if (count > 0) job();
  return jobs;
}

/**
 * One job of `parts`: as rows (v3), or, while a live worker reads no v3 (an older release's), the records
 * the rows hold as v2 (or v1), their names numbered only below the agreed dictionary.
 */
function encoded(parts: readonly RowsPart[], dictionary: number, deflate: boolean, format: JobFormat): JobPayload {
  if (format.v >= 3) return encodePointsJob(parts, deflate, Math.min(dictionary, WHOLE_DICTIONARY));
  const records = recordsOfParts(parts);
  return format.v === 2 ? encodeJob(records, format.dictionary, deflate) : { v: 1, records };
}

/**
 * The producers of all partitions as one: a push's records go to their vehicles' partitions
 * (QUEUE_PARTITIONS), each with its own group commit, and the push is confirmed only once every
 * partition it touched confirmed. With one partition it is that partition's producer, unchanged.
 */
export class PartitionedProducer {
  constructor(readonly producers: readonly Producer[]) {}

  get partitions(): number {
    return this.producers.length;
  }

  enqueue(records: TelemetryRecord[]): Promise<void> {
    const { rows, dictionary } = this.rowsOf(records);
    return this.enqueueRows(rows, dictionary);
  }

  /** Each partition deduplicates its own share: a retry after a partial failure enqueues only what is missing. */
  enqueueOnce(records: TelemetryRecord[], once: { id: string; ttlMs: number }): Promise<void> {
    const { rows, dictionary } = this.rowsOf(records);
    return this.enqueueRowsOnce(rows, once, dictionary);
  }

  /** `rows[i]`: the rows of partition i's vehicles (partitionOf), their masks below `dictionary`. */
  enqueueRows(rows: readonly PointRows[], dictionary?: number): Promise<void> {
    if (this.producers.length === 1) return this.producers[0]!.enqueueRows(rows[0]!, dictionary);
    return this.each(rows, (p, part) => p.enqueueRows(part, dictionary));
  }

  enqueueRowsOnce(rows: readonly PointRows[], once: { id: string; ttlMs: number }, dictionary?: number): Promise<void> {
    if (this.producers.length === 1) return this.producers[0]!.enqueueRowsOnce(rows[0]!, once, dictionary);
    return this.each(rows, (p, part) => p.enqueueRowsOnce(part, once, dictionary));
  }

  async close(): Promise<void> {
    await Promise.all(this.producers.map((p) => p.close()));
  }

  private rowsOf(records: readonly TelemetryRecord[]): { rows: PointRows[]; dictionary: number } {
    const n = this.producers.length;
    const parts: TelemetryRecord[][] = Array.from({ length: n }, () => []);
    for (const r of records) parts[partitionOf(r.vehicleno, n)]!.push(r);
    // One dictionary for all partitions' rows: the partitions' producers share one format.
    const { dictionary } = this.producers[0]!.format();
    return { rows: parts.map((part, i) => rowsOf(part, flattenFor(this.producers[i]!.flatten, dictionary))), dictionary };
  }

  private async each(rows: readonly PointRows[], send: (p: Producer, part: PointRows) => Promise<void>): Promise<void> {
    const sent: Array<Promise<void>> = [];
    for (let i = 0; i < this.producers.length; i++) if (rows[i] && rows[i]!.records > 0) sent.push(send(this.producers[i]!, rows[i]!));
    // allSettled: a partition's failure is answered only once the others settled, so no round trip outlives the push.
    const outcomes = await Promise.allSettled(sent);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
