import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { Redis } from 'ioredis';
import type { Worker } from 'bullmq';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import { pushRoutes } from '../receive/app.js';
import { createApp, healthRoutes, type HealthCheck } from './health.js';
import { Producer } from '../queue/producer.js';
import { Quarantine } from '../queue/quarantine.js';
import { Admission } from '../queue/admission.js';
import type { RetryPolicy } from '../queue/retry.js';
import { InfluxSink } from '../write/influx.js';
import { CoalescingSink } from '../write/coalesce.js';
import { IsolatingSink } from '../write/isolate.js';
import { startWorker } from '../worker/index.js';
import { UpstreamClient } from '../../upstream/client/index.js';
import { scheduleFuelSync, syncFuel } from '../sync/fuel.js';
import { checkRedisSettings } from './redisChecks.js';

export interface RunningService {
  /** Base URL of the HTTP server (push routes in receiver mode, health in every mode). */
  url: string;
  /** Stops taking pushes, lets in-flight ones and active jobs finish, then closes connections. */
  close(): Promise<void>;
}

export function retryPolicy(cfg: Config): RetryPolicy {
  return { spanMs: cfg.RETRY_SPAN, baseMs: cfg.RETRY_BASE_DELAY, maxMs: cfg.RETRY_MAX_DELAY };
}

export async function startService(cfg: Config, log: Logger): Promise<RunningService> {
  const receives = cfg.SERVICE_MODE !== 'worker';
  const works = cfg.SERVICE_MODE !== 'receiver';
  const checks: HealthCheck[] = [];
  const closers: Array<() => Promise<unknown>> = [];

  // The receiver's connection fails fast while Redis is away, so a push gets its 503 at once
  // instead of waiting in ioredis's offline queue while the sender times out.
  const redis = new Redis(cfg.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    retryStrategy: (times) => Math.min(times * 250, 2_000),
  });
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  checks.push({ name: 'redis', check: async () => redis.status === 'ready' && (await redis.ping()) === 'PONG' });
  redis.once('ready', () => void checkRedisSettings(redis, log));

  let push: Hono | undefined;
  if (receives) {
    const producer = new Producer(redis, {
      queueName: cfg.QUEUE_NAME,
      maxRecordsPerJob: cfg.JOB_MAX_RECORDS,
      timeoutMs: cfg.ENQUEUE_TIMEOUT,
      retry: retryPolicy(cfg),
    });
    const admission = new Admission(producer.queue, redis, {
      maxQueuedJobs: cfg.QUEUE_MAX_JOBS,
      redisMemoryLimit: cfg.REDIS_MEMORY_LIMIT,
      intervalMs: 500,
      retryAfterSeconds: 5,
    });
    redis.on('ready', () => admission.start());
    closers.push(async () => admission.stop(), () => producer.close());
    push = pushRoutes(producer, new Quarantine(redis, cfg.QUEUE_NAME), {
      admission,
      tokens: cfg.PUSH_AUTH === 'none' ? undefined : cfg.PUSH_TOKENS,
      bodyLimit: cfg.BODY_LIMIT,
      quarantineRawLimit: cfg.QUARANTINE_RAW_LIMIT,
      retryAfterSeconds: 5,
      log,
    });
  }

  let worker: Worker | undefined;
  let workerRedis: Redis | undefined;
  if (works) {
    // Concurrent jobs' points merged into requests of WRITE_BATCH_LINES; a refused request is
    // isolated to its refused lines, which reach the job that wrote them.
    const sink = new CoalescingSink(
      new IsolatingSink(
        new InfluxSink({ url: cfg.INFLUX_URL, token: cfg.INFLUX_TOKEN, org: cfg.INFLUX_ORG, bucket: cfg.INFLUX_BUCKET, timeoutMs: cfg.INFLUX_TIMEOUT }),
      ),
      { maxLines: cfg.WRITE_BATCH_LINES, maxInFlight: cfg.WRITE_CONCURRENCY },
    );
    // Workers block on Redis; BullMQ requires them to retry commands indefinitely.
    workerRedis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: null, retryStrategy: (t) => Math.min(t * 250, 2_000) });
    workerRedis.on('error', (err) => log.debug({ err: err.message }, 'worker redis connection error'));
    worker = startWorker(workerRedis, {
      queueName: cfg.QUEUE_NAME,
      concurrency: cfg.WORKER_CONCURRENCY,
      lockDurationMs: cfg.WORKER_LOCK_DURATION,
      maxStalls: cfg.WORKER_MAX_STALLS,
      retry: retryPolicy(cfg),
      flatten: { temperatureSentinels: cfg.CAN_TEMP_SENTINELS },
      sink,
      log,
    });
    checks.push({ name: 'influxdb', check: () => sink.ready() });
    closers.push(() => worker!.close(), () => sink.close());

    if (cfg.UPSTREAM_URL) {
      const client = new UpstreamClient({ baseUrl: cfg.UPSTREAM_URL, token: cfg.UPSTREAM_TOKEN, timeUnit: cfg.UPSTREAM_TIME_UNIT });
      const fuelRedis = workerRedis;
      const fuel = await scheduleFuelSync(fuelRedis, cfg.QUEUE_NAME, cfg.FUEL_SYNC_INTERVAL, () =>
        syncFuel({
          client,
          sink,
          redis: fuelRedis,
          watermarkKey: `${cfg.QUEUE_NAME}:fuel:watermarks`,
          units: cfg.FUEL_UNITS,
          lookbackMs: cfg.FUEL_SYNC_LOOKBACK,
          maxRangeMs: 24 * 3_600_000,
        }), log);
      closers.unshift(() => fuel.close());
    }
  }

  const app = createApp({ push, health: healthRoutes(checks) });
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: cfg.PORT, hostname: cfg.HOST }, () => resolve(s as Server));
  });
  const { port } = server.address() as AddressInfo;
  const host = cfg.HOST === '0.0.0.0' || cfg.HOST === '::' ? '127.0.0.1' : cfg.HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  log.info({ mode: cfg.SERVICE_MODE, url, queue: cfg.QUEUE_NAME }, 'telematics-ingest started');

  let closing: Promise<void> | undefined;
  return {
    url,
    close() {
      closing ??= (async () => {
        // Stop accepting first; requests already inside finish and are answered.
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        for (const c of closers) await c().catch((err: Error) => log.warn({ err: err.message }, 'error while closing'));
        redis.disconnect();
        workerRedis?.disconnect();
        log.info('telematics-ingest stopped');
      })();
      return closing;
    },
  };
}
