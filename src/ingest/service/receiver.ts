import type { Hono } from 'hono';
import type { RedisClient } from '../../redis/connect.js';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import { Admission } from '../queue/admission.js';
import type { Backlog } from '../queue/backlog.js';
import { pushRoutes } from '../receive/app.js';
import { admissionOptions, producerFor, quarantineFor, receiverOptions } from './components.js';

export interface RunningReceiver {
  routes: Hono;
  close(): Promise<void>;
}

/** The push routes over a producer, the quarantine and load shedding, on the receiver's Redis connection. */
export function startReceiver(cfg: Config, redis: RedisClient, log: Logger, metrics: Metrics, backlog: Backlog): RunningReceiver {
  const admission = new Admission(backlog, redis, admissionOptions(cfg));
  // Jobs are deflated while a backlog builds, when their size in Redis matters.
  const producer = producerFor(cfg, redis, metrics, () => admission.backlogged());
  redis.on('ready', () => admission.start());
  const routes = pushRoutes(producer, quarantineFor(cfg, redis, log), { ...receiverOptions(cfg, redis, log), admission, metrics });
  return {
    routes,
    async close() {
      admission.stop();
      await producer.close();
    },
  };
}
