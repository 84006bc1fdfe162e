import { Queue, Worker } from 'bullmq';
import type { Logger } from '../../log/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { guardFetch } from '../worker/guard.js';

/** What a scheduled run reports: logged on success; `failed` makes BullMQ retry the run. */
export interface RunReport {
  summary: Record<string, unknown>;
  failed?: string;
}

/**
 * Runs `run` every `intervalMs` as a BullMQ job scheduler on queue `name`: with several worker
 * replicas exactly one of them runs it each time, and a run that fails is retried by BullMQ. The
 * fuel sync and the fleet status job are scheduled so.
 */
export async function scheduleRuns(
  redis: RedisClient,
  every: { queue: string; job: string; intervalMs: number; skipVersionCheck?: boolean },
  run: () => Promise<RunReport>,
  log: Logger,
): Promise<{ close(): Promise<void> }> {
  const { job, intervalMs } = every;
  const bull = { connection: redis, skipVersionCheck: every.skipVersionCheck ?? false };
  const queue = new Queue(every.queue, bull);
  queue.on('error', () => {});
  await queue.upsertJobScheduler(job, { every: intervalMs }, { name: job, opts: { removeOnComplete: true, removeOnFail: 100 } });
  const worker = new Worker(
    every.queue,
    async () => {
      const r = await run();
      log.info(r.summary, `${job} done`);
      if (r.failed) throw new Error(r.failed);
      return r.summary;
    },
    { ...bull, concurrency: 1 },
  );
  const guard = guardFetch(worker, log);
  worker.on('failed', (_job, err) => log.warn({ err: err.message }, `${job} failed; next run retries`));
  return {
    async close() {
      guard.stop();
      await worker.close();
      await queue.close();
    },
  };
}
