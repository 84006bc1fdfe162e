/**
 * The push feed: sends the fleet's gps and can records to a receiver, as the service would.
 *
 * Delivery (address, method, headers and retries are "not shown" in the spec; these are our choices):
 * - bulk: `POST {url}/push/bulk` with `{"bulkData":[...]}` mixing vehicles and both types;
 * - realtime: `POST {url}/push/realtime` with one bare record;
 * - `Authorization: Bearer <token>` when a token is given.
 * A delivery is retried on 408, 429, 5xx, a network error or a timeout, with exponential backoff and
 * Retry-After honoured, up to `maxAttempts`; any other 4xx is final. The result says exactly which
 * records the receiver acknowledged (2xx and not listed in `rejected`), so a test can reconcile them
 * against the store.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sign } from '../../telemetry/signature.js';
import { envelopeSchema, pushAcceptedSchema } from '../../telemetry/envelope.js';
import { backoffDelay } from '../../retry/backoff.js';
import { errorText, isRetryableStatus, isTimeoutError, parseRetryAfter, sleep } from '../client/retry.js';
import { canRecordData } from './can.js';
import { Fleet } from './fleet.js';
import { spoil } from './invalid.js';
import { Rng, hash32 } from './prng.js';
import type { PushRecord, RecordType } from './records.js';

export type FeedMode = 'bulk' | 'realtime' | 'mixed';

export interface DeliveryInfo {
  kind: 'bulk' | 'realtime';
  /** The receiver's deliveryId, when it sent one. */
  deliveryId: string | undefined;
  attempts: number;
}

export interface FeedOptions {
  /** Receiver base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * A Standard Webhooks secret (`whsec_…`): every delivery is signed (`webhook-id`, the same on every
   * attempt of a delivery, so the receiver can tell a retry; `webhook-timestamp`; `webhook-signature`).
   */
  signingSecret?: string;
  /** Default 'bulk'. */
  mode?: FeedMode;
  /** Records per second; default 100. Infinity: as fast as the receiver takes them. */
  rate?: number;
  /** Records per bulk delivery; default 100. */
  bulkSize?: number;
  /** Stop after this many records. If neither count nor durationMs is given: 1000. */
  count?: number;
  /** Stop producing after this long (deliveries under way are still finished). */
  durationMs?: number;
  /** Deliveries in flight at once; default 4. */
  concurrency?: number;
  /** Per attempt; default 10 000. */
  timeoutMs?: number;
  /** Attempts per delivery, the first included; default 5. */
  maxAttempts?: number;
  /** First backoff; doubles per attempt up to maxBackoffMs. Defaults 200 and 5 000. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Longest Retry-After honoured; default 30 000. */
  maxRetryAfterMs?: number;
  /** Seed of the fleet (when `fleet` is not given) and of the feed's choices; default 1. */
  seed?: number;
  /** Fleet size when `fleet` is not given; default 10. */
  vehicles?: number;
  fleet?: Fleet;
  /** In mixed mode, the share of deliveries that are realtime; default 0.5. */
  realtimeRatio?: number;
  /** Share of records replaced by invalid ones (quarantine demos); default 0. */
  invalidRatio?: number;
  /** Clock for record times; default Date.now. */
  now?: () => number;
  fetch?: typeof fetch;
  /** Stops the feed; deliveries cut short are reported as failed. */
  signal?: AbortSignal;
  /** Called after each delivery with the records it got acknowledged. */
  onAck?: (records: PushRecord[], delivery: DeliveryInfo) => void;
  /** Called after each delivery, retried or not, with the result so far (for progress; do not keep it). */
  onProgress?: (soFar: Readonly<FeedResult>) => void;
}

export interface RejectedRecord {
  record: unknown;
  /** True for a record made invalid on purpose (invalidRatio): its rejection is the expected outcome. */
  injected: boolean;
  error: string;
  /** HTTP status of the answer that rejected it. */
  status: number;
}

