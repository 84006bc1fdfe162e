import type { RedisClient } from './connect.js';
import type { Logger } from '../log/index.js';
import { LogThrottle } from '../log/throttle.js';

/**
 * Whether the Redis user may run what BullMQ needs. A refused command that is not a lost connection
 * (NOPERM on a managed Redis's restricted ACL user, for one) makes BullMQ's worker retry its fetch at
 * once, in a loop that starves the event loop and runs out of memory within a minute. So workers are
 * started only once this passes; until then the process says why, in its health and once a minute in
 * its log, and asks again.
 */
export async function accessProblem(redis: RedisClient, skipVersionCheck: boolean): Promise<string | undefined> {
  try {
    // BullMQ runs its queues as Lua scripts, and (unless told not to) checks the server's version with INFO.
    await redis.eval('return 1', 0);
    if (!skipVersionCheck) await redis.info('server');
    return undefined;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (/NOPERM/.test(message) && /info/i.test(message)) {
      return `the Redis user may not run INFO, which BullMQ's version check needs: grant it +info, or set REDIS_SKIP_VERSION_CHECK=true (${message})`;
    }
    return /NOPERM|NOSCRIPT|ERR unknown command/.test(message) ? `the Redis user may not run what the queue needs: ${message}` : undefined;
  }
}

/** Resolves once `accessProblem` finds none, asking every `intervalMs`, logging the problem at most once a minute. */
export function untilAccessible(redis: RedisClient, skipVersionCheck: boolean, log: Logger, intervalMs = 5_000): { ready: Promise<void>; problem(): string | undefined; stop(): void } {
  let problem: string | undefined = 'not checked yet';
  const throttle = new LogThrottle();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let checking = false;
  let onReady: (() => void) | undefined;
  const ready = new Promise<void>((resolve) => {
    const check = async () => {
      if (stopped || checking || problem === undefined) return;
      checking = true;
      clearTimeout(timer);
      try {
        if (redis.status === 'ready') {
          problem = await accessProblem(redis, skipVersionCheck);
          if (problem === undefined) {
            if (onReady) redis.off('ready', onReady);
            return resolve();
          }
          const now = problem;
          throttle.pass(() => log.error({ problem: now }, 'Redis refuses what the queue needs; workers wait'));
        }
        timer = setTimeout(() => void check(), intervalMs);
        timer.unref();
      } finally {
        checking = false;
      }
    };
    // At once when the connection is (or becomes) ready; then every interval while a problem stands.
    onReady = () => void check();
    redis.on('ready', onReady);
    void check();
  });
  return {
    ready,
    problem: () => problem,
    stop() {
      stopped = true;
      clearTimeout(timer);
      if (onReady) redis.off('ready', onReady);
    },
  };
}
