import { Queue } from 'bullmq';
import { connectRedis, redisTarget } from '../../redis/connect.js';
import { Metrics, packageVersion } from '../../metrics/index.js';
import { logSummaries } from '../../metrics/summary.js';
import { adminRoutes } from './admin.js';
import { untilAccessible } from '../../redis/access.js';
import { quarantineShareOf, type Config } from '../../config/index.js';
import { Quarantine } from '../queue/quarantine.js';
import type { Logger } from '../../log/index.js';
import { createApp, healthRoutes, type HealthCheck } from './health.js';
import { serveHttp } from './http.js';
import { startReceiver, type RunningReceiver } from './receiver.js';
import { checkRedisSettings } from './redisChecks.js';
import { startWorkers, type RunningWorkers } from './workers.js';

import { adminCredentials, httpLimits, httpTls } from './components.js';
import { keysOf } from '../queue/keys.js';
import { fleetStateFor } from '../fleet/state.js';
import { sampleFleet } from '../fleet/gauges.js';
import { Backlog } from '../queue/backlog.js';
import { sampleQueueGauges } from '../queue/gauges.js';
import { fleetRoutes } from '../fleet/routes.js';
import { GEOFENCES_PATH, geofenceRoutes } from '../geofences/routes.js';
import { GeofenceRegistry } from '../geofences/registry.js';
import type { Reads } from '../queue/formats.js';
import { COMMANDS_PATH, commandRoutes, commandsOffRoutes } from '../commands/routes.js';
import { commandLedgerFor, latestValuesFor } from '../commands/index.js';

export { retryPolicy } from './components.js';

export interface RunningService {
  /** Base URL of the HTTP server (push routes in receiver mode, health in every mode). */
  url: string;
  /** Base URL of the admin listener (`/metrics`). */
  adminUrl: string;
  /**
   * Stops taking pushes (both listeners closed, idle connections closed at once, the rest after
   * their requests' grace), lets pushes being enqueued and active jobs finish, then closes the Redis
   * connections. Unbounded while a step waits (the caller bounds it: SHUTDOWN_GRACE); see `unfinished`.
   */
  close(): Promise<void>;
  /** While `close()` runs: the steps begun and not finished, by name (`SHUTDOWN_STEPS`), what a deadline cut short. */
  unfinished(): string[];
}

/** The steps of `close()`, in order (the listeners side by side), as `unfinished()` names them. */
export const SHUTDOWN_STEPS = ['push listener', 'admin listener', 'receiver', 'workers', 'queue gauges'] as const;
export type ShutdownStep = (typeof SHUTDOWN_STEPS)[number];

/**
 * How long requests in flight when the listeners close have to be answered before their connections
 * are closed: a push's enqueue is bounded by ENQUEUE_TIMEOUT; half of SHUTDOWN_GRACE at most, the
 * other half left to the workers.
 */
export function requestGrace(cfg: Pick<Config, 'ENQUEUE_TIMEOUT' | 'SHUTDOWN_GRACE'>): number {
  return Math.min(cfg.ENQUEUE_TIMEOUT + 1_000, Math.floor(cfg.SHUTDOWN_GRACE / 2));
}

export interface ServiceOptions {
  /**
   * The job formats this process reads and writes (queue/formats.ts); this release's when unset. Only
   * tests set it, to run an older release's receiver or workers beside this one's.
   */
  release?: Reads;
}

