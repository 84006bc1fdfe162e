import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import { LogThrottle } from '../../log/throttle.js';
import type { Metrics } from '../../metrics/index.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import type { RedisClient } from '../../redis/connect.js';
import { sign } from '../../telemetry/signature.js';
import { attemptsForSpan, BACKOFF_TYPE, retryDelay, type RetryPolicy } from '../queue/retry.js';
import { failedForGood, guarded, type RunningWorker } from '../worker/guard.js';

/**
 * The vehicle events' webhook: each event is POSTed to EVENTS_WEBHOOK_URL as a Standard Webhooks
 * delivery (standardwebhooks.com), through a BullMQ queue of one job per event. The queue is what
 * makes delivery durable: a receiver down for hours gets every event once it answers again, retried
 * with the service's one backoff formula for EVENTS_WEBHOOK_RETRY_SPAN. Delivery is at least once
 * (a worker killed mid-request posts again); `webhook-id` is the event's own id, stable across
 * attempts and re-adds, so a receiver drops repeats by it.
 */

/** An event as delivered: the Standard Webhooks payload `{type, timestamp, data}`; `id` is its `webhook-id`. */
export interface WebhookPayload {
  /** Stable for the event however often it is handed over (webhookIdOf: as is when printable ASCII). */
  id: string;
  type: string;
  /** ISO 8601: when the event happened (record time), not when it is delivered. */
  timestamp: string;
  data: Record<string, unknown>;
}

/** The BullMQ job name of a delivery. */
export const WEBHOOK_JOB = 'event';

/** Delivered jobs are kept this long (and at most the backlog bound), so re-adding a delivered event within it is a no-op. */
export const KEEP_DELIVERED_MS = 3_600_000;

/** The retry budget of deliveries: EVENTS_WEBHOOK_RETRY_SPAN, with the service's backoff between attempts. */
export function webhookRetryPolicy(cfg: Pick<Config, 'EVENTS_WEBHOOK_RETRY_SPAN' | 'RETRY_BASE_DELAY' | 'RETRY_MAX_DELAY'>): RetryPolicy {
  return { spanMs: cfg.EVENTS_WEBHOOK_RETRY_SPAN, baseMs: cfg.RETRY_BASE_DELAY, maxMs: cfg.RETRY_MAX_DELAY };
}