export interface FailedRecord {
  record: unknown;
  /** What the last attempt got: "HTTP 503", "timeout", "network error: …", "aborted". */
  error: string;
}

export interface FeedResult {
  /** Records handed to a delivery (valid and injected invalid ones). */
  sent: number;
  deliveries: number;
  /** Valid records the receiver acknowledged: 2xx and not listed as rejected. */
  acknowledged: PushRecord[];
  /** Injected invalid records the receiver nevertheless acknowledged (should be empty). */
  acknowledgedInvalid: unknown[];
  /** Records the receiver refused: listed in `rejected`, or the whole delivery answered a final 4xx. */
  rejected: RejectedRecord[];
  /** Records of deliveries that never got an answer that settles them (attempts exhausted, aborted). */
  failed: FailedRecord[];
  /** Records answered 2xx with a body that is not the documented acknowledgement. */
  unconfirmed: unknown[];
  failedDeliveries: number;
  /** Attempts beyond the first, over all deliveries. */
  retries: number;
  injectedInvalid: number;
  durationMs: number;
}

const failureSchema = envelopeSchema.pick({ err: true, msg: true });

interface Item {
  record: unknown;
  valid: PushRecord | undefined;
}

type Attempt =
  | { kind: 'answer'; status: number; body: unknown; retryAfterMs: number | undefined }
  | { kind: 'error'; error: string };

export class PushFeed {
  private readonly opts: Required<
    Pick<
      FeedOptions,
      | 'mode'
      | 'rate'
      | 'bulkSize'
      | 'concurrency'
      | 'timeoutMs'
      | 'maxAttempts'
      | 'backoffMs'
      | 'maxBackoffMs'
      | 'maxRetryAfterMs'
      | 'realtimeRatio'
      | 'invalidRatio'
    >
  >;
  private readonly fleet: Fleet;
  private readonly rng: Rng;
  private readonly now: () => number;
  private readonly fetchFn: typeof fetch;
  /** Last time used per vehicle and type: a vehicle never sends two records of a type in one ms. */
  private readonly lastTime = new Map<string, number>();
  private readonly result: FeedResult = {
    sent: 0,
    deliveries: 0,
    acknowledged: [],
    acknowledgedInvalid: [],
    rejected: [],
    failed: [],
    unconfirmed: [],
    failedDeliveries: 0,
    retries: 0,
    injectedInvalid: 0,
    durationMs: 0,
  };

  constructor(private readonly config: FeedOptions) {
    const seed = config.seed ?? 1;
    this.opts = {
      mode: config.mode ?? 'bulk',
      rate: config.rate ?? 100,
      bulkSize: config.bulkSize ?? 100,
      concurrency: config.concurrency ?? 4,
      timeoutMs: config.timeoutMs ?? 10_000,
      maxAttempts: config.maxAttempts ?? 5,
      backoffMs: config.backoffMs ?? 200,
      maxBackoffMs: config.maxBackoffMs ?? 5_000,
      maxRetryAfterMs: config.maxRetryAfterMs ?? 30_000,
      realtimeRatio: config.realtimeRatio ?? 0.5,
      invalidRatio: config.invalidRatio ?? 0,
    };
    checkPositive('rate', this.opts.rate);
    checkPositiveInteger('bulkSize', this.opts.bulkSize);
    checkPositiveInteger('concurrency', this.opts.concurrency);
    checkPositiveInteger('maxAttempts', this.opts.maxAttempts);
    if (config.count !== undefined && (!Number.isInteger(config.count) || config.count < 0)) {
      throw new RangeError('count must be a non-negative integer');
    }
    if (config.durationMs !== undefined) checkPositive('durationMs', config.durationMs);
    if (this.opts.invalidRatio < 0 || this.opts.invalidRatio > 1) throw new RangeError('invalidRatio must be in [0, 1]');
    this.fleet = config.fleet ?? Fleet.create({ seed, size: config.vehicles ?? 10 });
    this.rng = Rng.seeded(hash32(seed, 0xfeed));
    this.now = config.now ?? Date.now;
    this.fetchFn = config.fetch ?? ((input, init) => fetch(input, init));
  }

