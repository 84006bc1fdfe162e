import type { TestProject } from 'vitest/node';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { startInflux, type LocalInflux } from '../../src/devstack/influxd.js';
import { ensureDebianPackages } from '../../src/devstack/process.js';

/**
 * One private redis-server (unless REDIS_URL is set) and one private influxd with its
 * /api/v2/write front for the whole run; each test file isolates itself by queue and database name.
 */
let redis: LocalRedis | undefined;
let influx: LocalInflux | undefined;

export async function setup(project: TestProject): Promise<void> {
  ensureDebianPackages(
    [
      { bin: 'redis-server', pkg: 'redis-server' },
      { bin: 'redis-sentinel', pkg: 'redis-sentinel' },
      { bin: 'influxd', pkg: 'influxdb' },
      { bin: 'prometheus', pkg: 'prometheus' },
      { bin: 'openssl', pkg: 'openssl' },
      { bin: 'kubectl', pkg: 'kubectl' },
      { bin: 'docker-compose', pkg: 'docker-compose' },
      { bin: 'chromium', pkg: 'chromium' },
    ],
    (m) => console.log(m),
  );
  const external = process.env.REDIS_URL;
  if (!external) redis = await startRedis();
  influx = await startInflux();
  project.provide('redisUrl', external ?? redis!.url);
  project.provide('influxUrl', influx.url);
  project.provide('influxRawUrl', influx.rawUrl);
  project.provide('influxToken', influx.token);
}

export async function teardown(): Promise<void> {
  await influx?.stop();
  await redis?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    influxUrl: string;
    influxRawUrl: string;
    influxToken: string;
  }
}