/** The composition root: a receiver and/or workers as SERVICE_MODE says, and the HTTP server. */
export async function startService(cfg: Config, log: Logger, opts: ServiceOptions = {}): Promise<RunningService> {
  // The receiver's connection fails fast while Redis is away, so a push gets its 503 at once
  // instead of waiting in ioredis's offline queue while the sender times out.
  const redis = connectRedis(cfg, 'receiver');
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  redis.once('ready', () => void checkRedisSettings(redis, log));
  // Ready means able to do the work (enqueue, for a receiver): Redis answering PING is not enough
  // when its user may not run what the queue needs.
  const access = untilAccessible(redis, cfg.REDIS_SKIP_VERSION_CHECK, log);
  const checks: HealthCheck[] = [
    { name: 'redis', check: async () => redis.status === 'ready' && (await redis.ping()) === 'PONG' },
    ...(cfg.SERVICE_MODE !== 'worker' ? [{ name: 'enqueue', check: async () => access.problem() === undefined }] : []),
  ];

  const metrics = new Metrics({ version: packageVersion(), mode: cfg.SERVICE_MODE });
  metrics.maxVehicles.set(cfg.MAX_VEHICLES);
  metrics.quarantineShare.set(quarantineShareOf(cfg.QUARANTINE_MAX_BYTES, cfg.SENDERS.length));
  const workers: RunningWorkers | undefined = cfg.SERVICE_MODE !== 'receiver' ? await startWorkers(cfg, log, metrics, opts.release ? { reads: opts.release } : {}) : undefined;
  if (workers) checks.push(...workers.checks);
  // Every process samples the queue gauges, so that each one's scrape alone tells the backlog; a
  // receiver's admission reads the same measurement.
  const keys = keysOf(cfg);
  const sampledQueues = keys.partitions.map((name) => {
    const q = new Queue(name, { connection: redis, skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK });
    q.on('error', () => {});
    return q;
  });
  const backlog = new Backlog(sampledQueues, redis, keys.quarantine);
  const sampler = sampleQueueGauges(metrics, backlog, new Quarantine(redis, keys), cfg.METRICS_SAMPLE_INTERVAL, () => redis.status === 'ready');
  const receiver: RunningReceiver | undefined = cfg.SERVICE_MODE !== 'worker' ? startReceiver(cfg, redis, log, metrics, backlog, opts.release) : undefined;
  const fleet = fleetStateFor(cfg, redis);
  const fleetSampler = sampleFleet(metrics, fleet, cfg.SILENT_AFTER, cfg.METRICS_SAMPLE_INTERVAL);
  const summaries = cfg.LOG_SUMMARY_INTERVAL > 0 ? logSummaries(metrics, log, cfg.LOG_SUMMARY_INTERVAL) : undefined;

  const http = await serveHttp(createApp({ push: receiver?.routes, health: healthRoutes(checks) }, log), cfg.HOST, cfg.PORT, httpLimits(cfg), httpTls(cfg), (reason) => metrics.connectionsShed.inc({ reason }));
  const ui = cfg.QUEUE_UI === 'on' ? { queues: sampledQueues, credentials: adminCredentials(cfg), writes: cfg.QUEUE_UI_WRITES === 'on' } : undefined;
  const fleetApi = fleetRoutes(fleet, cfg.SILENT_AFTER);
  fleetApi.route(GEOFENCES_PATH, geofenceRoutes(new GeofenceRegistry(redis, keys.geofences)));
  const commandsApi =
    cfg.COMMANDS === 'on' ? commandRoutes({ ledger: commandLedgerFor(cfg, redis), latest: latestValuesFor(cfg, redis), waitMaxMs: cfg.COMMANDS_WAIT_MAX, upstream: Boolean(cfg.UPSTREAM_URL) }) : commandsOffRoutes();
  // The admin listener's guard (adminRoutes) sets `credential` for every route under /fleet: the routes' env holds.
  fleetApi.route(COMMANDS_PATH, commandsApi as unknown as typeof fleetApi);
  const admin = await serveHttp(adminRoutes(metrics, ui, { routes: fleetApi, credentials: adminCredentials(cfg), open: cfg.ADMIN_AUTH === 'none' }), cfg.ADMIN_HOST, cfg.ADMIN_PORT, httpLimits(cfg));
  log.info({ mode: cfg.SERVICE_MODE, url: http.url, admin: admin.url, redis: redisTarget(cfg), queue: cfg.QUEUE_NAME, partitions: cfg.QUEUE_PARTITIONS }, 'telematics-ingest started');

  const pending = new Set<ShutdownStep>();
  /** One step of `close()`: named in `unfinished()` while it runs; an error is logged and the next step taken. */
  const step = async (name: ShutdownStep, work: () => Promise<unknown> | undefined) => {
    pending.add(name);
    const t = Date.now();
    try {
      await work();
    } catch (err) {
      log.warn({ step: name, err: err instanceof Error ? err.message : String(err) }, 'error while closing');
    } finally {
      pending.delete(name);
      log.debug({ step: name, ms: Date.now() - t }, 'closed');
    }
  };
  let closing: Promise<void> | undefined;
  return {
    url: http.url,
    adminUrl: admin.url,
    close() {
      closing ??= (async () => {
        // Stop accepting first, on both ports: requests already inside have their grace to be answered.
        const grace = requestGrace(cfg);
        await Promise.all([step('push listener', () => http.close(grace)), step('admin listener', () => admin.close(grace))]);
        await step('receiver', () => receiver?.close());
        await step('workers', () => workers?.close());
        sampler.stop();
        fleetSampler.stop();
        access.stop();
        summaries?.stop();
        await step('queue gauges', () => Promise.all(sampledQueues.map((q) => q.close().catch(() => {}))));
        redis.disconnect();
        log.info('telematics-ingest stopped');
      })();
      return closing;
    },
    unfinished: () => [...pending],
  };
}
