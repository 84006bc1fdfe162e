import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullKey } from '../ingest/queue/keys.js';
import type { Metrics } from './index.js';

/**
 * Samples the queue gauges from Redis on an interval, so that a scrape reads numbers already there:
 * a slow Redis delays a sample, never a scrape. One Redis round trip of a few cheap commands each time.
 */
export function sampleQueue(metrics: Metrics, queue: Queue, redis: Redis, quarantineKey: string, intervalMs: number): { stop(): void } {
  let busy = false;
  const sample = async () => {
    if (busy || redis.status !== 'ready') return;
    busy = true;
    try {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed', 'waiting-children');
      for (const [state, n] of Object.entries(counts)) metrics.queueJobs.set({ state }, n);
      // Waiting jobs are pushed on the left and taken from the right: the oldest is at the right end.
      const oldest = (await redis.lrange(bullKey(queue.name, 'wait'), -1, -1))[0];
      const at = oldest === undefined ? null : await redis.hget(bullKey(queue.name, oldest), 'timestamp');
      metrics.oldestWaitingAge.set(at === null ? 0 : Math.max(0, (Date.now() - Number(at)) / 1000));
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
