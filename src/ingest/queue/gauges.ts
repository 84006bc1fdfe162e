import type { Metrics } from '../../metrics/index.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import type { Backlog } from './backlog.js';

/** The queue gauges: jobs per state, the oldest waiting job's age (KEDA scales on it), the quarantine's length. */
export function sampleQueueGauges(metrics: Metrics, backlog: Backlog, intervalMs: number, ready: () => boolean): Sampler {
  return sampleEvery(
    intervalMs,
    async () => {
      const s = await backlog.read(intervalMs / 2);
      for (const [state, n] of Object.entries(s.counts)) metrics.queueJobs.set({ state }, n);
      metrics.oldestWaitingAge.set(s.oldestWaitingAt === undefined ? 0 : Math.max(0, (Date.now() - s.oldestWaitingAt) / 1000));
      metrics.quarantineEntries.set(s.quarantined);
    },
    { ready, onError: () => metrics.sampleErrors.inc() },
  );
}
