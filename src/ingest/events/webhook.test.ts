import { deriveOptions } from './index.js';
import { DEFAULT_DERIVE_OPTIONS } from './derive.js';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigError, loadConfig, redactedConfig } from '../../config/index.js';
import { createLogger } from '../../log/index.js';
import { Metrics } from '../../metrics/index.js';
import type { RetryPolicy } from '../queue/retry.js';
import { jobIdOf, sampleWebhookBacklog, startWebhookDelivery, webhookIdOf, WebhookQueue, webhookRetryPolicy, type WebhookPayload, type RunningDelivery } from './webhook.js';

/**
 * The event webhook on the run's private Redis, posting to a real HTTP receiver on 127.0.0.1 that
 * verifies every delivery with the `standardwebhooks` package, as a customer's receiver would.
 */

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const log = createLogger('silent');
/** Short backoffs: a test's retries take milliseconds, not the production seconds. */
const FAST: RetryPolicy = { baseMs: 40, maxMs: 150, spanMs: 60_000 };

interface Delivery {
  id: string;
  timestamp: string;
  contentType: string | undefined;
  body: string;
  verified: boolean;
  status: number;
}

type Answer = (id: string) => number | 'hang';

/** A webhook receiver: verifies, records, answers what `answer` says (or never, `hang`). */
class Receiver {
  readonly deliveries: Delivery[] = [];
  answer: Answer = () => 200;
  private readonly server: Server;
  private readonly verifier = new Webhook(SECRET);
  url = '';

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/telematics`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : '');
    let verified = true;
    try {
      this.verifier.verify(body, { 'webhook-id': header('webhook-id'), 'webhook-timestamp': header('webhook-timestamp'), 'webhook-signature': header('webhook-signature') });
    } catch {
      verified = false;
    }
    const answer = this.answer(header('webhook-id'));
    this.deliveries.push({ id: header('webhook-id'), timestamp: header('webhook-timestamp'), contentType: req.headers['content-type'], body, verified, status: answer === 'hang' ? 0 : answer });
    if (answer === 'hang') return;
    res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'down');
  }

  /** 2xx-answered deliveries, by webhook-id. */
  delivered(): Map<string, Delivery[]> {
    const by = new Map<string, Delivery[]>();
    for (const d of this.deliveries) if (d.status >= 200 && d.status < 300) by.set(d.id, [...(by.get(d.id) ?? []), d]);
    return by;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let redis: Redis;
const receiver = new Receiver();
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  // A worker's connection: BullMQ's workers need commands retried, never failed, while Redis is away.
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  await new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  await receiver.start();
});
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
  receiver.answer = () => 200;
  receiver.deliveries.length = 0;
});
afterAll(async () => {
  await receiver.stop();
  redis.disconnect();
});

/** A private queue with its outbox and metrics; `deliver()` starts a worker posting to `url`. */
function setup(opts: { maxBacklog?: number; retry?: RetryPolicy; url?: string; timeoutMs?: number } = {}) {
  const queue = `webhook_${randomBytes(4).toString('hex')}`;
  const metrics = new Metrics({ version: 'test', mode: 'all' });
  const retry = opts.retry ?? FAST;
  const outbox = new WebhookQueue(redis, { queue, retry, maxBacklog: opts.maxBacklog ?? 1_000, metrics, log });
  let worker: RunningDelivery | undefined;
  cleanups.push(async () => {
    await worker?.close();
    await outbox.queue.obliterate({ force: true });
    await outbox.close();
  });
  const deliver = () => {
    worker = startWebhookDelivery(redis, { queue, url: opts.url ?? receiver.url, secret: SECRET, timeoutMs: opts.timeoutMs ?? 2_000, retry, concurrency: 4, log, metrics });
  };
  const count = async (outcome: string) => (await metrics.webhookDeliveries.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  return { queue, outbox, metrics, deliver, count };
}

let seq = 0;
function event(id = `evt_${(seq++).toString(36)}_${randomBytes(3).toString('hex')}`, type = 'vehicle.ignition_on'): WebhookPayload {
  return { id, type, timestamp: new Date(1_763_700_000_000 + seq * 1_000).toISOString(), data: { vehicleno: 'KA01AB1234', value: 1, seq } };
}

async function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('event webhook', () => {
  it('delivers every event once, signed so standardwebhooks verifies it, webhook-id the event id', async () => {
    const { outbox, deliver, count } = setup();
    // Ids BullMQ would refuse as job ids (an integer, a `:`) and one a header cannot carry as is.
    const events = [...Array.from({ length: 20 }, () => event()), event('42'), event('KA01AB1234:ignition_on:1763700000000'), event('मह12 ignition')];
    expect(await outbox.add(events)).toBe(0);
    deliver();
    // The receiver's 200 comes before the worker records the job done: wait for both.
    await waitUntil(async () => receiver.delivered().size >= events.length && (await count('delivered')) === events.length, 10_000, 'every event delivered');
    const got = receiver.delivered();
    for (const e of events) {
      const [d, ...more] = got.get(webhookIdOf(e.id)) ?? [];
      expect(d, e.id).toBeDefined();
      expect(more).toHaveLength(0);
      expect(d!.verified).toBe(true);
      expect(d!.contentType).toBe('application/json');
      expect(Math.abs(Number(d!.timestamp) - Date.now() / 1_000)).toBeLessThan(60);
      expect(JSON.parse(d!.body)).toEqual({ type: e.type, timestamp: e.timestamp, data: e.data });
    }
    expect(webhookIdOf('KA01AB1234:ignition_on:1763700000000')).toBe('KA01AB1234:ignition_on:1763700000000');
    expect(webhookIdOf('मह12 ignition')).toMatch(/^%[\x21-\x7e]+$/);
    expect(await count('delivered')).toBe(events.length);
    expect(await count('retry')).toBe(0);
  });

  it('delivers an event added twice (while queued, and again after delivery) once', async () => {
    const { outbox, deliver, count } = setup();
    const [a, b] = [event(), event()];
    expect(await outbox.add([a!, a!, b!])).toBe(0);
    expect(await outbox.add([a!])).toBe(0);
    expect(await outbox.backlog()).toBe(2);
    deliver();
    await waitUntil(async () => (await count('delivered')) === 2, 10_000, 'both delivered');
    // At least once upstream: the dispatcher may hand the same event over again after it was delivered.
    expect(await outbox.add([a!, b!])).toBe(0);
    await new Promise((r) => setTimeout(r, 400));
    expect(receiver.delivered().get(a!.id)).toHaveLength(1);
    expect(receiver.delivered().get(b!.id)).toHaveLength(1);
    expect(await count('delivered')).toBe(2);
  });

  it('loses nothing while the receiver is down (503, no answer), retrying; the backlog rises, then falls', async () => {
    const { outbox, metrics, deliver, count } = setup({ timeoutMs: 300 });
    const events = Array.from({ length: 12 }, () => event());
    const hangOnce = new Set([events[0]!.id]);
    const downUntil = Date.now() + 1_500;
    receiver.answer = (id) => (hangOnce.delete(id) ? 'hang' : Date.now() < downUntil ? 503 : 200);
    const seen: number[] = [];
    const sampler = sampleWebhookBacklog(metrics, outbox, 50, () => true);
    cleanups.push(async () => sampler.stop());
    const gauge = async () => (await metrics.webhookBacklog.get()).values[0]?.value ?? 0;
    deliver();
    expect(await outbox.add(events)).toBe(0);
    await waitUntil(async () => (seen.push(await gauge()), (await count('delivered')) === events.length), 15_000, 'every event delivered after the outage');
    await waitUntil(async () => (await gauge()) === 0, 2_000, 'the backlog gauge back at 0');
    expect(Math.max(...seen)).toBeGreaterThan(0);
    expect(receiver.delivered().size).toBe(events.length);
    expect(receiver.deliveries.filter((d) => d.status === 503).length).toBeGreaterThan(0);
    expect(receiver.deliveries.some((d) => d.id === events[0]!.id && d.status === 0)).toBe(true);
    for (const e of events) expect(receiver.delivered().get(e.id)?.every((d) => d.verified)).toBe(true);
    expect(await count('delivered')).toBe(events.length);
    expect(await count('retry')).toBe(receiver.deliveries.filter((d) => d.status !== 200).length);
    expect(await count('failed')).toBe(0);
  });

  it('drops and counts events over the backlog bound, and delivers those it took', async () => {
    const { outbox, metrics, deliver, count } = setup({ maxBacklog: 5 });
    const events = Array.from({ length: 8 }, () => event());
    expect(await outbox.add(events.slice(0, 3))).toBe(0);
    expect(await outbox.add(events.slice(3, 7))).toBe(2);
    expect(await outbox.add(events.slice(7))).toBe(1);
    expect(await outbox.backlog()).toBe(5);
    expect((await metrics.webhookDropped.get()).values[0]?.value).toBe(3);
    deliver();
    await waitUntil(async () => (await count('delivered')) === 5, 10_000, 'the five taken delivered');
    expect([...receiver.delivered().keys()].filter((id) => events.some((e) => e.id === id)).sort()).toEqual([events[0]!, events[1]!, events[2]!, events[3]!, events[4]!].map((e) => e.id).sort());
    // Room again once delivered.
    expect(await outbox.add([event()])).toBe(0);
  });

  it('fails a delivery for good once the retry span is over, keeping it as a failed job', async () => {
    // A port nothing listens on: every attempt is a network error.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { outbox, deliver, count } = setup({ url: `http://127.0.0.1:${port}/`, retry: { baseMs: 40, maxMs: 100, spanMs: 600 } });
    const e = event();
    await outbox.add([e]);
    deliver();
    await waitUntil(async () => (await count('failed')) === 1, 10_000, 'the delivery failed for good');
    expect(await count('retry')).toBeGreaterThan(0);
    expect(await count('delivered')).toBe(0);
    const failed = await outbox.queue.getFailed();
    expect(failed.map((j) => j.data.id)).toEqual([e.id]);
    expect(failed[0]!.failedReason).toMatch(/ECONNREFUSED|request failed/);
    // The dead letter still deduplicates: handing the event over again queues nothing.
    await outbox.add([e]);
    expect(await outbox.backlog()).toBe(0);
  });

  it('gives every event a job id BullMQ takes, one to one', () => {
    const ids = ['evt_1', '42', '0', 'a:b', 'a%3Ab', '%a', 'मह12', 'x y'];
    const jobIds = ids.map(jobIdOf);
    expect(new Set(jobIds).size).toBe(ids.length);
    for (const j of jobIds) {
      expect(j).not.toContain(':');
      expect(`${parseInt(j, 10)}`).not.toBe(j);
    }
    expect(jobIdOf('evt_1')).toBe('evt_1');
    expect(new Set(ids.map(webhookIdOf)).size).toBe(ids.length);
  });
});

