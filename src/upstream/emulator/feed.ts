/**
 * The push feed: sends the fleet's gps and can records to a receiver, as the service would.
 *
 * Delivery (address, method, headers and retries are "not shown" in the spec; these are our choices):
 * - bulk: `POST {url}/push/bulk` with `{"bulkData":[...]}` mixing vehicles and both types;
 * - realtime: `POST {url}/push/realtime` with one bare record;
 * - `Authorization: Bearer <token>` when a token is given.
 * A delivery is retried on 408, 429, 5xx, a network error or a timeout, with exponential backoff and
 * Retry-After honoured, up to `maxAttempts`; any other 4xx is final.
 *
 * The result counts what the receiver answered (acknowledged: 2xx and not listed in `rejected`) and
 * keeps a bounded list of distinct errors, so a feed's memory is bounded by its fleet and the
 * deliveries in flight however long it runs. A caller that needs the records gets them per delivery
 * (`onAck`, `onReject`, `onFail`), or all of them in the result with `keep: true` (short runs: a test
 * that reconciles them against the store).
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
  /**
   * Keep every record in the result's `records` (acknowledged, rejected, failed, …). Memory then grows
   * with the run, about 1 KB a record: for short runs whose records a test reconciles, never for a
   * long one (count with the callbacks instead).
   */
  keep?: boolean;
  /** Called after each delivery answered 2xx with the documented acknowledgement, with the records it got acknowledged. */
  onAck?: (records: PushRecord[], delivery: DeliveryInfo) => void;
  /** Called after each delivery in which the receiver refused records (listed in `rejected`, or a final 4xx), with those. */
  onReject?: (records: RejectedRecord[], delivery: DeliveryInfo) => void;
  /** Called after each delivery that got no answer settling it (attempts exhausted, aborted), with its records. */
  onFail?: (records: FailedRecord[], delivery: DeliveryInfo) => void;
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

/** One distinct error text of rejected or failed records, and how many records got it. */
export interface FeedErrorCount {
  error: string;
  outcome: 'rejected' | 'failed';
  count: number;
}

/** Every record of a run by outcome: only with `keep: true`. */
export interface FeedRecords {
  acknowledged: PushRecord[];
  acknowledgedInvalid: unknown[];
  rejected: RejectedRecord[];
  failed: FailedRecord[];
  unconfirmed: unknown[];
}

/** At most this many distinct error texts are listed in a result; the rest are counted in `otherErrors`. */
export const MAX_DISTINCT_ERRORS = 20;
/** An error text longer than this is cut, so that the list's size is bounded too. */
const MAX_ERROR_LENGTH = 300;

/** What a run did, in counts of records unless said otherwise. */
export interface FeedResult {
  /** Records handed to a delivery (valid and injected invalid ones). */
  sent: number;
  deliveries: number;
  /** Valid records the receiver acknowledged: 2xx and not listed as rejected. */
  acknowledged: number;
  /** Injected invalid records the receiver nevertheless acknowledged (should be 0). */
  acknowledgedInvalid: number;
  /** Records the receiver refused: listed in `rejected`, or the whole delivery answered a final 4xx. */
  rejected: number;
  /** Of `rejected`, the injected invalid records (`invalidRatio`): their rejection is the expected outcome. */
  rejectedInjected: number;
  /** Records of deliveries that never got an answer that settles them (attempts exhausted, aborted). */
  failed: number;
  /** Records answered 2xx with a body that is not the documented acknowledgement. */
  unconfirmed: number;
  failedDeliveries: number;
  /** Attempts beyond the first, over all deliveries. */
  retries: number;
  injectedInvalid: number;
  durationMs: number;
  /**
   * The distinct error texts of rejected and failed records in order of first appearance, at most
   * MAX_DISTINCT_ERRORS, each with its count of records.
   */
  errors: FeedErrorCount[];
  /** Rejected and failed records whose error text is not in `errors` (it was full). */
  otherErrors: number;
  /** The records themselves, only with `keep: true`. */
  records?: FeedRecords;
}

