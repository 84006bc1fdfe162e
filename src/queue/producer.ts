import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { TelemetryRecord } from '../validate/record.js';
import { encodeJob } from './codec.js';
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
  maxRecordsPerJob: number;
  timeoutMs: number;
  retry: RetryPolicy;
}

interface Waiter {
  records: TelemetryRecord[];
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Puts validated records into BullMQ in chunks, never a job per record. Records of concurrent
 * pushes that arrive in the same turn of the event loop share one `addBulk` round trip, so a
 * realtime sender costs a slice of a Redis call rather than one each. A caller's promise
 * settles only when Redis has confirmed the jobs holding its records.
 */
export class Producer {
  readonly queue: Queue;
  private pending: Waiter[] = [];
  private pendingCount = 0;
  private scheduled = false;

  constructor(
    private readonly redis: Redis,
    private readonly opts: ProducerOptions,
  ) {
    this.queue = new Queue(opts.queueName, {
      connection: redis,
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

  enqueue(records: TelemetryRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    if (this.redis.status !== 'ready') {
      return Promise.reject(new EnqueueError(`Redis is not reachable (connection ${this.redis.status})`));
    }
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ records, resolve, reject });
      this.pendingCount += records.length;
      if (this.pendingCount >= this.opts.maxRecordsPerJob) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiters = this.pending;
    if (waiters.length === 0) return;
    this.pending = [];
    this.pendingCount = 0;

    const jobs: Array<{ name: string; data: ReturnType<typeof encodeJob> }> = [];
    let chunk: TelemetryRecord[] = [];
    for (const w of waiters) {
      for (const r of w.records) {
        chunk.push(r);
        if (chunk.length === this.opts.maxRecordsPerJob) {
          jobs.push({ name: JOB_NAME, data: encodeJob(chunk) });
          chunk = [];
        }
      }
    }
    if (chunk.length > 0) jobs.push({ name: JOB_NAME, data: encodeJob(chunk) });

    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new EnqueueError(`Redis did not confirm the enqueue within ${this.opts.timeoutMs} ms`)),
        this.opts.timeoutMs,
      );
    });
    Promise.race([this.queue.addBulk(jobs), timeout])
      .then(() => {
        for (const w of waiters) w.resolve();
      })
      .catch((err: unknown) => {
        const e = err instanceof EnqueueError ? err : new EnqueueError(`enqueue failed: ${(err as Error)?.message ?? err}`, { cause: err });
        for (const w of waiters) w.reject(e);
      })
      .finally(() => clearTimeout(timer));
  }

  async close(): Promise<void> {
    if (this.scheduled || this.pending.length > 0) this.flush();
    await this.queue.close();
  }
}
