import type { Redis } from 'ioredis';
import { isCluster, mastersOf, type RedisClient } from '../../redis/connect.js';
import type { Logger } from '../../log/index.js';

/**
 * Warns about Redis settings that can lose acknowledged pushes: BullMQ needs
 * `maxmemory-policy noeviction` (an evicted job is a lost push), and without AOF or RDB
 * snapshots a Redis restart empties the queue.
 */
export async function checkRedisSettings(client: RedisClient, log: Logger): Promise<string[]> {
  const warnings: string[] = [];
  // On a cluster, every master holds queues: each is checked, and named in its warnings.
  for (const node of mastersOf(client)) {
    const at = isCluster(client) ? ` (cluster master ${node.options.host}:${node.options.port})` : '';
    for (const w of await nodeWarnings(node)) warnings.push(w + at);
  }
  for (const w of warnings) log.warn(w);
  return warnings;
}

async function nodeWarnings(redis: Redis): Promise<string[]> {
  const warnings: string[] = [];
  try {
    const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as [string, string];
    if (policy !== 'noeviction') {
      warnings.push(`Redis maxmemory-policy is ${policy}; set it to noeviction or queued pushes can be evicted and lost`);
    }
    const [, maxmemory] = (await redis.config('GET', 'maxmemory')) as [string, string];
    if (maxmemory === '0') {
      warnings.push('Redis has no maxmemory; set one (and REDIS_MEMORY_LIMIT if needed) so pushes are shed with 503 before the host runs out of memory');
    }
    const [, aof] = (await redis.config('GET', 'appendonly')) as [string, string];
    const [, save] = (await redis.config('GET', 'save')) as [string, string];
    if (aof !== 'yes' && !save) {
      warnings.push('Redis has no persistence (appendonly no, save ""); a Redis restart loses every queued push: set appendonly yes');
    } else if (aof !== 'yes') {
      warnings.push('Redis persists by RDB snapshots only (appendonly no); a crash loses the pushes acknowledged since the last snapshot: set appendonly yes');
    } else {
      const [, fsync] = (await redis.config('GET', 'appendfsync')) as [string, string];
      if (fsync !== 'always') {
        warnings.push(`Redis appendfsync is ${fsync}; a host crash can lose the last second of acknowledged pushes: set appendfsync always`);
      }
    }
  } catch (err) {
    // Managed Redis often disables CONFIG; say so rather than guess.
    warnings.push(`could not read Redis settings (${(err as Error).message}); make sure of noeviction and AOF persistence`);
  }
  return warnings;
}
