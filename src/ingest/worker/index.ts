import { Worker } from 'bullmq';
import type { RedisClient } from '../../redis/connect.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { PointSink } from '../write/sink.js';
import type { FieldPick, WrittenRecord } from '../../telemetry/record.js';
import type { JobSeal } from '../queue/seal.js';
import type { UnsealedChecks } from './unsealed.js';
import { retryDelay, type RetryPolicy } from '../queue/retry.js';
import type { DeferReason, Reads } from '../queue/formats.js';
import { LogThrottle } from '../../log/throttle.js';
import type { Quarantine } from '../queue/quarantine.js';
import { failedForGood, guarded, type RunningWorker } from './guard.js';
import { createProcessor, type ProcessResult } from './processor.js';

export interface WorkerOptions {
  /** The push queue's name. */
  queue: string;
  /** Where points the store refuses go. */
  quarantine: Quarantine;
  concurrency: number;
  /** How long a job stays locked to a worker that stopped answering before another takes it. */
  lockDurationMs: number;
  /** Times a job may be found stalled (its worker died) before it becomes a dead letter. */
  maxStalls: number;
  retry: RetryPolicy;
  /** The receiver's rules, by which a job without the receivers' seal is checked record by record (worker/unsealed.ts). */
  unsealed: UnsealedChecks;
  /** The deployment's job seal (queue/seal.ts); every job is checked record by record without it. */
  seal?: JobSeal;
  sink: PointSink;
  /** Told each job's records (and its id) once the store holds them (the fleet's last-seen state and the vehicle events). */
  written?: (records: readonly WrittenRecord[], jobId: string | undefined) => Promise<void>;
  /** The fields whose values `written` is told (the vehicle events' inputs). */
  pick?: FieldPick;
  log: Logger;
  metrics?: Metrics | undefined;
  skipVersionCheck?: boolean;
  /** The job formats this worker reads; this release's when unset (tests give less, to stand for an older release). */
  reads?: Reads;
}

/** One throttle a logger and reason: a release mix defers every job, and once a minute says it all. */
const deferThrottles = new WeakMap<Logger, Record<DeferReason, LogThrottle>>();
function deferThrottlesOf(log: Logger): Record<DeferReason, LogThrottle> {
  let t = deferThrottles.get(log);
  if (!t) deferThrottles.set(log, (t = { format: new LogThrottle(), dictionary: new LogThrottle() }));
  return t;
}

export type { RunningWorker } from './guard.js';

/** Pulls jobs from the queue and writes their points; run as many replicas as the store can take. */
export function startWorker(redis: RedisClient, opts: WorkerOptions): RunningWorker {
  const { quarantine } = opts;
  const throttles = deferThrottlesOf(opts.log);
  const checkedThrottle = new LogThrottle();
  const processor = createProcessor({
    sink: opts.sink,
    unsealed: opts.unsealed,
    ...(opts.seal ? { seal: opts.seal } : {}),
    checked: (job, c) => {
      if (c.held.length === 0) return;
      checkedThrottle.pass((times) => opts.log.warn({ jobId: job.id, refused: c.held.length, first: c.held[0]!.reason, times }, 'a job no receiver sealed held records a push would have been refused; quarantined'));
    },
    retrySpanMs: opts.retry.spanMs,
    ...(opts.written ? { written: opts.written } : {}),
    ...(opts.pick ? { pick: opts.pick } : {}),
    ...(opts.reads ? { reads: opts.reads } : {}),
    deferred: (why) => {
      opts.metrics?.jobsDeferred.inc({ reason: why.reason });
      throttles[why.reason].pass((times) => opts.log.warn({ reason: why.reason, times }, why.message));
    },
    quarantine: async (entries) => {
      await quarantine.add(entries);
      opts.log.warn({ refused: entries.length, first: entries[0]?.reason }, 'InfluxDB refused points; quarantined');
    },
  });
  const worker = new Worker<unknown, ProcessResult>(opts.queue, processor, {
    connection: redis,
    skipVersionCheck: opts.skipVersionCheck ?? false,
    concurrency: opts.concurrency,
    lockDuration: opts.lockDurationMs,
    stalledInterval: Math.max(1_000, Math.round(opts.lockDurationMs / 2)),
    maxStalledCount: opts.maxStalls,
    settings: { backoffStrategy: (attemptsMade) => retryDelay(opts.retry, attemptsMade) },
  });
  const m = opts.metrics;
  worker.on('completed', (job, res) => {
    opts.log.debug({ jobId: job.id, ...res }, 'job written');
    if (!m) return;
    for (const [measurement, n] of Object.entries(res.pointsBy)) m.pointsWritten.inc({ measurement }, n);
    if (res.refused > 0) m.pointsRefused.inc(res.refused);
    // From the enqueue (BullMQ stamps the job when Redis takes it, just before the sender's 202) to now.
    m.receiveToWritten.observe((Date.now() - job.timestamp) / 1000);
  });
  worker.on('failed', (job, err) => {
    if (!job) return;
    const final = failedForGood(job);
    (final ? m?.jobsFailed : m?.jobRetries)?.inc();
    opts.log[final ? 'error' : 'warn'](
      { jobId: job.id, attemptsMade: job.attemptsMade, err: err.message },
      final ? 'job failed for good; kept as dead letter' : 'job failed; will retry',
    );
  });
  return guarded(worker, opts.log);
}