/** Percent-encodes the UTF-8 bytes of `id` outside `keep` (a one-character test, never true of `%`). */
function escapeId(id: string, keep: RegExp): string {
  let out = '';
  for (const ch of id) out += keep.test(ch) ? ch : [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  return out;
}

/** Printable ASCII but `%`: what a header value carries as is. */
const HEADER_SAFE = /^[\x21-\x24\x26-\x7e]$/;
/** As HEADER_SAFE, without the `:` BullMQ reads as a separator. */
const JOB_ID_SAFE = /^[\x21-\x24\x26-\x39\x3b-\x7e]$/;

/**
 * `id` as is when every character passes `keep`, else `%` and its escaped form. Injective: a plain id
 * holds no `%`, and an escaped one escapes its `%`; so two events never share an id, and one event always
 * maps to the same, which is the deduplication.
 */
function encodedId(id: string, keep: RegExp, plainOk = true): string {
  const plain = plainOk && [...id].every((ch) => keep.test(ch));
  return plain ? id : `%${escapeId(id, keep)}`;
}

/**
 * The `webhook-id` of an event: its id, when it is printable ASCII (a plate in another script, or with a
 * space, is escaped, since a header value is bytes).
 */
export function webhookIdOf(eventId: string): string {
  return encodedId(eventId, HEADER_SAFE);
}

/** The BullMQ job id of an event: its id, escaped where BullMQ refuses it (a `:`, an integer). */
export function jobIdOf(eventId: string): string {
  return encodedId(eventId, JOB_ID_SAFE, `${parseInt(eventId, 10)}` !== eventId);
}

/** What every event from the derivation has; a bad one is a bug upstream, refused before it is queued. */
function checkEvent(e: WebhookPayload): void {
  if (typeof e.id !== 'string' || e.id.length === 0) throw new TypeError(`event id ${JSON.stringify(e.id)}: expected a non-empty string`);
  if (typeof e.type !== 'string' || e.type.length === 0) throw new TypeError(`event ${e.id}: type must be a non-empty string`);
  if (typeof e.timestamp !== 'string' || Number.isNaN(Date.parse(e.timestamp))) throw new TypeError(`event ${e.id}: timestamp must be an ISO 8601 time`);
  if (typeof e.data !== 'object' || e.data === null || Array.isArray(e.data)) throw new TypeError(`event ${e.id}: data must be an object`);
}

/** The body posted for an event: exactly the Standard Webhooks payload, the same bytes on every attempt. */
export function webhookBody(e: WebhookPayload): string {
  return JSON.stringify({ type: e.type, timestamp: e.timestamp, data: e.data });
}

export interface WebhookQueueOptions {
  /** The deliveries' queue: RedisKeys.eventsWebhookQueue. */
  queue: string;
  retry: RetryPolicy;
  /** EVENTS_WEBHOOK_MAX_BACKLOG: deliveries waiting or retrying beyond which new events are dropped. */
  maxBacklog: number;
  /** Deliveries that failed for good kept for an operator (the oldest go beyond); the backlog bound when unset. */
  keepFailed?: number;
  /** How long a delivered event's job is kept, deduplicating re-adds; KEEP_DELIVERED_MS when unset. */
  keepDeliveredMs?: number;
  metrics?: Metrics | undefined;
  log?: Logger | undefined;
  skipVersionCheck?: boolean;
}

/**
 * The producer side: queues one delivery per event. Adding is idempotent by event id while its job
 * exists (waiting, retrying, delivered within the hour, or failed), since the outbox upstream hands
 * events over at least once. Over the backlog bound events are dropped and counted, not queued: a
 * receiver down for days must not fill Redis, which holds the push queues too. Their points are in
 * InfluxDB either way.
 */
export class WebhookQueue {
  readonly queue: Queue<WebhookPayload>;
  private readonly dropThrottle = new LogThrottle();

  constructor(
    redis: RedisClient,
    private readonly opts: WebhookQueueOptions,
  ) {
    this.queue = new Queue<WebhookPayload>(opts.queue, {
      connection: redis,
      skipVersionCheck: opts.skipVersionCheck ?? false,
      defaultJobOptions: {
        attempts: attemptsForSpan(opts.retry),
        backoff: { type: BACKOFF_TYPE },
        // Bounded by age and count: the dedup window, without letting a busy hour grow Redis without limit.
        removeOnComplete: { age: Math.ceil((opts.keepDeliveredMs ?? KEEP_DELIVERED_MS) / 1_000), count: opts.maxBacklog },
        // Failed for good: the dead letters an operator reads (and retries in the queue UI), bounded.
        removeOnFail: { count: opts.keepFailed ?? opts.maxBacklog },
      },
    });
    // Errors surface on the awaited calls; without a listener the emitter would throw.
    this.queue.on('error', () => {});
  }

  /** Deliveries not yet made: waiting, and delayed (backing off before a retry). */
  async backlog(): Promise<number> {
    const c = await this.queue.getJobCounts('waiting', 'prioritized', 'delayed');
    return (c.waiting ?? 0) + (c.prioritized ?? 0) + (c.delayed ?? 0);
  }

  /**
   * Queues a delivery per event, in order, as far as the backlog bound leaves room; returns how many
   * were dropped. The bound is read, then written: concurrent adders may pass it by their batches.
   */
  async add(events: readonly WebhookPayload[]): Promise<number> {
    if (events.length === 0) return 0;
    for (const e of events) checkEvent(e);
    const room = Math.max(0, this.opts.maxBacklog - (await this.backlog()));
    const taken = events.slice(0, room);
    if (taken.length > 0) {
      await this.queue.addBulk(taken.map((e) => ({ name: WEBHOOK_JOB, data: { id: e.id, type: e.type, timestamp: e.timestamp, data: e.data }, opts: { jobId: jobIdOf(e.id) } })));
    }
    const dropped = events.length - taken.length;
    if (dropped > 0) {
      this.opts.metrics?.webhookDropped.inc(dropped);
      this.dropThrottle.pass((times) =>
        this.opts.log?.warn({ dropped, times, bound: this.opts.maxBacklog, first: events[taken.length]?.id }, 'event webhook backlog at EVENTS_WEBHOOK_MAX_BACKLOG; events dropped from the webhook (they are in InfluxDB)'),
      );
    }
    return dropped;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

export interface WebhookDeliveryOptions {
  /** The deliveries' queue: RedisKeys.eventsWebhookQueue. */
  queue: string;
  /** EVENTS_WEBHOOK_URL. */
  url: string;
  /** EVENTS_WEBHOOK_SECRET (`whsec_…`). */
  secret: string;
  /** EVENTS_WEBHOOK_TIMEOUT: an attempt with no answer within it is retried. */
  timeoutMs: number;
  /** The same policy the outbox queued with. */
  retry: RetryPolicy;
  /** Requests out at once per process; 8 when unset. */
  concurrency?: number;
  log: Logger;
  metrics?: Metrics | undefined;
  skipVersionCheck?: boolean;
}

/** The deliveries' worker: why it cannot fetch now, and how to stop it. */
export type RunningDelivery = RunningWorker;

/** What an attempt that was not a 2xx says, for the job's failed reason and the log. */
function problemOf(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : undefined;
  return `request failed: ${err instanceof Error ? err.message : String(err)}${detail ? ` (${detail})` : ''}`;
}

/** One attempt at a delivery: resolves on a 2xx, throws anything else, for good once the retry span is over. */
function deliver(opts: WebhookDeliveryOptions) {
  return async (job: Job<WebhookPayload>): Promise<{ status: number }> => {
    const e = job.data;
    const id = webhookIdOf(e.id);
    const body = webhookBody(e);
    // Signed per attempt: a receiver refuses a webhook-timestamp too far from its clock (a replay).
    const timestamp = Math.floor(Date.now() / 1_000);
    let problem: string;
    try {
      const res = await fetch(opts.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'telematics-ingest',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': sign(opts.secret, id, timestamp, body),
        },
        body,
        // A redirect is not a delivery: following it would post the event somewhere not configured.
        redirect: 'manual',
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      // The answer's body says nothing we act on; cancelling it frees the connection.
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return { status: res.status };
      problem = `the receiver answered ${res.status}`;
    } catch (err) {
      problem = problemOf(err, opts.timeoutMs);
    }
    if (Date.now() - job.timestamp >= opts.retry.spanMs) {
      throw new UnrecoverableError(`retry span of ${opts.retry.spanMs} ms over; last attempt: ${problem}`);
    }
    throw new Error(problem);
  };
}

/**
 * The consumer side: a BullMQ worker posting each delivery to the webhook URL. A 2xx is delivered;
 * any other answer, a network error or no answer within the timeout is retried with capped
 * exponential backoff until the retry span is over, then the job stays in the failed set.
 */
export function startWebhookDelivery(redis: RedisClient, opts: WebhookDeliveryOptions): RunningDelivery {
  const worker = new Worker<WebhookPayload, { status: number }>(opts.queue, deliver(opts), {
    connection: redis,
    skipVersionCheck: opts.skipVersionCheck ?? false,
    concurrency: opts.concurrency ?? 8,
    // Only a killed process stalls a delivery (a deploy); it is posted again, not failed.
    maxStalledCount: 20,
    settings: { backoffStrategy: (attemptsMade) => retryDelay(opts.retry, attemptsMade) },
  });
  const m = opts.metrics;
  // A receiver down fails every delivery on every attempt: say so once a minute, with the count.
  const retryThrottle = new LogThrottle();
  const failThrottle = new LogThrottle();
  worker.on('completed', () => m?.webhookDeliveries.inc({ outcome: 'delivered' }));
  worker.on('failed', (job, err) => {
    if (!job) return;
    const final = failedForGood(job);
    m?.webhookDeliveries.inc({ outcome: final ? 'failed' : 'retry' });
    const fields = { eventId: job.data.id, type: job.data.type, attemptsMade: job.attemptsMade, err: err.message };
    if (final) failThrottle.pass((times) => opts.log.error({ ...fields, times }, 'event webhook delivery failed for good (retry span over); kept as a failed job'));
    else retryThrottle.pass((times) => opts.log.warn({ ...fields, times }, 'event webhook delivery failed; will retry'));
  });
  return guarded(worker, opts.log);
}

/** `telematics_events_webhook_backlog`, sampled like the queue gauges (every METRICS_SAMPLE_INTERVAL). */
export function sampleWebhookBacklog(metrics: Metrics, outbox: Pick<WebhookQueue, 'backlog'>, intervalMs: number, ready: () => boolean): Sampler {
  return sampleEvery(
    intervalMs,
    async () => {
      metrics.webhookBacklog.set(await outbox.backlog());
    },
    { ready, onError: () => metrics.sampleErrors.inc() },
  );
}
