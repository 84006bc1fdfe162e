import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { FuelSyncResult } from './fuel.js';
import { callsPerDayAllowed, DAY_MS } from './plan.js';
import { callLimitsOf } from './upstream.js';

/**
 * The fuel sync's plan in metrics, and in the log when the fleet is behind it: how many due vehicles the
 * run did not reach and how long the oldest of them waited, and whether the account's pacing can carry
 * the fleet's calls a day at all (then no run length helps: sync fewer units, or get higher limits).
 */
export function reportPlan(r: FuelSyncResult, cfg: Config, log: Logger, metrics?: Metrics): void {
  const p = r.plan;
  if (!p) return;
  metrics?.fuelSyncBehind.set(p.behindMs / 1000);
  for (const [state, n] of [['due', p.due], ['synced', p.synced], ['not_reached', p.notReached], ['out_of_budget', p.outOfBudget]] as const) metrics?.fuelSyncVehicles.set({ state }, n);
  if (p.notReached === 0) return;
  const needed = p.spacingMs > 0 ? Math.ceil((r.vehicles * cfg.FUEL_UNITS.length * DAY_MS) / p.spacingMs) : undefined;
  const allowed = callsPerDayAllowed(callLimitsOf(cfg));
  log.warn(
    { due: p.due, synced: p.synced, notReached: p.notReached, behindSeconds: Math.round(p.behindMs / 1000), callsNeededPerDay: needed, callsAllowedPerDay: allowed },
    needed !== undefined && needed > allowed
      ? 'fuel sync behind: the fleet needs more history calls a day than the account\'s pacing allows; vehicles are synced less often than their budget allows'
      : 'fuel sync behind: due vehicles not reached within FUEL_SYNC_INTERVAL; the next run reads them first',
  );
}
