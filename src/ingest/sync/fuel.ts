import { Lines } from '../write/lines.js';
import type { RedisClient } from '../../redis/connect.js';
import type { FuelUnit, UpstreamClient } from '../../upstream/client/index.js';
import { formatLine } from '../../telemetry/lineProtocol.js';
import { plateFaults } from '../../telemetry/plate.js';
import { boundedText, UpstreamThrottledError } from '../../upstream/client/index.js';
import { FUEL } from '../../telemetry/derivedMeasurements.js';
import type { PointSink } from '../write/sink.js';
import type { Config } from '../../config/index.js';
import { influxSelect, influxTargetOf, quoteString, timeLiteral } from '../fleet/history.js';
import { GPS } from '../../telemetry/vehicleData.js';
import type { DerivedEvent } from '../events/detectors/context.js';
import { freshFuelState, fuelEvent, judgeFuel, type FuelChange, type FuelChangeOptions, type FuelChangeState } from '../events/detectors/fuel.js';
import { budgetDay, planRun, syncSpacingMs, type VehiclePlan } from './plan.js';

/**
 * Fuel is not in the push feed: this input pulls it. For every vehicle the upstream lists, it
 * reads the fuel history since that vehicle's watermark and writes measurement `fuel`
 * (tag `vehicleno`, tag `unit`, float field `value`). The watermark advances only after
 * InfluxDB accepted the points, so a failed run is simply done again; points are idempotent.
 */
export interface FuelSyncOptions {
  client: Pick<UpstreamClient, 'listVehicles' | 'getFuelHistory'>;
  sink: PointSink;
  redis: RedisClient;
  /** Redis set the listed vehicles are kept in (RedisKeys.listedVehicles): admitted whatever MAX_VEHICLES (fleet/admission.ts). */
  listedKey?: string;
  /** Redis hash of watermarks, field `<vehicleno>|<unit>` → last reading time (ms). */
  watermarkKey: string;
  units: readonly FuelUnit[];
  /** How far back the first run of a vehicle reads. */
  lookbackMs: number;
  /** Longest range asked for in one call (upstreams bound it). */
  maxRangeMs: number;
  now?: () => number;
  /** Fuel drops and refuels (`../events/detectors/fuel.ts`), judged on one unit's history; absent: not judged. */
  changes?: FuelChangesOptions;
  /**
   * The provider's per-vehicle daily budget of history calls, planned for (plan.ts): each run reads only
   * the vehicles due, longest waiting first, and no more calls a vehicle a day than the budget. Absent:
   * every listed vehicle every run, as before issue #47 (tests of other things).
   */
  budget?: FuelBudget;
  /**
   * Ends the run early (the process is stopping): no vehicle is started after it, a call waiting for its
   * turn or its answer is given up, and nothing of that vehicle's range is remembered, so the next run
   * reads it again. A run may last FUEL_SYNC_INTERVAL under the pacing; a stop must not wait for that.
   */
  signal?: AbortSignal;
}

export interface FuelBudget {
  /** UPSTREAM_HISTORY_CALLS_PER_DAY; 0: no budget (every vehicle every run, still longest waiting first). */
  callsPerDay: number;
  /** Sorted set vehicleno → when the sync last read it up to (RedisKeys.fuelSynced). */
  syncedKey: string;
  /** Hash of a UTC day's calls per vehicle (RedisKeys.fuelHistoryCalls). */
  callsKey: (day: string) => string;
  /**
   * How long a run goes on starting vehicles (wall clock): the vehicles still due then are left to the
   * next run, counted as not reached, and how long the oldest of them has waited is the run's `behindMs`.
   */
  runForMs: number;
  /** Wall clock, ms (default performance.now): the run's length, apart from `now`, which tests move. */
  wallClock?: () => number;
}

/** What a planned run did (`budget` given). */
export interface FuelPlanResult {
  /** Listed vehicles due by their spacing and within today's budget, when the run began. */
  due: number;
  /** Of those, synced to now this run. */
  synced: number;
  /** Due, but not reached before `runForMs` was over: left to the next run. */
  notReached: number;
  /** Due by their spacing, but today's budget is spent (or was during the run): left to the next UTC day. */
  outOfBudget: number;
  /** How long past due the longest-waiting vehicle not reached is, ms; 0 when every due vehicle was reached. */
  behindMs: number;
  /** The spacing the budget allows a vehicle, ms. */
  spacingMs: number;
}

