import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log/index.js';
import type { PointSink } from '../write/sink.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { retryDelay, type RetryPolicy } from '../queue/retry.js';
import { createProcessor, type ProcessResult } from './processor.js';

export interface WorkerOptions {
  queueName: string;
  concurrency: number;
  retry: RetryPolicy;
  flatten: FlattenOptions;
  sink: PointSink;
  log: Logger;
}

/** Pulls jobs from the queue and writes their points; run as many replicas as the store can take. */
export function startWorker(redis: Redis, opts: WorkerOptions): Worker {
  const processor = createProcessor({ sink: opts.sink, flatten: opts.flatten, retrySpanMs: opts.retry.spanMs });
  const worker = new Worker<unknown, ProcessResult>(opts.queueName, processor, {
    connection: redis,
    concurrency: opts.concurrency,
    settings: { backoffStrategy: (attemptsMade) => retryDelay(opts.retry, attemptsMade) },
  });
  worker.on('completed', (job, res) => {
    opts.log.debug({ jobId: job.id, ...res }, 'job written');
  });
  worker.on('failed', (job, err) => {
    if (!job) return;
    const final = job.finishedOn !== undefined || job.attemptsMade >= (job.opts.attempts ?? 1);
    opts.log[final ? 'error' : 'warn'](
      { jobId: job.id, attemptsMade: job.attemptsMade, err: err.message },
      final ? 'job failed for good; kept as dead letter' : 'job failed; will retry',
    );
  });
  worker.on('error', (err) => opts.log.warn({ err: err.message }, 'worker connection error'));
  return worker;
}
