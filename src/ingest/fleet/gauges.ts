import type { Metrics } from '../../metrics/index.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import type { SilentAfter } from './changes.js';
import type { FleetState } from './state.js';

/**
 * The fleet gauges (vehicles known, silent per SILENT_AFTER threshold): a few O(log n) commands a
 * partition each sample; every process samples the same Redis, so alerts read them with max().
 */
export function sampleFleet(metrics: Metrics, fleet: FleetState, thresholds: readonly SilentAfter[], intervalMs: number): Sampler {
  return sampleEvery(
    intervalMs,
    async () => {
      const counts = await fleet.counts(Date.now(), thresholds.map((t) => t.ms));
      metrics.fleetVehicles.set(counts.known);
      thresholds.forEach((t, i) => metrics.fleetSilent.set({ after: t.label }, counts.silent[i]!));
    },
    { ready: () => fleet.redis.status === 'ready', onError: () => metrics.sampleErrors.inc() },
  );
}
