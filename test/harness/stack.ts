import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { startInflux, type LocalInflux } from '../../src/devstack/influxd.js';
import { spawnService, type ServiceProcess } from './proc.js';
import { countPoints, reconcile, type SentRecord } from './reconcile.js';
import { waitUntil } from './wait.js';
import { randomBytes } from 'node:crypto';

const uniqueName = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex')}`;

export const TOKEN = 'fault-test-token-0123456789abcdef';

/** A private Redis (AOF), InfluxDB and the service as separate processes, for one fault scenario. */
export interface Stack {
  redis: LocalRedis;
  influx: LocalInflux;
  db: string;
  env: Record<string, string>;
  procs: ServiceProcess[];
  spawn(mode: 'receiver' | 'worker' | 'all', extra?: Record<string, string>): Promise<ServiceProcess>;
  /** Waits until `n` points are in InfluxDB, then reconciles the acknowledged records. */
  settle(acked: readonly SentRecord[], timeoutMs?: number): Promise<Awaited<ReturnType<typeof reconcile>>>;
  stop(): Promise<void>;
}

export async function startStack(env: Record<string, string> = {}): Promise<Stack> {
  const [redis, influx] = await Promise.all([startRedis({ appendonly: true }), startInflux()]);
  const db = uniqueName('fault');
  await influx.createDatabase(db);
  const base: Record<string, string> = {
    REDIS_URL: redis.url,
    INFLUX_URL: influx.url,
    INFLUX_TOKEN: influx.token,
    INFLUX_BUCKET: db,
    QUEUE_NAME: uniqueName('q'),
    PUSH_TOKENS: TOKEN,
    LOG_LEVEL: 'warn',
    RETRY_BASE_DELAY: '200ms',
    RETRY_MAX_DELAY: '1s',
    WORKER_LOCK_DURATION: '2s',
    ...env,
  };
  const procs: ServiceProcess[] = [];
  return {
    redis,
    influx,
    db,
    env: base,
    procs,
    async spawn(mode, extra = {}) {
      const p = await spawnService(mode, { ...base, ...extra });
      procs.push(p);
      return p;
    },
    async settle(acked, timeoutMs = 60_000) {
      const want = new Set(acked.map((r) => `${r.type}|${r.vehicleno}|${String(r.data.time)}`)).size;
      await waitUntil(async () => (await countPoints(influx.rawUrl, db)) >= want, timeoutMs, `${want} points in InfluxDB`).catch(() => {});
      return reconcile(influx.rawUrl, db, acked);
    },
    async stop() {
      await Promise.all(procs.map((p) => p.stop('SIGKILL')));
      await Promise.all([influx.stop(), redis.stop()]);
    },
  };
}
