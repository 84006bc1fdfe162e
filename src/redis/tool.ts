/**
 * What the operator tools (`telematics-deadletter`, `telematics-fleet`) share: the service's
 * configuration read as a tool's (REDIS_URL required, no default Redis), its Redis reached or one
 * clear line, and their errors mapped to exit codes.
 */
import { EXIT, type ErrorClassifier } from '../cli/exit.js';
import type { CliIO } from '../cli/io.js';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { connectRedis, redisTarget, type RedisClient } from './connect.js';

/** The first line of a tool's settings help; each tool adds what it reads besides. */
export const TOOL_SETTINGS = 'Settings: REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES (required: the Redis the service uses),';

/** The Redis the environment names, reached (or an error naming it); disconnected when `use` settles. */
export async function withServiceRedis<T>(io: CliIO, use: (redis: RedisClient, cfg: Config) => Promise<T>): Promise<T> {
  const cfg = loadConfig(io.env, 'tool');
  const redis = connectRedis(cfg, 'tool');
  let lastError = '';
  redis.on('error', (err: Error) => (lastError = err.message));
  try {
    await redis.ping().catch((err: Error) => {
      throw new Error(`cannot reach ${redisTarget(cfg)}: ${lastError || err.message}`);
    });
    return await use(redis, cfg);
  } finally {
    redis.disconnect();
  }
}

/** Settings the operator must fix are usage errors; Redis trouble is one line, never a stack. */
export const classifyToolError: ErrorClassifier = (e) => {
  if (e instanceof ConfigError) return { code: EXIT.usage, message: e.problems.join('; ') };
  if (e instanceof Error) return { code: EXIT.network, message: `Redis: ${e.message}` };
  return undefined;
};