  private ran = false;

  /** Runs the feed to its end. Once per PushFeed: the result accumulates. */
  async run(): Promise<FeedResult> {
    if (this.ran) throw new Error('a PushFeed runs once; create another');
    this.ran = true;
    const { mode, rate, bulkSize, concurrency } = this.opts;
    const count = this.config.count ?? (this.config.durationMs === undefined ? 1000 : Infinity);
    const started = Date.now();
    const signal = this.config.signal;
    const inFlight = new Set<Promise<void>>();
    let produced = 0;
    const timeIsUp = (): boolean =>
      this.config.durationMs !== undefined && Date.now() - started >= this.config.durationMs;

    while (produced < count && !signal?.aborted && !timeIsUp()) {
      const realtime = mode === 'realtime' || (mode === 'mixed' && this.rng.chance(this.opts.realtimeRatio));
      const n = realtime ? 1 : Math.min(bulkSize, count - produced);
      // A sender collects records as they arise and sends a bulk when it is full: the delivery is due
      // when its last record is.
      if (Number.isFinite(rate)) {
        const wait = started + ((produced + n) * 1000) / rate - Date.now();
        if (wait > 0 && !(await pause(wait, signal))) break;
        if (timeIsUp()) break;
      }
      while (inFlight.size >= concurrency) await Promise.race(inFlight);
      const items = Array.from({ length: n }, () => this.nextItem());
      produced += n;
      const delivery = this.deliver(items, realtime ? 'realtime' : 'bulk').finally(() => inFlight.delete(delivery));
      inFlight.add(delivery);
    }
    await Promise.all(inFlight);
    this.result.durationMs = Date.now() - started;
    return this.result;
  }

  // -------------------------------------------------------------------------------------------

  private nextItem(): Item {
    let v = this.rng.pick(this.fleet.vehicles);
    // A silent vehicle sends nothing; another one sends in its place, so the rate holds.
    for (let tries = 0; !this.fleet.reportsAt(v, this.now()) && tries < 100; tries++) v = this.rng.pick(this.fleet.vehicles);
    const type: RecordType = this.rng.chance(0.5) ? 'gps' : 'can';
    const key = `${v.index}:${type}`;
    const time = Math.max(Math.floor(this.now()), (this.lastTime.get(key) ?? -1) + 1);
    this.lastTime.set(key, time);
    const record: PushRecord =
      type === 'gps'
        ? { vehicleno: v.vehicleno, type, data: this.fleet.gpsAt(v, time) }
        : { vehicleno: v.vehicleno, type, data: canRecordData(this.fleet.canStateAt(v, time), this.rng) };
    if (this.opts.invalidRatio > 0 && this.rng.chance(this.opts.invalidRatio)) {
      this.result.injectedInvalid += 1;
      return { record: spoil(record, this.rng), valid: undefined };
    }
    return { record, valid: record };
  }

