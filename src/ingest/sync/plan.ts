/**
 * The fuel sync's plan: which vehicles a run reads, inside the provider's per-vehicle daily budget of
 * `getfuelhistory` calls (24 a vehicle a day by its document, UPSTREAM_HISTORY_CALLS_PER_DAY), spread
 * evenly over the day, longest waiting first. Pure functions; fuel.ts keeps the state in Redis.
 */
import type { CallLimits } from '../../upstream/client/pacer.js';
import { PACING_MARGIN_MS, pacingSchedule } from '../../upstream/client/pacer.js';

export const DAY_MS = 86_400_000;

/**
 * How often a vehicle may be synced: the day divided by the syncs its budget pays for, a sync being one
 * call per unit synced (FUEL_UNITS). A budget of 24 with one unit is an hour; with litres and percent,
 * two hours. 0 (no budget) is 0: due every run.
 */
export function syncSpacingMs(callsPerDay: number, units: number): number {
  if (callsPerDay === 0) return 0;
  const syncs = Math.floor(callsPerDay / units);
  if (syncs < 1) throw new RangeError(`a budget of ${callsPerDay} history calls a day cannot pay for one sync of ${units} units`);
  return Math.ceil(DAY_MS / syncs);
}

/**
 * A run may come a little before a vehicle's spacing is over (a scheduler's jitter, a run that began
 * late): it is due this much early, so that a run every FUEL_SYNC_INTERVAL does not skip it for a whole
 * interval. The day's counter, not this, is what keeps the budget.
 */
export function dueTolerance(spacingMs: number): number {
  return Math.min(60_000, Math.floor(spacingMs / 20));
}

/** The UTC day a call is counted on (the provider's document says "per day"; the emulator counts UTC days). */
export function budgetDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

export interface VehiclePlan {
  vehicleno: string;
  /** When the sync last read it up to (ms), or for a vehicle not yet synced when it was first listed less the spacing. */
  lastSynced: number;
  /** History calls made for it today. */
  callsToday: number;
}

export interface Plan {
  /** Due and within today's budget, longest waiting first: the order a run reads them in. */
  due: VehiclePlan[];
  /** Due by their spacing, but today's budget is spent: they wait for the next UTC day. */
  outOfBudget: VehiclePlan[];
}

/** Which vehicles a run reads, and in which order. `callsPerSync` is the units synced; `callsPerDay` 0: no budget. */
export function planRun(vehicles: readonly VehiclePlan[], now: number, o: { spacingMs: number; callsPerDay: number; callsPerSync: number }): Plan {
  const tolerance = dueTolerance(o.spacingMs);
  const byTime = vehicles.filter((v) => now - v.lastSynced >= o.spacingMs - tolerance);
  const due: VehiclePlan[] = [];
  const outOfBudget: VehiclePlan[] = [];
  for (const v of byTime) (o.callsPerDay === 0 || v.callsToday + o.callsPerSync <= o.callsPerDay ? due : outOfBudget).push(v);
  due.sort((a, b) => a.lastSynced - b.lastSynced || (a.vehicleno < b.vehicleno ? -1 : 1));
  return { due, outOfBudget };
}

/**
 * Calls a day the account's pacing allows at most (the pacer's margin included): a fleet needing more
 * falls behind its budget's spacing whatever the sync does, and the log says so.
 */
export function callsPerDayAllowed(limits: CallLimits, marginMs: number = PACING_MARGIN_MS): number {
  const s = pacingSchedule(limits, marginMs);
  const byGap = s.gapMs > 0 ? DAY_MS / s.gapMs : Infinity;
  const byWindow = s.perWindow > 0 ? (DAY_MS / s.windowMs) * s.perWindow : Infinity;
  return Math.floor(Math.min(byGap, byWindow));
}
