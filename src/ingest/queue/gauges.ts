import type { Metrics } from '../../metrics/index.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import type { Backlog } from './backlog.js';
import type { Quarantine } from './quarantine.js';

/** Name of the quarantine's own stages (entries with no sender) on `quarantine_bytes`. */
const SERVICE_SENDER = '(service)';

/** The queue gauges: jobs per state, the oldest waiting job's age (KEDA scales on it), the quarantine's length and bytes per sender. */
export function sampleQueueGauges(metrics: Metrics, backlog: Backlog, quarantine: Pick<Quarantine, 'bytesBySender'>, intervalMs: number, ready: () => boolean): Sampler {
  return sampleEvery(
    intervalMs,
    async () => {
      const s = await backlog.read(intervalMs / 2);
      for (const [state, n] of Object.entries(s.counts)) metrics.queueJobs.set({ state }, n);
      metrics.oldestWaitingAge.set(s.oldestWaitingAt === undefined ? 0 : Math.max(0, (Date.now() - s.oldestWaitingAt) / 1000));
      metrics.quarantineEntries.set(s.quarantined);
      // A sender whose entries were all removed is gone from the hash: shown as 0, not as its last value.
      const bytes = await quarantine.bytesBySender();
      metrics.quarantineBytes.reset();
      for (const [sender, n] of bytes) metrics.quarantineBytes.set({ sender: sender || SERVICE_SENDER }, n);
    },
    { ready, onError: () => metrics.sampleErrors.inc() },
  );
}
