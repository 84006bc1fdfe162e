import { readFileSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config/index.js';

/**
 * The one way every process and tool connects to Redis: a single node (`REDIS_URL`, `redis://` or
 * `rediss://`) or the primary that Sentinel names (`REDIS_SENTINELS`, `REDIS_SENTINEL_MASTER`), with
 * ACL credentials and TLS (CA, client certificate and key, server name) from settings.
 */
export type RedisRole =
  /** Fails fast while Redis is away, so a push gets its 503 at once instead of waiting in the offline queue. */
  | 'receiver'
  /** Retries commands indefinitely, as BullMQ's workers require. */
  | 'worker'
  /** A few retries, then an error a person reads. */
  | 'tool';

const ROLE_OPTIONS: Record<RedisRole, RedisOptions> = {
  receiver: { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5_000, retryStrategy: (times) => Math.min(times * 250, 2_000) },
  worker: { maxRetriesPerRequest: null, retryStrategy: (times) => Math.min(times * 250, 2_000) },
  tool: { maxRetriesPerRequest: 2, connectTimeout: 5_000 },
};

type RedisSettings = Pick<
  Config,
  | 'REDIS_URL'
  | 'REDIS_USERNAME'
  | 'REDIS_PASSWORD'
  | 'REDIS_TLS_CA'
  | 'REDIS_TLS_CERT'
  | 'REDIS_TLS_KEY'
  | 'REDIS_TLS_SERVERNAME'
  | 'REDIS_SENTINELS'
  | 'REDIS_SENTINEL_MASTER'
  | 'REDIS_SENTINEL_PASSWORD'
>;

/** TLS from settings: `rediss://` alone uses the system's CAs; files add a CA, a client certificate and key. */
function tlsOptions(cfg: RedisSettings): RedisOptions['tls'] {
  const files = cfg.REDIS_TLS_CA || cfg.REDIS_TLS_CERT || cfg.REDIS_TLS_KEY || cfg.REDIS_TLS_SERVERNAME;
  if (!files && !cfg.REDIS_URL.startsWith('rediss://')) return undefined;
  return {
    ...(cfg.REDIS_TLS_CA ? { ca: readFileSync(cfg.REDIS_TLS_CA) } : {}),
    ...(cfg.REDIS_TLS_CERT ? { cert: readFileSync(cfg.REDIS_TLS_CERT) } : {}),
    ...(cfg.REDIS_TLS_KEY ? { key: readFileSync(cfg.REDIS_TLS_KEY) } : {}),
    ...(cfg.REDIS_TLS_SERVERNAME ? { servername: cfg.REDIS_TLS_SERVERNAME } : {}),
  };
}

export function connectRedis(cfg: RedisSettings, role: RedisRole): Redis {
  const tls = tlsOptions(cfg);
  const common: RedisOptions = {
    ...ROLE_OPTIONS[role],
    ...(cfg.REDIS_USERNAME ? { username: cfg.REDIS_USERNAME } : {}),
    ...(cfg.REDIS_PASSWORD ? { password: cfg.REDIS_PASSWORD } : {}),
    ...(tls ? { tls } : {}),
  };
  if (cfg.REDIS_SENTINELS.length > 0) {
    return new Redis({
      ...common,
      sentinels: cfg.REDIS_SENTINELS.map((hp) => {
        const colon = hp.lastIndexOf(':');
        return { host: hp.slice(0, colon), port: Number(hp.slice(colon + 1)) };
      }),
      name: cfg.REDIS_SENTINEL_MASTER ?? 'mymaster',
      role: 'master',
      ...(cfg.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: cfg.REDIS_SENTINEL_PASSWORD } : {}),
      ...(tls ? { sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
    });
  }
  return new Redis(cfg.REDIS_URL, common);
}

/** Where a process connects, as it may be logged (no credentials). */
export function redisTarget(cfg: RedisSettings): string {
  if (cfg.REDIS_SENTINELS.length > 0) return `sentinel ${cfg.REDIS_SENTINEL_MASTER ?? 'mymaster'} via ${cfg.REDIS_SENTINELS.join(', ')}`;
  return cfg.REDIS_URL.replace(/\/\/[^@/]*@/, '//');
}
