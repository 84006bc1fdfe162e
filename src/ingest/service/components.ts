/**
 * Each component's options, derived from the one configuration: the composition root and the
 * tools (the dead-letter CLI) build components from these, never from settings read by hand.
 */
import { ExtraFieldNames } from '../plausibility/fieldNames.js';
import type { RedisClient } from '../../redis/connect.js';
import { quarantineShareOf, type Config } from '../../config/index.js';
import { parseAdminCredentials, type AdminCredential } from '../../config/adminCredentials.js';
import { Quarantine } from '../queue/quarantine.js';
import { JobSeal } from '../queue/seal.js';
import { VehicleAdmission } from '../fleet/admission.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { LoadSheddingOptions } from '../queue/shedding.js';
import { keysOf } from '../queue/keys.js';
import { PartitionedProducer, Producer, type ProducerOptions } from '../queue/producer.js';
import type { RetryPolicy } from '../queue/retry.js';
import type { ReceiverOptions } from '../receive/app.js';
import { RedisIdempotency } from '../receive/idempotency.js';
import { RateLimiter } from '../receive/rateLimit.js';
import type { HttpLimits, HttpTls } from './http.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { CoalescingSink } from '../write/coalesce.js';
import { InfluxSink } from '../write/influx.js';
import { IsolatingSink } from '../write/isolate.js';
import type { PointSink } from '../write/sink.js';
import { Plausibility } from '../plausibility/judge.js';
import { rangeRules } from '../plausibility/rules.js';
import { FormatWatch, THIS_RELEASE, type JobFormat, type Reads } from '../queue/formats.js';

/** The push queues this process's workers serve: WORKER_PARTITIONS, or all. */
export function servedPartitions(cfg: Config): string[] {
  const all = keysOf(cfg).partitions;
  return cfg.WORKER_PARTITIONS.length === 0 ? [...all] : [...new Set(cfg.WORKER_PARTITIONS)].map((i) => all[i]!);
}

/** Retry-After of a 429 or 503, in whole seconds. */
const retryAfterSeconds = (cfg: Config): number => Math.max(1, Math.ceil(cfg.RETRY_AFTER / 1_000));

export function retryPolicy(cfg: Config): RetryPolicy {
  return { spanMs: cfg.RETRY_SPAN, baseMs: cfg.RETRY_BASE_DELAY, maxMs: cfg.RETRY_MAX_DELAY };
}

export function producerOptions(cfg: Config, queueName: string): ProducerOptions {
  return { queueName, maxRecordsPerJob: cfg.JOB_MAX_RECORDS, flatten: flattenOptions(cfg), timeoutMs: cfg.ENQUEUE_TIMEOUT, lingerMs: cfg.ENQUEUE_LINGER, retry: retryPolicy(cfg), skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK, waitReplicas: cfg.REDIS_WAIT_REPLICAS };
}

/**
 * One producer per partition, as one; `backlogged` says whether jobs wait (JOB_DEFLATE=backlog; else a
 * backlog is assumed); `format`, the job format every live worker reads (this release's newest when unset).
 */
export function producerFor(cfg: Config, redis: RedisClient, metrics?: Metrics, backlogged?: () => boolean, format?: () => JobFormat, seal: JobSeal = jobSealFor(cfg, redis)): PartitionedProducer {
  const deflate = cfg.JOB_DEFLATE === 'always' ? () => true : cfg.JOB_DEFLATE === 'never' ? () => false : (backlogged ?? (() => true));
  return new PartitionedProducer(keysOf(cfg).partitions.map((q) => new Producer(redis, { ...producerOptions(cfg, q), metrics, deflate, seal, ...(format ? { format } : {}) })));
}

/** Which new vehicles a receiver admits (MAX_VEHICLES); undefined without a bound. */
export function vehicleAdmissionFor(cfg: Config, redis: RedisClient): VehicleAdmission | undefined {
  if (cfg.MAX_VEHICLES === 0) return undefined;
  const keys = keysOf(cfg);
  return new VehicleAdmission(redis, keys.partitions.map((_, i) => keys.fleet(i)), keys.listedVehicles, { maxVehicles: cfg.MAX_VEHICLES });
}

/** The deployment's job seal (queue/seal.ts), its key read as soon as Redis answers. */
export function jobSealFor(cfg: Config, redis: RedisClient): JobSeal {
  const seal = new JobSeal(redis, keysOf(cfg).jobSeal);
  // At once, and again whenever Redis comes back (a connection that was not ready yet refuses commands).
  const load = () => void seal.load().catch(() => {});
  redis.on('ready', load);
  if (redis.status === 'ready') load();
  return seal;
}

/** What the live workers read, as they announce it, and the format a receiver writes for them; on the gauges with `metrics`. */
export function formatWatchFor(cfg: Config, redis: RedisClient, log?: Logger, metrics?: Metrics, own: Reads = THIS_RELEASE): FormatWatch {
  const show = (f: JobFormat, live: readonly Reads[]) => {
    if (!metrics) return;
    metrics.jobFormat.reset();
    metrics.jobFormat.set({ payload: f.v, dictionary: f.dictionary }, 1);
    const by = new Map<string, number>();
    for (const r of live) {
      const k = `${r.formats.join(',')}|${r.dictionary}`;
      by.set(k, (by.get(k) ?? 0) + 1);
    }
    metrics.queueReaders.reset();
    for (const [k, n] of by) {
      const [payloads, dictionary] = k.split('|') as [string, string];
      metrics.queueReaders.set({ payloads, dictionary }, n);
    }
  };
  const watch = new FormatWatch(redis, keysOf(cfg).readers, own, { ...(log ? { log } : {}), onRead: (c) => show(c.format, c.live) });
  show(watch.current, []);
  return watch;
}