  private async deliver(items: Item[], kind: 'bulk' | 'realtime'): Promise<void> {
    this.result.sent += items.length;
    this.result.deliveries += 1;
    const url = `${this.config.url.replace(/\/+$/, '')}/push/${kind}`;
    const body = JSON.stringify(kind === 'bulk' ? { bulkData: items.map((i) => i.record) } : items[0]?.record);
    let lastError = 'not attempted';
    const webhookId = `msg_${randomUUID()}`;
    for (let attempt = 1; attempt <= this.opts.maxAttempts; attempt++) {
      if (attempt > 1) this.result.retries += 1;
      const outcome = await this.attempt(url, body, webhookId);
      let retryAfterMs: number | undefined;
      if (outcome.kind === 'answer') {
        const { status } = outcome;
        if (status >= 200 && status < 300) {
          this.settle(items, outcome.body, status, { kind, deliveryId: undefined, attempts: attempt });
          this.config.onProgress?.(this.result);
          return;
        }
        if (!isRetryableStatus(status)) {
          const error = describeFailure(outcome.body, status);
          for (const item of items) this.result.rejected.push({ record: item.record, injected: !item.valid, error, status });
          this.config.onProgress?.(this.result);
          return;
        }
        lastError = `HTTP ${status}`;
        retryAfterMs = outcome.retryAfterMs;
      } else {
        lastError = outcome.error;
      }
      if (this.config.signal?.aborted) break;
      if (attempt < this.opts.maxAttempts) {
        const backoff = backoffDelay({ baseMs: this.opts.backoffMs, maxMs: this.opts.maxBackoffMs }, attempt, this.rng.next);
        const wait = retryAfterMs === undefined ? backoff : Math.min(Math.max(backoff, retryAfterMs), this.opts.maxRetryAfterMs);
        if (!(await pause(wait, this.config.signal))) break;
      }
    }
    if (this.config.signal?.aborted) lastError = 'aborted';
    this.result.failedDeliveries += 1;
    for (const item of items) this.result.failed.push({ record: item.record, error: lastError });
    this.config.onProgress?.(this.result);
  }

  private async attempt(url: string, body: string, webhookId: string): Promise<Attempt> {
    const signals = [AbortSignal.timeout(this.opts.timeoutMs)];
    if (this.config.signal) signals.push(this.config.signal);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.token) headers.authorization = `Bearer ${this.config.token}`;
    if (this.config.signingSecret) {
      const ts = Math.floor(Date.now() / 1000);
      Object.assign(headers, { 'webhook-id': webhookId, 'webhook-timestamp': String(ts), 'webhook-signature': sign(this.config.signingSecret, webhookId, ts, body) });
    }
    try {
      const res = await this.fetchFn(url, { method: 'POST', headers, body, signal: AbortSignal.any(signals) });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { kind: 'answer', status: res.status, body: parsed, retryAfterMs: parseRetryAfter(res.headers.get('retry-after')) };
    } catch (e) {
      return { kind: 'error', error: isTimeoutError(e) ? 'timeout' : `network error: ${errorText(e)}` };
    }
  }

  /** A 2xx answer: everything acknowledged except what `rejected` lists. */
  private settle(items: Item[], body: unknown, status: number, info: DeliveryInfo): void {
    const ack = pushAcceptedSchema.safeParse(body);
    if (!ack.success) {
      for (const item of items) this.result.unconfirmed.push(item.record);
      return;
    }
    const refused = new Map(ack.data.data.rejected.map((r) => [r.index, r.error]));
    const acknowledged: PushRecord[] = [];
    items.forEach((item, index) => {
      const error = refused.get(index);
      if (error !== undefined) this.result.rejected.push({ record: item.record, injected: !item.valid, error, status });
      else if (item.valid) acknowledged.push(item.valid);
      else this.result.acknowledgedInvalid.push(item.record);
    });
    this.result.acknowledged.push(...acknowledged);
    this.config.onAck?.(acknowledged, { ...info, deliveryId: ack.data.data.deliveryId });
  }
}

/** Run a feed to the end. */
export function runFeed(opts: FeedOptions): Promise<FeedResult> {
  return new PushFeed(opts).run();
}

function describeFailure(body: unknown, status: number): string {
  const f = failureSchema.safeParse(body);
  return f.success ? `${f.data.err}: ${f.data.msg}` : `HTTP ${status}`;
}

/** Sleep; false when the signal cut it short. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    await sleep(ms, signal);
    return true;
  } catch {
    return false;
  }
}

function checkPositive(name: string, v: number): void {
  if (!(v > 0)) throw new RangeError(`${name} must be positive`);
}

function checkPositiveInteger(name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer`);
}
