import { connectRedis } from '../../redis/connect.js';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import { fuelChanges, syncFuel } from '../sync/fuel.js';
import { serviceUpstreamClient, TokenExpiryWatch } from '../sync/upstream.js';
import { reportPlan } from '../sync/report.js';
import { startWorker, type RunningWorker } from '../worker/index.js';
import { StateUpdateBatches } from '../worker/batches.js';
import { untilAccessible } from '../../redis/access.js';
import { flattenOptions, jobSealFor, plausibilityFor, pointSink, quarantineFor, retryPolicy, servedPartitions } from './components.js';
import { TYPES } from '../../telemetry/fields.js';
import { keysOf } from '../queue/keys.js';
import { fleetStateFor } from '../fleet/state.js';
import { writeStatusChanges } from '../fleet/changes.js';
import { expireVehicles } from '../fleet/expire.js';
import { RECORD_SETS } from '../events/store/partition.js';
import { scheduleRuns } from './schedule.js';
import { startEvents } from '../events/index.js';
import { startCommands } from '../commands/index.js';
import type { HealthCheck } from './health.js';
import { ReadsAnnouncer, THIS_RELEASE, type Reads } from '../queue/formats.js';

/** Longest fuel-history range asked of the upstream in one call; upstreams bound it. */
const FUEL_MAX_RANGE_MS = 24 * 3_600_000;

export interface RunningWorkers {
  checks: HealthCheck[];
  close(): Promise<void>;
}

export interface WorkersOptions {
  /** The job formats these workers read and announce; this release's when unset (tests stand for an older release with less). */
  reads?: Reads;
}

