import type { Hono } from 'hono';
import type { RedisClient } from '../../redis/connect.js';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import { LoadShedding } from '../queue/shedding.js';
import type { Backlog } from '../queue/backlog.js';
import { THIS_RELEASE, type Reads } from '../queue/formats.js';
import { pushRoutes } from '../receive/app.js';
import { keysOf } from '../queue/keys.js';
import { TYPES } from '../../telemetry/fields.js';
import { admissionOptions, formatWatchFor, producerFor, quarantineFor, receiverOptions } from './components.js';

export interface RunningReceiver {
  routes: Hono;
  close(): Promise<void>;
}

/**
 * The push routes over a producer, the quarantine and load shedding, on the receiver's Redis connection.
 * `own`: the job formats this release writes (tests stand for an older release with less).
 */
export function startReceiver(cfg: Config, redis: RedisClient, log: Logger, metrics: Metrics, backlog: Backlog, own: Reads = THIS_RELEASE): RunningReceiver {
  const admission = new LoadShedding(backlog, redis, admissionOptions(cfg));
  // Jobs are written in a format every live worker reads, as the workers announce it.
  const formats = formatWatchFor(cfg, redis, log, metrics, own);
  const format = () => formats.current;
  // Jobs are deflated while a backlog builds, when their size in Redis matters.
  const producer = producerFor(cfg, redis, metrics, () => admission.backlogged(), format);
  redis.on('ready', () => {
    admission.start();
    formats.start();
  });
  // At once when already connected: the first pushes should find the workers' formats read.
  if (redis.status === 'ready') formats.start();
  const options = receiverOptions(cfg, redis, log);
  // The field names admitted beyond the schema, in step with every other receiver's.
  const names = options.plausibility?.opts.extraFields;
  const keys = keysOf(cfg);
  void names?.start(redis, keys.extraFieldNames, [...new Set(TYPES.map((t) => t.spec.measurement))]);
  const routes = pushRoutes(producer, quarantineFor(cfg, redis), { ...options, admission, metrics, format });
  return {
    routes,
    async close() {
      names?.stop();
      admission.stop();
      formats.stop();
      await producer.close();
    },
  };
}
