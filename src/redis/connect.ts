import { readFileSync } from 'node:fs';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '../config/index.js';
import { withoutCredentials } from '../config/secrets.js';
import { keySlot } from './slots.js';

/**
 * The one way every process and tool connects to Redis: a single node (`REDIS_URL`, `redis://` or
 * `rediss://`), the primary that Sentinel names (`REDIS_SENTINELS`, `REDIS_SENTINEL_MASTER`), or a
 * Redis Cluster (`REDIS_CLUSTER_NODES`), with ACL credentials and TLS (CA, client certificate and key,
 * server name) from settings.
 */

/** A connection to a single node (direct or through Sentinel) or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;
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
  | 'REDIS_CLUSTER_NODES'
>;

function hostPort(hp: string): { host: string; port: number } {
  const colon = hp.lastIndexOf(':');
  return { host: hp.slice(0, colon), port: Number(hp.slice(colon + 1)) };
}

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

export function connectRedis(cfg: RedisSettings, role: RedisRole): RedisClient {
  const tls = tlsOptions(cfg);
  const common: RedisOptions = {
    ...ROLE_OPTIONS[role],
    ...(cfg.REDIS_USERNAME ? { username: cfg.REDIS_USERNAME } : {}),
    ...(cfg.REDIS_PASSWORD ? { password: cfg.REDIS_PASSWORD } : {}),
    ...(tls ? { tls } : {}),
  };
  if (cfg.REDIS_CLUSTER_NODES.length > 0) {
    const options: ClusterOptions = {
      redisOptions: common,
      // The receiver's 503 must come at once while the cluster is away, as on a single node.
      enableOfflineQueue: role !== 'receiver',
      clusterRetryStrategy: (times) => Math.min(times * 250, 2_000),
      // A failover takes the cluster's node timeout to elect a replica; commands wait that long.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      // Managed clusters (ElastiCache, MemoryDB) announce addresses TLS must see as given, unresolved.
      ...(tls ? { dnsLookup: (address, done) => done(null, address) } : {}),
    };
    return new Cluster(cfg.REDIS_CLUSTER_NODES.map(hostPort), options);
  }
  if (cfg.REDIS_SENTINELS.length > 0) {
    return new Redis({
      ...common,
      sentinels: cfg.REDIS_SENTINELS.map(hostPort),
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
  if (cfg.REDIS_CLUSTER_NODES.length > 0) return `cluster via ${cfg.REDIS_CLUSTER_NODES.join(', ')}`;
  if (cfg.REDIS_SENTINELS.length > 0) return `sentinel ${cfg.REDIS_SENTINEL_MASTER ?? 'mymaster'} via ${cfg.REDIS_SENTINELS.join(', ')}`;
  return withoutCredentials(cfg.REDIS_URL);
}

export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

/** The masters that hold data: the one node, or each master of a cluster as the client last saw them. */
export function mastersOf(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/**
 * The connection to the master that holds `key`: where a WAIT must go to count the writes made to
 * that key (WAIT counts the writes of the connection it is sent on).
 */
export function masterFor(client: RedisClient, key: string): Redis | undefined {
  if (!isCluster(client)) return client;
  const owner = client.slots[keySlot(key)]?.[0];
  return client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
}
