import type { Metrics } from '../../metrics/index.js';
import type { SilentAfter } from './changes.js';
import type { FleetState } from './state.js';

/**
 * Samples the fleet gauges (vehicles known, silent per SILENT_AFTER threshold) on an interval, so a
 * scrape reads numbers already there. A few O(log n) commands a partition each time; every process
 * samples the same Redis, so alerts read them with max().
 */
export function sampleFleet(metrics: Metrics, fleet: FleetState, thresholds: readonly SilentAfter[], intervalMs: number): { stop(): void } {
  let busy = false;
  const sample = async () => {
    if (busy || fleet.redis.status !== 'ready') return;
    busy = true;
    try {
      const counts = await fleet.counts(Date.now(), thresholds.map((t) => t.ms));
      metrics.fleetVehicles.set(counts.known);
      thresholds.forEach((t, i) => metrics.fleetSilent.set({ after: t.label }, counts.silent[i]!));
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