export interface FuelChangesOptions extends FuelChangeOptions {
  unit: FuelUnit;
  /** Whether the vehicle moved between two times (GPS speed over MOTION_SPEED); absent: changes while moving are told too. */
  moved?: (vehicleno: string, from: number, to: number) => Promise<boolean>;
  /** Delivers events (InfluxDB, webhook) before the progress that derived them is remembered: at least once, the same event each time. */
  publish: (events: readonly DerivedEvent[]) => Promise<void>;
}

export interface FuelSyncResult {
  vehicles: number;
  readings: number;
  /** fuel_drop / fuel_refuel told, and those not told because the vehicle moved meanwhile. */
  changes: number;
  whileMoving: number;
  /** Vehicles (or units of one) whose sync failed, in all. */
  failedCount: number;
  /** The first FAILED_IN_DETAIL of them with their errors: a run's summary and log stay bounded however many fail. */
  failed: Array<{ vehicleno: string; error: string }>;
  /** The plan's account, when planned (`budget`). */
  plan?: FuelPlanResult;
}

/** A vehicle's history calls for the day are spent: its sync stops where it got to. */
class BudgetSpent extends Error {}

/** Two days: the hash of a day's calls outlives its day, whatever the clocks, and then goes. */
const CALLS_KEY_TTL_S = 2 * 86_400;

/** Failures a run's result names one by one; the rest are counted. */
export const FAILED_IN_DETAIL = 10;

/** The watermark hash's field of a vehicle's fuel changes progress (JSON of FuelChangeState), beside its unit's watermark. */
export function changesField(vehicleno: string, unit: FuelUnit): string {
  return `${vehicleno}|${unit}|changes`;
}

export function fuelLine(vehicleno: string, unit: FuelUnit, time: number, value: number): string {
  return formatLine(FUEL.name, { unit, vehicleno }, { value }, time);
}

/**
 * The service's fuel changes: judged on FUEL_DROP_MIN's unit, and, with FUEL_CHANGES_WHILE_MOVING=off,
 * not told when a GPS fix stored for the vehicle between the change's first and last reading went over
 * MOTION_SPEED (read back from InfluxDB, so what a vehicle sends later than the sync reads is not seen).
 */
export function fuelChanges(cfg: Config, publish: FuelChangesOptions['publish']): FuelChangesOptions {
  const target = influxTargetOf(cfg);
  const moved = async (vehicleno: string, from: number, to: number): Promise<boolean> => {
    const q = `SELECT max("speed") FROM "${GPS.measurement}" WHERE "vehicleno" = ${quoteString(vehicleno)} AND time >= ${timeLiteral(from)} AND time <= ${timeLiteral(to)}`;
    const [row] = await influxSelect(target, q);
    return typeof row?.max === 'number' && row.max > cfg.MOTION_SPEED;
  };
  return {
    unit: cfg.FUEL_DROP_MIN.unit,
    dropMin: cfg.FUEL_DROP_MIN.amount,
    refuelMin: cfg.FUEL_REFUEL_MIN.amount,
    windowMs: cfg.FUEL_CHANGE_WINDOW,
    ...(cfg.FUEL_CHANGES_WHILE_MOVING === 'off' ? { moved } : {}),
    publish,
  };
}

/** Tells the changes a range ended, but those during which the vehicle moved (counted instead). */
async function tellChanges(c: FuelChangesOptions, vehicleno: string, unit: FuelUnit, ended: readonly FuelChange[], result: FuelSyncResult): Promise<void> {
  const told: DerivedEvent[] = [];
  for (const change of ended) {
    if (c.moved && (await c.moved(vehicleno, change.fromAt, change.toAt))) result.whileMoving++;
    else told.push(fuelEvent(vehicleno, unit, change));
  }
  if (told.length > 0) await c.publish(told);
  result.changes += told.length;
}