/** Workers writing queued records to InfluxDB, and the fuel sync when an upstream is configured. */
export async function startWorkers(cfg: Config, log: Logger, metrics?: Metrics, opts: WorkersOptions = {}): Promise<RunningWorkers> {
  const reads = opts.reads ?? THIS_RELEASE;
  const keys = keysOf(cfg);
  const sink = pointSink(cfg, metrics);
  // Workers block on Redis; BullMQ requires them to retry commands indefinitely.
  const redis = connectRedis(cfg, 'worker');
  redis.on('error', (err) => log.debug({ err: err.message }, 'worker redis connection error'));
  const closers: Array<() => Promise<unknown>> = [() => sink.close()];
  const running: RunningWorker[] = [];
  // Workers start only once Redis lets the queue run (see redis/access.ts): a refused command would
  // otherwise make BullMQ's fetch loop spin.
  const access = untilAccessible(redis, cfg.REDIS_SKIP_VERSION_CHECK, log);
  const started = access.ready.then(async () => {
    const quarantine = quarantineFor(cfg, redis);
    const seal = jobSealFor(cfg, redis);
    // Jobs without the receivers' seal are judged as a push: by the same rules, with the field names
    // admitted beyond the schema in step with the receivers.
    const plausibility = plausibilityFor(cfg);
    const names = plausibility.opts.extraFields;
    void names?.start(redis, keys.extraFieldNames, [...new Set(TYPES.map((t) => t.spec.measurement))]);
    if (names) closers.unshift(async () => names.stop());
    // A BullMQ worker a partition, all writing through the one sink, so that their points merge
    // into the same InfluxDB requests. WORKER_CONCURRENCY is the process's, shared by its partitions,
    // so that its memory does not grow with QUEUE_PARTITIONS.
    const served = servedPartitions(cfg);
    const concurrency = Math.max(1, Math.ceil(cfg.WORKER_CONCURRENCY / served.length));
    const fleet = fleetStateFor(cfg, redis);
    // The command ledger (COMMANDS=on): its automation hears the events; its sweep tells through them.
    const commands = cfg.COMMANDS === 'on' ? startCommands(cfg, redis, sink, log, metrics) : undefined;
    const events = cfg.EVENTS === 'on' ? startEvents(cfg, redis, keys, served.map((q) => keys.partitions.indexOf(q)), sink, log, metrics, (entries) => quarantine.add(entries), commands ? { ...(commands.observe ? { observe: commands.observe } : {}), immobilisations: commands.immobilisations } : {}) : undefined;
    if (events) closers.unshift(() => events.close());
    if (commands) {
      commands.attach(events);
      closers.unshift(() => commands.close());
    }
    // What workers read of each record beyond its point: the events' inputs, and with commands the pack's allow flags too (the events' slots unchanged).
    const pick = commands?.pick ?? events?.pick;
    // After InfluxDB confirmed a job's points: the fleet's last-seen state, then the vehicle events, for
    // the partition's jobs in batches (worker/batches.ts).
    const batches = new StateUpdateBatches(
      async (partition, records, jobs) => {
        await fleet.record(partition, records);
        await commands?.record(partition, records);
        await events?.record(partition, records);
        metrics?.writtenBatchJobs.observe(jobs);
      },
      // An eighth of the slots a batch: the batch updating and the one waiting for it leave three quarters
      // of them to jobs writing points, so that many small jobs (realtime pushes) are not kept from starting.
      // With vehicle events, a partition's jobs are derived in the order they were accepted (batches.ts).
      {
        lingerMs: cfg.WORKER_LINGER,
        maxJobs: Math.max(1, Math.floor(concurrency / 8)),
        maxRecords: 10_000,
        ...(events ? { order: { active: (partition: number) => redis.lrange(keys.activeJobs(keys.partitions[partition]!), 0, -1), waitMs: cfg.EVENTS_ORDER_WAIT } } : {}),
      },
    );
    for (const queue of served) {
      const partition = keys.partitions.indexOf(queue);
      const worker = startWorker(redis, {
        queue,
        quarantine,
        concurrency,
        lockDurationMs: cfg.WORKER_LOCK_DURATION,
        maxStalls: cfg.WORKER_MAX_STALLS,
        retry: retryPolicy(cfg),
        unsealed: { flatten: flattenOptions(cfg), plausibility, quarantineRawLimit: cfg.QUARANTINE_RAW_LIMIT },
        seal,
        sink,
        written: (records, jobId) => batches.add(partition, records, jobId),
        ...(pick ? { pick } : {}),
        log,
        metrics,
        skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK,
        reads,
      });
      running.push(worker);
      closers.unshift(() => worker.close());
    }
    // Receivers write only what every live worker reads (queue/formats.ts). Withdrawn first on close,
    // so that receivers stop counting on this process before its workers stop.
    const announcer = new ReadsAnnouncer(redis, keys.readers, reads, log);
    announcer.start();
    closers.unshift(() => announcer.stop());
    const status = await scheduleRuns(
      redis,
      { queue: keys.fleetQueue, job: 'fleet-status', intervalMs: cfg.FLEET_STATUS_INTERVAL, skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK },
      async () => {
        const changes = await writeStatusChanges(fleet, sink, cfg.SILENT_AFTER, Date.now(), events?.publish);
        // Then the vehicles not heard from for VEHICLE_EXPIRY are forgotten: Redis holds the fleet that reports.
        const expired = await expireVehicles(redis, keys, RECORD_SETS.map((r) => r.id), cfg.SILENT_AFTER.map((t) => t.label), Date.now(), cfg.VEHICLE_EXPIRY);
        if (expired.length > 0) {
          metrics?.vehiclesExpired.inc(expired.length);
          log.info({ vehicles: expired.length, first: expired[0], expiry: cfg.VEHICLE_EXPIRY }, 'vehicles not heard from for VEHICLE_EXPIRY forgotten');
        }
        return { summary: { ...changes, expired: expired.length } };
      },
      log,
    );
    closers.unshift(() => status.close());
    if (cfg.UPSTREAM_URL) {
      const client = serviceUpstreamClient(cfg, redis, keys.upstreamPacing, metrics);
      const watch = new TokenExpiryWatch(cfg.UPSTREAM_TOKEN, cfg.UPSTREAM_TOKEN_WARN_BEFORE, log, metrics);
      watch.start();
      closers.unshift(async () => watch.stop());
      // Stops a run between calls when the process stops: under the pacing a run may last FUEL_SYNC_INTERVAL.
      const stopFuel = new AbortController();
      const run = () =>
        syncFuel({
          signal: stopFuel.signal,
          client,
          sink,
          redis,
          watermarkKey: keys.fuelWatermarks,
          listedKey: keys.listedVehicles,
          units: cfg.FUEL_UNITS,
          lookbackMs: cfg.FUEL_SYNC_LOOKBACK,
          maxRangeMs: FUEL_MAX_RANGE_MS,
          ...(events ? { changes: fuelChanges(cfg, events.publish) } : {}),
          // A run ends before the next is due: the vehicles it did not reach are the next one's first.
          budget: { callsPerDay: cfg.UPSTREAM_HISTORY_CALLS_PER_DAY, syncedKey: keys.fuelSynced, callsKey: keys.fuelHistoryCalls, runForMs: cfg.FUEL_SYNC_INTERVAL },
        });
      const fuel = await scheduleRuns(
        redis,
        { queue: keys.fuelQueue, job: 'fuel-sync', intervalMs: cfg.FUEL_SYNC_INTERVAL, skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK },
        async () => {
          const r = await run();
          reportPlan(r, cfg, log, metrics);
          const more = r.failedCount - r.failed.length;
          const failed = r.failedCount > 0 ? `fuel sync failed for ${r.failed.map((f) => `${f.vehicleno}: ${f.error}`).join('; ')}${more > 0 ? `; and ${more} more` : ''}` : undefined;
          const plan = r.plan ? { due: r.plan.due, synced: r.plan.synced, notReached: r.plan.notReached, outOfBudget: r.plan.outOfBudget, behindSeconds: Math.round(r.plan.behindMs / 1000) } : {};
          return { summary: { vehicles: r.vehicles, readings: r.readings, changes: r.changes, whileMoving: r.whileMoving, failed: r.failedCount, ...plan }, ...(failed ? { failed } : {}) };
        },
        log,
      );
      closers.unshift(() => fuel.close());
      closers.unshift(async () => stopFuel.abort());
    }
  });
  started.catch((err: Error) => log.error({ err: err.message }, 'workers failed to start'));

  return {
    checks: [
      { name: 'influxdb', check: () => sink.ready() },
      // Whether this process can do its work (fetch jobs), not merely whether Redis answers PING.
      { name: 'fetch', check: async () => access.problem() === undefined && running.every((w) => w.fetchProblem() === undefined) },
    ],
    async close() {
      access.stop();
      for (const c of closers) await c().catch((err: Error) => log.warn({ err: err.message }, 'error while closing'));
      redis.disconnect();
    },
  };
}