export function admissionOptions(cfg: Config): LoadSheddingOptions {
  return { maxQueuedJobs: cfg.QUEUE_MAX_JOBS, redisMemoryLimit: cfg.REDIS_MEMORY_LIMIT, retryAfterSeconds: retryAfterSeconds(cfg) };
}

/** The receiver's options; its Redis holds the idempotency keys and the rate-limit buckets. */
export function receiverOptions(cfg: Config, redis: RedisClient, log: Logger): ReceiverOptions {
  const keys = keysOf(cfg);
  return {
    senders: cfg.PUSH_AUTH === 'none' ? undefined : cfg.SENDERS,
    signatureToleranceMs: cfg.SIGNATURE_TOLERANCE,
    idempotency: cfg.IDEMPOTENCY_TTL > 0 ? new RedisIdempotency(redis, keys.idempotency, cfg.IDEMPOTENCY_TTL) : undefined,
    rateLimiter: new RateLimiter(redis, keys.rateLimit, { pushes: cfg.RATE_LIMIT_PUSHES, records: cfg.RATE_LIMIT_RECORDS }),
    bodyLimit: cfg.BODY_LIMIT,
    maxRecords: cfg.MAX_RECORDS_PER_PUSH,
    quarantineRawLimit: cfg.QUARANTINE_RAW_LIMIT,
    plausibility: plausibilityFor(cfg),
    vehicles: vehicleAdmissionFor(cfg, redis),
    flatten: flattenOptions(cfg),
    retryAfterSeconds: retryAfterSeconds(cfg),
    log,
  };
}

/** The quarantine stream, QUARANTINE_MAX_BYTES shared equally by the senders and the service's own stages. */
export function quarantineFor(cfg: Config, redis: RedisClient): Quarantine {
  return new Quarantine(redis, keysOf(cfg), quarantineShareOf(cfg.QUARANTINE_MAX_BYTES, cfg.SENDERS.length));
}

export function httpLimits(cfg: Config): HttpLimits {
  return {
    requestTimeoutMs: cfg.HTTP_REQUEST_TIMEOUT,
    headersTimeoutMs: cfg.HTTP_HEADERS_TIMEOUT,
    keepAliveTimeoutMs: cfg.HTTP_KEEPALIVE_TIMEOUT,
    maxConnections: cfg.HTTP_MAX_CONNECTIONS,
    bodyLimit: cfg.BODY_LIMIT,
  };
}

export function httpTls(cfg: Config): HttpTls | undefined {
  if (!cfg.TLS_CERT || !cfg.TLS_KEY) return undefined;
  return { cert: cfg.TLS_CERT, key: cfg.TLS_KEY, ...(cfg.TLS_CLIENT_CA ? { clientCa: cfg.TLS_CLIENT_CA } : {}) };
}

/** The admin listener's named credentials (src/config/adminCredentials.ts), or undefined when ADMIN_AUTH=none exposes its reads on purpose. */
export function adminCredentials(cfg: Config): AdminCredential[] | undefined {
  if (cfg.ADMIN_AUTH === 'none' || !cfg.ADMIN_CREDENTIALS) return undefined;
  return parseAdminCredentials(cfg.ADMIN_CREDENTIALS);
}

export function flattenOptions(cfg: Config): FlattenOptions {
  return { temperatureSentinels: cfg.CAN_TEMP_SENTINELS, packHealth: cfg.PACK_HEALTH === 'on' };
}

/**
 * The store as workers and the fuel sync write to it: concurrent jobs' points merged into requests
 * of WRITE_BATCH_LINES, a refused request isolated to its refused lines, which reach the job that wrote them.
 */
export function pointSink(cfg: Config, metrics?: Metrics): PointSink {
  const influx = new InfluxSink({ url: cfg.INFLUX_URL, token: cfg.INFLUX_TOKEN, org: cfg.INFLUX_ORG, bucket: cfg.INFLUX_BUCKET, timeoutMs: cfg.INFLUX_TIMEOUT, gzip: cfg.INFLUX_CONTENT_ENCODING === 'gzip', metrics, api: cfg.INFLUX_API });
  return new CoalescingSink(new IsolatingSink(influx, cfg.WRITE_CONCURRENCY), { maxLines: cfg.WRITE_BATCH_LINES, maxBytes: cfg.WRITE_MAX_BYTES, maxInFlight: cfg.WRITE_CONCURRENCY, lingerMs: cfg.WRITE_LINGER });
}

/** The plausibility rules with the operator's settings (TIME_MAX_AHEAD, TIME_MAX_AGE, PLAUSIBLE_RANGES, CAN_TEMP_SENTINELS). */
export function plausibilityFor(cfg: Config): Plausibility {
  const { rules, zeroPosition } = rangeRules(cfg.PLAUSIBLE_RANGES, cfg.CAN_TEMP_SENTINELS);
  return new Plausibility({ maxAheadMs: cfg.TIME_MAX_AHEAD, maxAgeMs: cfg.TIME_MAX_AGE, rules, zeroPosition, extraFields: new ExtraFieldNames(cfg.EXTRA_FIELDS_MAX) });
}

/** The vehicles' last-seen state, a set of keys beside each partition's queue. */
