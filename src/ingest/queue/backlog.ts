import type { Queue } from 'bullmq';
import type { RedisClient } from '../../redis/connect.js';

/** The job states an operator reads on `/metrics` (`telematics_queue_jobs{state}`). */
export const BACKLOG_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'waiting-children'] as const;

export interface BacklogSample {
  /** Jobs per state, summed over the partitions: an operator watches the deployment's backlog, not one queue's. */
  counts: Record<(typeof BACKLOG_STATES)[number], number>;
  /** Enqueue time (ms) of the oldest waiting job over all partitions, if any waits. */
  oldestWaitingAt: number | undefined;
  /** Entries in the quarantine stream. */
  quarantined: number;
  /** When this was measured (ms). */
  at: number;
}

/** Jobs not yet taken by a worker: what load shedding bounds. */
export const queuedJobs = (s: BacklogSample): number => s.counts.waiting + s.counts.prioritized + s.counts.delayed;

/**
 * The push queues' backlog, measured once for every reader in a process: admission (every half
 * second, in a receiver) and the queue gauges (every METRICS_SAMPLE_INTERVAL) share a measurement no
 * older than what they ask for, and concurrent reads share one round of commands.
 */
export class Backlog {
  private last: BacklogSample | undefined;
  private pending: Promise<BacklogSample> | undefined;

  constructor(
    private readonly queues: readonly Queue[],
    private readonly redis: RedisClient,
    private readonly quarantineKey: string,
  ) {}

  /** A measurement at most `maxAgeMs` old. */
  read(maxAgeMs = 0): Promise<BacklogSample> {
    if (this.last && Date.now() - this.last.at <= maxAgeMs) return Promise.resolve(this.last);
    this.pending ??= this.measure().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async measure(): Promise<BacklogSample> {
    const counts = Object.fromEntries(BACKLOG_STATES.map((s) => [s, 0])) as BacklogSample['counts'];
    let oldest = Infinity;
    for (const queue of this.queues) {
      const c = await queue.getJobCounts(...BACKLOG_STATES);
      for (const s of BACKLOG_STATES) counts[s] += c[s] ?? 0;
      // Waiting jobs are pushed on the left and taken from the right: the oldest is at the right end.
      // Key names from the queue itself, so a configured prefix is followed.
      const id = (await this.redis.lrange(queue.toKey('wait'), -1, -1))[0];
      const at = id === undefined ? null : await this.redis.hget(queue.toKey(id), 'timestamp');
      if (at !== null) oldest = Math.min(oldest, Number(at));
    }
    const quarantined = await this.redis.xlen(this.quarantineKey);
    this.last = { counts, oldestWaitingAt: oldest === Infinity ? undefined : oldest, quarantined, at: Date.now() };
    return this.last;
  }
}