export async function syncFuel(opts: FuelSyncOptions): Promise<FuelSyncResult> {
  const now = (opts.now ?? Date.now)();
  const vehicles = await opts.client.listVehicles();
  const result: FuelSyncResult = { vehicles: vehicles.length, readings: 0, changes: 0, whileMoving: 0, failedCount: 0, failed: [] };
  if (opts.listedKey) await keepListed(opts.redis, opts.listedKey, vehicles.map((v) => v.vehicleno).filter((p) => plateFaults(p).length === 0));
  const fail = (vehicleno: string, error: string) => {
    if (result.failedCount++ < FAILED_IN_DETAIL) result.failed.push({ vehicleno, error });
  };
  const readable: string[] = [];
  for (const { vehicleno } of vehicles) {
    // A number the upstream sends is a tag as a pushed plate is: one line protocol cannot carry is refused, never written.
    const fault = plateFaults(vehicleno);
    if (fault.length > 0) fail(JSON.stringify(vehicleno).slice(0, 80), `vehicle number refused: ${fault.join('; ')}`);
    else readable.push(vehicleno);
  }
  const budget = opts.budget;
  const planned = budget ? await plan(opts.redis, budget, readable, now, opts.units.length) : undefined;
  const order = planned ? planned.order : readable.map((vehicleno) => ({ vehicleno }));
  const spend = budget ? spender(opts.redis, budget, now) : undefined;
  const wall = budget?.wallClock ?? (() => performance.now());
  const started = wall();
  /** The due vehicles from `i` on are left to the next run: counted, and how long the first (the longest waiting) is past due. */
  const leaveFrom = (i: number): void => {
    if (!planned) return;
    const left = order.slice(i) as VehiclePlan[];
    planned.result.notReached = left.length;
    if (left[0]) planned.result.behindMs = Math.max(0, now - (left[0].lastSynced + planned.result.spacingMs));
  };
  for (let i = 0; i < order.length; i++) {
    const { vehicleno } = order[i]!;
    if (opts.signal?.aborted || (budget && wall() - started > budget.runForMs)) {
      leaveFrom(i);
      break;
    }
    let complete = true;
    for (const unit of opts.units) {
      const field = `${vehicleno}|${unit}`;
      const judged = opts.changes?.unit === unit ? opts.changes : undefined;
      try {
        const [mark, saved] = await opts.redis.hmget(opts.watermarkKey, field, changesField(vehicleno, unit));
        let state: FuelChangeState | undefined;
        if (judged) state = saved ? (JSON.parse(saved) as FuelChangeState) : { ...freshFuelState(), last: mark === null ? now - opts.lookbackMs - 1 : Number(mark) };
        let newest = mark === null ? -Infinity : Number(mark);
        // A release that does not judge fuel changes may have moved the watermark past them: read again from their progress.
        // From the watermark, however long ago: a vehicle the plan kept waiting loses no reading.
        let from = mark === null ? now - opts.lookbackMs : Number(mark) + 1;
        if (state && state.last + 1 < from) from = state.last + 1;
        while (from <= now) {
          const to = Math.min(now, from + opts.maxRangeMs);
          await spend?.(vehicleno);
          const readings = await opts.client.getFuelHistory({ vehicleno, from, to, inLitres: unit === 'litres' }, opts.signal ? { signal: opts.signal } : undefined);
          const fresh = readings.filter((r) => r.time >= from && r.time <= to);
          if (fresh.length > 0) {
            await opts.sink.write(Lines.of(fresh.map((r) => fuelLine(vehicleno, unit, r.time, r.value))));
            result.readings += fresh.length;
          }
          newest = fresh.reduce((m, r) => Math.max(m, r.time), newest);
          const progress = [field, String(newest)];
          if (judged && state) {
            await tellChanges(judged, vehicleno, unit, judgeFuel(state, fresh, judged, to), result);
            progress.push(changesField(vehicleno, unit), JSON.stringify(state));
          }
          // Only after the store has the points and the events: a crash before this line reads the same
          // range again, from the progress before it, and tells the same events.
          if (Number.isFinite(newest)) await opts.redis.hset(opts.watermarkKey, ...progress);
          from = to + 1;
        }
      } catch (err) {
        complete = false;
        // Stopped: not a failure of the vehicle; the next run reads it again from its watermark.
        if (opts.signal?.aborted) break;
        // The upstream says the vehicle's calls are spent for longer than a run (its day's, counted as it
        // counts them): the plan takes its word, so that no further call of the day is refused.
        if (budget && err instanceof UpstreamThrottledError && err.retryAfterMs !== undefined && err.retryAfterMs > budget.runForMs) {
          await opts.redis.hset(budget.callsKey(budgetDay(now)), vehicleno, Math.max(budget.callsPerDay, 1));
          if (planned) planned.result.outOfBudget++;
          break;
        }
        if (err instanceof BudgetSpent) {
          // Not a failure: the rest of its history is read on the next UTC day, from the watermark.
          if (planned) planned.result.outOfBudget++;
          break;
        }
        // Cut to one bounded line whatever failed (the upstream, Redis, InfluxDB): it goes to the log and the job's reason.
        fail(vehicleno, boundedText(err instanceof Error ? err.message : String(err)));
      }
    }
    if (opts.signal?.aborted && !complete) {
      leaveFrom(i);
      break;
    }
    if (budget && planned && complete) {
      await opts.redis.zadd(budget.syncedKey, now, vehicleno);
      planned.result.synced++;
    }
  }
  if (planned) result.plan = planned.result;
  return result;
}