/** The result of a feed run with `keep: true`. */
export type KeptFeedResult = FeedResult & { records: FeedRecords };

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
    acknowledged: 0,
    acknowledgedInvalid: 0,
    rejected: 0,
    rejectedInjected: 0,
    failed: 0,
    unconfirmed: 0,
    failedDeliveries: 0,
    retries: 0,
    injectedInvalid: 0,
    durationMs: 0,
    errors: [],
    otherErrors: 0,
  };
  /** `result.errors` by outcome and text. */
  private readonly errorIndex = new Map<string, FeedErrorCount>();
  private readonly kept: FeedRecords | undefined;

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
    if (config.keep) {
      this.kept = { acknowledged: [], acknowledgedInvalid: [], rejected: [], failed: [], unconfirmed: [] };
      this.result.records = this.kept;
    }
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
    // At most `concurrency` deliveries exist at once, their records included: the loop makes a
    // delivery's records only once a slot is free, however long the others wait on a silent receiver.
    const inFlight = new Set<Promise<void>>();
    let slotFreed: (() => void) | undefined;
    let thrown: { error: unknown } | undefined;
    let produced = 0;
    const timeIsUp = (): boolean =>
      this.config.durationMs !== undefined && Date.now() - started >= this.config.durationMs;

    while (produced < count && !signal?.aborted && !timeIsUp() && !thrown) {
      const realtime = mode === 'realtime' || (mode === 'mixed' && this.rng.chance(this.opts.realtimeRatio));
      const n = realtime ? 1 : Math.min(bulkSize, count - produced);
      // A sender collects records as they arise and sends a bulk when it is full: the delivery is due
      // when its last record is.
      if (Number.isFinite(rate)) {
        const wait = started + ((produced + n) * 1000) / rate - Date.now();
        if (wait > 0 && !(await pause(wait, signal))) break;
        if (timeIsUp()) break;
      }
      // One waiter, woken by whichever delivery ends (no Promise.race over long-lived promises).
      while (inFlight.size >= concurrency) await new Promise<void>((resolve) => (slotFreed = resolve));
      if (thrown) break;
      const items = Array.from({ length: n }, () => this.nextItem());
      produced += n;
      const delivery: Promise<void> = this.deliver(items, realtime ? 'realtime' : 'bulk')
        .catch((error: unknown) => void (thrown ??= { error }))
        .finally(() => {
          inFlight.delete(delivery);
          const wake = slotFreed;
          slotFreed = undefined;
          wake?.();
        });
      inFlight.add(delivery);
    }
    await Promise.all(inFlight);
    this.result.durationMs = Date.now() - started;
    // A callback that threw ends the run with its error.
    if (thrown) throw thrown.error;
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
    let attempts = 0;
    for (let attempt = 1; attempt <= this.opts.maxAttempts; attempt++) {
      attempts = attempt;
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
          this.reject(
            items.map((item) => ({ item, error })),
            status,
            { kind, deliveryId: undefined, attempts: attempt },
          );
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
    this.result.failed += items.length;
    this.countError('failed', lastError, items.length);
    if (this.kept || this.config.onFail) {
      const failed = items.map((item) => ({ record: item.record, error: lastError }));
      this.kept?.failed.push(...failed);
      this.config.onFail?.(failed, { kind, deliveryId: undefined, attempts });
    }
    this.config.onProgress?.(this.result);
  }

  private async attempt(url: string, body: string, webhookId: string): Promise<Attempt> {
    // One controller an attempt, for its timeout and the run's signal, both undone when it ends: no
    // timer outlives the attempt, and no listener stays on a long-lived signal.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DOMException('attempt timed out', 'TimeoutError')), this.opts.timeoutMs);
    const outer = this.config.signal;
    const onAbort = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.token) headers.authorization = `Bearer ${this.config.token}`;
    if (this.config.signingSecret) {
      const ts = Math.floor(Date.now() / 1000);
      Object.assign(headers, { 'webhook-id': webhookId, 'webhook-timestamp': String(ts), 'webhook-signature': sign(this.config.signingSecret, webhookId, ts, body) });
    }
    try {
      const res = await this.fetchFn(url, { method: 'POST', headers, body, signal: controller.signal });
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
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    }
  }

  /** A 2xx answer: everything acknowledged except what `rejected` lists. */
  private settle(items: Item[], body: unknown, status: number, info: DeliveryInfo): void {
    const ack = pushAcceptedSchema.safeParse(body);
    if (!ack.success) {
      this.result.unconfirmed += items.length;
      this.kept?.unconfirmed.push(...items.map((i) => i.record));
      return;
    }
    const delivery = { ...info, deliveryId: ack.data.data.deliveryId };
    const refused = new Map(ack.data.data.rejected.map((r) => [r.index, r.error]));
    const acknowledged: PushRecord[] = [];
    const rejected: Array<{ item: Item; error: string }> = [];
    items.forEach((item, index) => {
      const error = refused.get(index);
      if (error !== undefined) rejected.push({ item, error });
      else if (item.valid) acknowledged.push(item.valid);
      else {
        this.result.acknowledgedInvalid += 1;
        this.kept?.acknowledgedInvalid.push(item.record);
      }
    });
    if (rejected.length > 0) this.reject(rejected, status, delivery);
    this.result.acknowledged += acknowledged.length;
    this.kept?.acknowledged.push(...acknowledged);
    this.config.onAck?.(acknowledged, delivery);
  }

  /** Records the receiver refused: counted, and handed to `onReject` and `keep` when asked. */
  private reject(refused: ReadonlyArray<{ item: Item; error: string }>, status: number, info: DeliveryInfo): void {
    for (const { item, error } of refused) {
      this.result.rejected += 1;
      if (!item.valid) this.result.rejectedInjected += 1;
      this.countError('rejected', error, 1);
    }
    if (!this.kept && !this.config.onReject) return;
    const records = refused.map(({ item, error }) => ({ record: item.record, injected: !item.valid, error, status }));
    this.kept?.rejected.push(...records);
    this.config.onReject?.(records, info);
  }

  private countError(outcome: FeedErrorCount['outcome'], text: string, records: number): void {
    const error = text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
    const key = `${outcome}\u0000${error}`;
    const known = this.errorIndex.get(key);
    if (known) known.count += records;
    else if (this.errorIndex.size < MAX_DISTINCT_ERRORS) {
      const entry: FeedErrorCount = { error, outcome, count: records };
      this.errorIndex.set(key, entry);
      this.result.errors.push(entry);
    } else this.result.otherErrors += records;
  }
}

/**
 * Run a feed to the end. The result counts records by outcome; with `keep: true` it also holds them
 * (`records`), for short runs only.
 */
export function runFeed(opts: FeedOptions & { keep: true }): Promise<KeptFeedResult>;
export function runFeed(opts: FeedOptions): Promise<FeedResult>;
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
