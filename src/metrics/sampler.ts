import type { Queue } from 'bullmq';
import type { RedisClient } from '../redis/connect.js';
import { bullKey } from '../ingest/queue/keys.js';
import type { Metrics } from './index.js';

/**
 * Samples the queue gauges from Redis on an interval, so that a scrape reads numbers already there:
 * a slow Redis delays a sample, never a scrape. One Redis round trip of a few cheap commands each time.
 */
export function sampleQueues(metrics: Metrics, queues: readonly Queue[], redis: RedisClient, quarantineKey: string, intervalMs: number): { stop(): void } {
  let busy = false;
  const sample = async () => {
    if (busy || redis.status !== 'ready') return;
    busy = true;
    try {
      // Partitions are summed: an operator watches the backlog of the deployment, not of one queue.
      const totals: Record<string, number> = {};
      let oldestAt = Infinity;
      for (const queue of queues) {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed', 'waiting-children');
        for (const [state, n] of Object.entries(counts)) totals[state] = (totals[state] ?? 0) + n;
        // Waiting jobs are pushed on the left and taken from the right: the oldest is at the right end.
        const oldest = (await redis.lrange(bullKey(queue.name, 'wait'), -1, -1))[0];
        const at = oldest === undefined ? null : await redis.hget(bullKey(queue.name, oldest), 'timestamp');
        if (at !== null) oldestAt = Math.min(oldestAt, Number(at));
      }
      for (const [state, n] of Object.entries(totals)) metrics.queueJobs.set({ state }, n);
      metrics.oldestWaitingAge.set(oldestAt === Infinity ? 0 : Math.max(0, (Date.now() - oldestAt) / 1000));
      metrics.quarantineEntries.set(await redis.xlen(quarantineKey));
    } catch {
      metrics.sampleErrors.inc();
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void sample(), intervalMs);
  timer.unref();
  void sample();
  return { stop: () => clearInterval(timer) };
}