/**
 * The run's plan (plan.ts) from what Redis holds: when each listed vehicle was last synced (a vehicle
 * seen for the first time is entered as due from now), today's calls per vehicle. Vehicles no longer
 * listed leave the set, so it holds the fleet and no more.
 */
async function plan(redis: RedisClient, budget: FuelBudget, listed: readonly string[], now: number, units: number): Promise<{ order: VehiclePlan[]; result: FuelPlanResult }> {
  const spacingMs = syncSpacingMs(budget.callsPerDay, units);
  const scores = new Map<string, number>();
  const flat = await redis.zrange(budget.syncedKey, 0, -1, 'WITHSCORES');
  for (let i = 0; i + 1 < flat.length; i += 2) scores.set(flat[i]!, Number(flat[i + 1]));
  const listedSet = new Set(listed);
  const gone = [...scores.keys()].filter((v) => !listedSet.has(v));
  const fresh = listed.filter((v) => !scores.has(v));
  for (let i = 0; i < gone.length; i += 1_000) await redis.zrem(budget.syncedKey, ...gone.slice(i, i + 1_000));
  for (let i = 0; i < fresh.length; i += 1_000) {
    const chunk = fresh.slice(i, i + 1_000);
    await redis.zadd(budget.syncedKey, 'NX', ...chunk.flatMap((v) => [now - spacingMs, v]));
    for (const v of chunk) scores.set(v, now - spacingMs);
  }
  const calls = await redis.hgetall(budget.callsKey(budgetDay(now)));
  const vehicles = listed.map((vehicleno) => ({ vehicleno, lastSynced: scores.get(vehicleno)!, callsToday: Number(calls[vehicleno] ?? 0) }));
  const { due, outOfBudget } = planRun(vehicles, now, { spacingMs, callsPerDay: budget.callsPerDay, callsPerSync: units });
  return { order: due, result: { due: due.length, synced: 0, notReached: 0, outOfBudget: outOfBudget.length, behindMs: 0, spacingMs } };
}

/** Counts a history call against its vehicle's day before it is made; throws BudgetSpent when the day's are spent. */
function spender(redis: RedisClient, budget: FuelBudget, now: number): (vehicleno: string) => Promise<void> {
  const key = budget.callsKey(budgetDay(now));
  return async (vehicleno) => {
    const res = await redis.multi().hincrby(key, vehicleno, 1).expire(key, CALLS_KEY_TTL_S).exec();
    const spent = Number(res?.[0]?.[1]);
    if (!Number.isFinite(spent)) throw res?.[0]?.[0] ?? new Error('counting a history call was aborted');
    if (budget.callsPerDay > 0 && spent > budget.callsPerDay) {
      await redis.hincrby(key, vehicleno, -1);
      throw new BudgetSpent(`${vehicleno}: ${budget.callsPerDay} history calls today`);
    }
  };
}

/** The upstream's list, replacing the one before (one MULTI: receivers never see it half written). */
async function keepListed(redis: FuelSyncOptions['redis'], key: string, plates: readonly string[]): Promise<void> {
  const multi = redis.multi().del(key);
  for (let i = 0; i < plates.length; i += 1_000) multi.sadd(key, ...plates.slice(i, i + 1_000));
  const res = await multi.exec();
  const failed = res?.find(([err]) => err);
  if (!res || failed) throw failed?.[0] ?? new Error('keeping the listed vehicles was aborted');
}