describe('event settings', () => {
  const base = { PUSH_AUTH: 'none' };

  it('has the documented defaults', () => {
    const cfg = loadConfig(base);
    expect(cfg).toMatchObject({
      EVENTS: 'on',
      EVENTS_WINDOW: 30_000,
      EVENTS_MAX_SKEW: 600_000,
      TRIP_MIN_DURATION: 300_000,
      TRIP_MIN_DISTANCE: 500,
      EVENTS_MAX_GAP: 3_600_000,
      TRIP_MAX_JUMP_SPEED: 300,
      GPS_MIN_ERROR: 30,
      MOTION_SPEED: 3,
      CHARGING_CURRENT_SIGN: 'positive',
      CHARGING_MIN_CURRENT: 0.5,
      CHARGING_MIN_DURATION: 60_000,
      EVENTS_WEBHOOK_TIMEOUT: 10_000,
      EVENTS_WEBHOOK_RETRY_SPAN: 86_400_000,
      EVENTS_WEBHOOK_MAX_BACKLOG: 100_000,
    });
    expect(cfg.EVENTS_WEBHOOK_URL).toBeUndefined();
    // The derivation's own defaults are the settings' (derived from them: the values above are what an operator reads in docs/operating.md).
    expect(deriveOptions(cfg)).toEqual(DEFAULT_DERIVE_OPTIONS);
    expect(webhookRetryPolicy(cfg)).toEqual({ spanMs: 86_400_000, baseMs: cfg.RETRY_BASE_DELAY, maxMs: cfg.RETRY_MAX_DELAY });
  });

  it('needs a valid secret with the URL, and never shows it', () => {
    expect(() => loadConfig({ ...base, EVENTS_WEBHOOK_URL: 'https://example.com/hooks' })).toThrow(/EVENTS_WEBHOOK_SECRET: required when EVENTS_WEBHOOK_URL is set/);
    expect(() => loadConfig({ ...base, EVENTS_WEBHOOK_URL: 'https://example.com/hooks', EVENTS_WEBHOOK_SECRET: 'whsec_c2hvcnQ=' })).toThrow(/EVENTS_WEBHOOK_SECRET: a signing secret must hold at least 16 bytes/);
    const cfg = loadConfig({ ...base, EVENTS_WEBHOOK_URL: 'https://example.com/hooks', EVENTS_WEBHOOK_SECRET: SECRET });
    expect(cfg.EVENTS_WEBHOOK_SECRET).toBe(SECRET);
    expect(JSON.stringify(redactedConfig(cfg))).not.toContain(SECRET.slice(6));
  });

  it('names every bad value', () => {
    try {
      loadConfig({ ...base, EVENTS: 'yes', EVENTS_WINDOW: '30', TRIP_MIN_DISTANCE: '-1', CHARGING_CURRENT_SIGN: 'up', CHARGING_MIN_CURRENT: 'lots', EVENTS_WEBHOOK_URL: 'ftp://example.com', EVENTS_WEBHOOK_SECRET: SECRET, EVENTS_WEBHOOK_MAX_BACKLOG: '0', EVENTS_WEBHOOK_TIMEOUT: '0' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems.map((p) => p.slice(0, p.indexOf(':')))).toEqual([
        'EVENTS',
        'EVENTS_WINDOW',
        'TRIP_MIN_DISTANCE',
        'CHARGING_CURRENT_SIGN',
        'CHARGING_MIN_CURRENT',
        'EVENTS_WEBHOOK_URL',
        'EVENTS_WEBHOOK_MAX_BACKLOG',
      ]);
    }
    expect(() => loadConfig({ ...base, EVENTS_WEBHOOK_TIMEOUT: '0' })).toThrow(/EVENTS_WEBHOOK_TIMEOUT: must be above 0/);
    expect(loadConfig({ ...base, TRIP_MIN_DISTANCE: '250.5', CHARGING_CURRENT_SIGN: 'negative', EVENTS: 'off' })).toMatchObject({ TRIP_MIN_DISTANCE: 250.5, CHARGING_CURRENT_SIGN: 'negative', EVENTS: 'off' });
  });
});
