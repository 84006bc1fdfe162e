import { isNotConnectionError, type Worker } from 'bullmq';
import type { Logger } from '../../log/index.js';
import { backoffDelay, type Backoff } from '../../retry/backoff.js';
import { LogThrottle } from '../../log/throttle.js';

/**
 * BullMQ backs off only when the connection is lost: a fetch that Redis refuses (READONLY during a
 * failover, OOM, NOPERM after an ACL change, CLUSTERDOWN) is emitted as an error and tried again at
 * once, a loop that takes a core and, with its logs, the process's memory. So on such an error the
 * worker is paused (its active jobs finish) and resumed after a growing delay; the cause is logged
 * once a minute and reported by the worker's health until fetching works again.
 */
export interface FetchGuard {
  /** Why the worker cannot fetch now, or undefined when it can. */
  problem(): string | undefined;
  stop(): void;
}

const DEFAULT_BACKOFF: Backoff = { baseMs: 1_000, maxMs: 30_000 };
/** One throttle a logger: a process whose workers (a partition each, the scheduled runs) all hit the same refusal says so once a minute, not once a worker. */
const throttles = new WeakMap<Logger, LogThrottle>();

export function guardFetch(worker: Worker, log: Logger, backoff: Backoff = DEFAULT_BACKOFF): FetchGuard {
  let cause: string | undefined;
  let attempts = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let throttle = throttles.get(log);
  if (!throttle) throttles.set(log, (throttle = new LogThrottle()));

  worker.on('error', (err) => {
    if (!isNotConnectionError(err)) {
      // ioredis reconnects with its own backoff; the connection's state is in the health already.
      log.debug({ err: err.message }, 'worker connection error');
      return;
    }
    cause = err.message;
    throttle.pass((times) => log.error({ err: err.message, times, retryInMs: backoffDelay(backoff, attempts + 1, () => 0.5) }, 'Redis refused the worker’s fetch; pausing and retrying'));
    if (timer || stopped) return;
    attempts++;
    void worker.pause(true).catch(() => {});
    timer = setTimeout(() => {
      timer = undefined;
      if (!stopped) void worker.resume();
    }, backoffDelay(backoff, attempts));
    timer.unref();
  });
  // A job fetched and done means Redis lets the worker work again.
  worker.on('completed', () => {
    attempts = 0;
    cause = undefined;
  });
  worker.on('drained', () => {
    attempts = 0;
    cause = undefined;
  });

  return {
    problem: () => cause,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** A running BullMQ worker as a process's parts see it: why it cannot fetch now, and how to stop it. */
export interface RunningWorker {
  /** Why this worker cannot fetch jobs now (Redis refused it), or undefined. */
  fetchProblem(): string | undefined;
  close(): Promise<void>;
}

/** `worker` with its fetch guarded (guardFetch), as a RunningWorker. */
export function guarded(worker: Worker, log: Logger): RunningWorker {
  const guard = guardFetch(worker, log);
  return {
    fetchProblem: () => guard.problem(),
    async close() {
      guard.stop();
      await worker.close();
    },
  };
}

/** Whether a failed job failed for good (its attempts or its retry span are over), not for a retry. */
export function failedForGood(job: { finishedOn?: number | undefined; attemptsMade: number; opts: { attempts?: number | undefined } }): boolean {
  return job.finishedOn !== undefined || job.attemptsMade >= (job.opts.attempts ?? 1);
}
