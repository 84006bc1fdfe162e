import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config/index.js';
import { createLogger } from '../../src/log/index.js';
import { startService, type RunningService, type ServiceOptions } from '../../src/ingest/service/index.js';
import { connectRedis } from '../../src/redis/connect.js';
import { Quarantine } from '../../src/ingest/queue/quarantine.js';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { influxQuery, type Row } from './influx.js';
import { waitUntil } from './wait.js';

export { waitUntil };

export const TEST_TOKEN = 'test-push-token-0123456789';

export interface TestService extends RunningService {
  cfg: Config;
  /** The service's quarantine, read through a connection of the test's own. */
  quarantine: Quarantine;
  /** InfluxQL against the real influxd, in this service's database. */
  query(q: string): Promise<Row[]>;
  /** Polls until `q` returns at least `n` rows (or fails after `timeoutMs`). */
  waitForRows(q: string, n: number, timeoutMs?: number): Promise<Row[]>;
  post(path: string, body: unknown, init?: RequestInit & { token?: string | null }): Promise<Response>;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

/**
 * Settings for a service of the test run: the run's Redis and InfluxDB, a queue and database of its
 * own (the database named `db`, created by the caller), `TEST_TOKEN`, and `env` on top.
 */
export function testEnv(db: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: inject('redisUrl'),
    QUEUE_NAME: uniqueName('q'),
    INFLUX_URL: inject('influxUrl'),
    INFLUX_TOKEN: inject('influxToken'),
    INFLUX_BUCKET: db,
    PUSH_TOKENS: TEST_TOKEN,
    ADMIN_PORT: '0',
    ...env,
  };
}

/**
 * The real service, in-process, on the run's Redis and InfluxDB, with its own queue and database;
 * `release` stands it for an older release (the job formats it reads and writes).
 */
export async function startTestService(env: Record<string, string> = {}, opts: { createDatabase?: boolean } & ServiceOptions = {}): Promise<TestService> {
  const cfg = loadConfig(
    testEnv(uniqueName('tele'), {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      RETRY_BASE_DELAY: '200ms',
      RETRY_MAX_DELAY: '2s',
      ...env,
    }),
  );
  if (opts.createDatabase !== false) await influxQuery(cfg.INFLUX_BUCKET, `CREATE DATABASE "${cfg.INFLUX_BUCKET}"`);
  const svc = await startService(cfg, createLogger(cfg.LOG_LEVEL), opts.release ? { release: opts.release } : {});
  const query = (q: string) => influxQuery(cfg.INFLUX_BUCKET, q);
  const redis = connectRedis(cfg, 'tool');
  redis.on('error', () => {});
  await waitUntil(async () => (await fetch(`${svc.url}/readyz`)).status === 200, 15_000, 'service ready');
  return {
    ...svc,
    cfg,
    quarantine: new Quarantine(redis, redisKeys(cfg.QUEUE_NAME)),
    async close() {
      await svc.close();
      redis.disconnect();
    },
    query,
    async waitForRows(q, n, timeoutMs = 15_000) {
      // InfluxDB 1.x can show a point whose fields are not all visible yet (its cache takes a
      // point's fields one by one), so a result counts only once two reads 50 ms apart agree.
      const deadline = Date.now() + timeoutMs;
      let rows: Row[] = [];
      let last = '';
      while (Date.now() < deadline) {
        rows = await query(q);
        const now = JSON.stringify(rows);
        if (rows.length >= n && now === last) return rows;
        last = rows.length >= n ? now : '';
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`expected ${n} settled rows for ${q}, got ${rows.length} after ${timeoutMs} ms`);
    },
    post(path, body, init = {}) {
      const { token = TEST_TOKEN, headers, ...rest } = init;
      const h = new Headers(headers);
      if (!h.has('content-type')) h.set('content-type', 'application/json');
      if (token !== null) h.set('authorization', `Bearer ${token}`);
      const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
      return fetch(`${svc.url}${path}`, { method: 'POST', headers: h, body: payload as BodyInit, ...rest });
    },
  };
}
