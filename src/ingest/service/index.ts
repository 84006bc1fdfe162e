import { Redis } from 'ioredis';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import { createApp, healthRoutes, type HealthCheck } from './health.js';
import { serveHttp } from './http.js';
import { startReceiver, type RunningReceiver } from './receiver.js';
import { checkRedisSettings } from './redisChecks.js';
import { startWorkers, type RunningWorkers } from './workers.js';

import { httpLimits, httpTls } from './components.js';

export { retryPolicy } from './components.js';

export interface RunningService {
  /** Base URL of the HTTP server (push routes in receiver mode, health in every mode). */
  url: string;
  /** Stops taking pushes, lets in-flight ones and active jobs finish, then closes connections. */
  close(): Promise<void>;
}

/** The composition root: a receiver and/or workers as SERVICE_MODE says, and the HTTP server. */
export async function startService(cfg: Config, log: Logger): Promise<RunningService> {
  // The receiver's connection fails fast while Redis is away, so a push gets its 503 at once
  // instead of waiting in ioredis's offline queue while the sender times out.
  const redis = new Redis(cfg.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    retryStrategy: (times) => Math.min(times * 250, 2_000),
  });
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  redis.once('ready', () => void checkRedisSettings(redis, log));
  const checks: HealthCheck[] = [{ name: 'redis', check: async () => redis.status === 'ready' && (await redis.ping()) === 'PONG' }];

  const receiver: RunningReceiver | undefined = cfg.SERVICE_MODE !== 'worker' ? startReceiver(cfg, redis, log) : undefined;
  const workers: RunningWorkers | undefined = cfg.SERVICE_MODE !== 'receiver' ? await startWorkers(cfg, log) : undefined;
  if (workers) checks.push(...workers.checks);

  const http = await serveHttp(createApp({ push: receiver?.routes, health: healthRoutes(checks) }), cfg.HOST, cfg.PORT, httpLimits(cfg), httpTls(cfg));
  log.info({ mode: cfg.SERVICE_MODE, url: http.url, queue: cfg.QUEUE_NAME }, 'telematics-ingest started');

  let closing: Promise<void> | undefined;
  return {
    url: http.url,
    close() {
      closing ??= (async () => {
        // Stop accepting first; requests already inside finish and are answered.
        await http.close();
        await receiver?.close().catch((err: Error) => log.warn({ err: err.message }, 'error while closing'));
        await workers?.close();
        redis.disconnect();
        log.info('telematics-ingest stopped');
      })();
      return closing;
    },
  };
}
