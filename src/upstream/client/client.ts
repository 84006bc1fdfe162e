import { readCapped } from '../../bytes/capped.js';
/**
 * Typed client of the six request operations (spec §4.1–4.6).
 *
 * Every call is `POST {baseUrl}/api/standard/<op>` with a JSON body carrying `token`. Answers are
 * validated with the shared zod schemas; a FAILURE envelope becomes an `UpstreamError`. Only the reads
 * are retried: a command (immobilise, mobilise, change password) that timed out may have been carried
 * out, and sending it twice is not ours to decide.
 *
 * Every call takes its turn from a pacer, to the provider's published limits of the account (pacer.ts);
 * a 429 is a refusal: a read is tried again after its Retry-After, a command is reported as not carried
 * out (`UpstreamThrottledError`), never sent again.
 *
 * Nothing an answer says is trusted further than needed: no redirect is followed (a 307 would send the
 * body, token included, to wherever it points), an answer is read only up to `maxAnswerBytes`, a list
 * only up to `maxVehicles` / `maxReadings` items, and the service's words enter errors cut short, on one
 * line, and without the token or new password it may echo.
 */
import { z } from 'zod';
import {
  type AnswerLimit,
  UpstreamAnswerTooLargeError,
  UpstreamError,
  UpstreamProtocolError,
  UpstreamThrottledError,
  UpstreamTransportError,
  redacted,
} from './errors.js';
import { InProcessPacer, type UpstreamPacer } from './pacer.js';
import { backoffDelay } from '../../retry/backoff.js';
import { errorText, isRetryableStatus, isTimeoutError, parseRetryAfter, sleep } from './retry.js';
import {
  type CommandType,
  type Operation,
  type RequestBody,
  dataIn,
} from './schema.js';
import { envelopeSchema } from '../../telemetry/envelope.js';
import { type TimeUnit } from './time.js';
import { toEpochMs } from '../../telemetry/numbers.js';

export type FuelUnit = 'percent' | 'litres';

export interface Vehicle {
  vehicleno: string;
}

export interface FuelReading {
  /** Epoch milliseconds, whatever unit the service used. */
  time: number;
  value: number;
  unit: FuelUnit;
}

export interface FuelUsed {
  vehicleno: string;
  /** The range asked for, in epoch milliseconds. */
  from: number;
  to: number;
  /** `fuelused`. */
  value: number;
  /** `null` when the service answered a bare number without naming the unit; the documented object is in litres. */
  unit: FuelUnit | null;
  // The documented fields (issue #47), each `null` when the answer did not carry it (an older shape, or
  // nothing to tell: no reading, no ignition change in the range). Times in epoch ms.
  /** `startfl`, `endfl`: the fuel level at the range's start and end, percent of the tank. */
  startPercent: number | null;
  endPercent: number | null;
  /** `startfl_litres`, `endfl_litres`. */
  startLitres: number | null;
  endLitres: number | null;
  /** `lastignon`, `lastignoff`: the last ignition on and off within the range. */
  lastIgnitionOn: number | null;
  lastIgnitionOff: number | null;
  /** `refueling_events`, `null` when not sent. Each as the emulator shapes it (assumed): when, and litres added. */
  refuels: Refuel[] | null;
}

export interface Refuel {
  /** Epoch ms; null when the service did not say. */
  time: number | null;
  litres: number | null;
}

/** What a command (immobilise, mobilise, change password) answered. */
export interface CommandAck {
  /** `data` when it is a string (e.g. "ignition Immobilize command sent for Vehicle X"), else `msg`. */
  message: string;
  data: unknown;
  msg: string;
}

/** Epoch milliseconds or a Date. */
export type TimeInput = number | Date;

export interface UpstreamClientOptions {
  /** e.g. http://127.0.0.1:8090 (without /api/standard). */
  baseUrl: string;
  token: string;
  /** Per attempt. Default 10 000. */
  timeoutMs?: number;
  /** Extra attempts for the reads (fuel history, fuel used, list vehicles). Default 2. */
  retries?: number;
  /** First backoff delay; doubles per attempt, capped by maxBackoffMs. Default 250. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Unit of starttime/endtime sent to the service. Default 'ms' (the emulator's choice). */
  timeUnit?: TimeUnit;
  /**
   * Most bytes of one answer's body, counted as they arrive and after gzip/deflate/br decoding; a longer
   * answer is refused where it passes the cap. Default 16 MiB.
   */
  maxAnswerBytes?: number;
  /** Most vehicles one `listvehicles` answer may hold; more are refused, not cut. Default 100 000. */
  maxVehicles?: number;
  /** Most readings one `getfuelhistory` answer may hold; more are refused, not cut. Default 100 000. */
  maxReadings?: number;
  /**
   * Paces every call, of every operation, to the account's limits. Default: an `InProcessPacer` at the
   * provider's published limits (3 calls a second, 400 ms apart), which holds only while this client is
   * the account's one caller; processes sharing an account share a pacer (`src/ingest/sync/pacer.ts`).
   */
  pacer?: UpstreamPacer;
  /**
   * A 429's Retry-After up to this long is waited out: a read is then tried again, and the pacer held
   * meanwhile, so no call of the account goes out before it. A longer one is about this call (a vehicle's
   * daily history budget), not worth a caller's wait: the call fails at once with `UpstreamThrottledError`.
   * Default 30 000.
   */
  maxRetryAfterMs?: number;
  /** Told of each 429 answer (a metric counts them). */
  onThrottled?: (op: Operation, retryAfterMs: number | undefined) => void;
  fetch?: typeof fetch;
}

export interface CallOptions {
  signal?: AbortSignal;
}

const READS: ReadonlySet<Operation> = new Set(['getfuelhistory', 'getfuelused', 'listvehicles']);

export const DEFAULT_MAX_ANSWER_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_VEHICLES = 100_000;
export const DEFAULT_MAX_READINGS = 100_000;

/** A cap on the items of one operation's list answer. */
interface ItemCap {
  limit: AnswerLimit;
  max: number;
  items: string;
}

export class UpstreamClient {
  private readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly timeUnit: TimeUnit;
  private readonly maxAnswerBytes: number;
  private readonly itemCaps: Partial<Record<Operation, ItemCap>>;
  private readonly pacer: UpstreamPacer;
  private readonly maxRetryAfterMs: number;
  private readonly onThrottled: UpstreamClientOptions['onThrottled'];
  private readonly fetchFn: typeof fetch;

  constructor(opts: UpstreamClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.retries = opts.retries ?? 2;
    this.backoffMs = opts.backoffMs ?? 250;
    this.maxBackoffMs = opts.maxBackoffMs ?? 4_000;
    this.timeUnit = opts.timeUnit ?? 'ms';
    this.maxAnswerBytes = positiveInteger('maxAnswerBytes', opts.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES);
    this.itemCaps = {
      listvehicles: { limit: 'maxVehicles', max: positiveInteger('maxVehicles', opts.maxVehicles ?? DEFAULT_MAX_VEHICLES), items: 'vehicles' },
      getfuelhistory: { limit: 'maxReadings', max: positiveInteger('maxReadings', opts.maxReadings ?? DEFAULT_MAX_READINGS), items: 'readings' },
    };
    this.pacer = opts.pacer ?? new InProcessPacer();
    this.maxRetryAfterMs = opts.maxRetryAfterMs ?? 30_000;
    this.onThrottled = opts.onThrottled;
    // Wrapped: some fetch implementations refuse to be called as a method of another object.
    this.fetchFn = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  async listVehicles(call?: CallOptions): Promise<Vehicle[]> {
    const data = await this.call('listvehicles', { token: this.token }, call);
    return data.map((v) => ({ vehicleno: v.vehicleno }));
  }

  async getFuelHistory(
    q: { vehicleno: string; from: TimeInput; to: TimeInput; inLitres: boolean },
    call?: CallOptions,
  ): Promise<FuelReading[]> {
    const unit: FuelUnit = q.inLitres ? 'litres' : 'percent';
    const data = await this.call(
      'getfuelhistory',
      { token: this.token, vehicleno: q.vehicleno, inlitres: q.inLitres, ...this.range(q.from, q.to) },
      call,
    );
    return data.map((r) => ({ time: toEpochMs(r.time), value: r.value, unit }));
  }

  async getFuelUsed(q: { vehicleno: string; from: TimeInput; to: TimeInput }, call?: CallOptions): Promise<FuelUsed> {
    const data = await this.call(
      'getfuelused',
      { token: this.token, vehicleno: q.vehicleno, ...this.range(q.from, q.to) },
      call,
    );
    const base = { vehicleno: q.vehicleno, from: ms(q.from), to: ms(q.to) };
    const none = { startPercent: null, endPercent: null, startLitres: null, endLitres: null, lastIgnitionOn: null, lastIgnitionOff: null, refuels: null };
    if (typeof data === 'number') return { ...base, value: data, unit: null, ...none };
    const time = (t: number | null | undefined): number | null => (t === null || t === undefined ? null : toEpochMs(t));
    return {
      ...base,
      value: data.fuelused,
      unit: data.unit ?? 'litres',
      startPercent: data.startfl ?? null,
      endPercent: data.endfl ?? null,
      startLitres: data.startfl_litres ?? null,
      endLitres: data.endfl_litres ?? null,
      lastIgnitionOn: time(data.lastignon),
      lastIgnitionOff: time(data.lastignoff),
      refuels: data.refueling_events?.map((e) => ({ time: time(e.time), litres: e.litres ?? null })) ?? null,
    };
  }

  async immobilize(
    q: { vehicleno: string; type: CommandType; immediate: boolean },
    call?: CallOptions,
  ): Promise<CommandAck> {
    return this.command(
      'immobilize',
      { vehicleno: q.vehicleno, type: q.type, token: this.token, immediate: q.immediate },
      call,
    );
  }

  async mobilize(q: { vehicleno: string; type: CommandType }, call?: CallOptions): Promise<CommandAck> {
    return this.command('mobilize', { vehicleno: q.vehicleno, type: q.type, token: this.token }, call);
  }

  async changePassword(q: { username: string; newPassword: string }, call?: CallOptions): Promise<CommandAck> {
    return this.command(
      'changepassword',
      { token: this.token, username: q.username, newpassword: q.newPassword },
      call,
    );
  }

  // -------------------------------------------------------------------------------------------

  private range(from: TimeInput, to: TimeInput): { starttime: number; endtime: number } {
    const a = ms(from);
    const b = ms(to);
    // In seconds, round outwards so that no reading inside [from, to] is lost.
    return this.timeUnit === 's'
      ? { starttime: Math.floor(a / 1000), endtime: Math.ceil(b / 1000) }
      : { starttime: a, endtime: b };
  }

  private async command<O extends 'immobilize' | 'mobilize' | 'changepassword'>(
    op: O,
    body: RequestBody<O>,
    call?: CallOptions,
  ): Promise<CommandAck> {
    const { data, msg } = await this.send(op, body, call);
    return { message: typeof data === 'string' ? data : msg, data, msg };
  }

  private async call<O extends Operation>(
    op: O,
    body: RequestBody<O>,
    call?: CallOptions,
  ): Promise<z.output<(typeof dataIn)[O]>> {
    return (await this.send(op, body, call)).data;
  }

  private async send<O extends Operation>(
    op: O,
    body: RequestBody<O>,
    call?: CallOptions,
  ): Promise<{ data: z.output<(typeof dataIn)[O]>; msg: string }> {
    const read = READS.has(op);
    const attempts = read ? this.retries + 1 : 1;
    const url = `${this.base}/api/standard/${op}`;
    const secrets = secretsOf(body);
    /** How long the next attempt must wait at least (a 429's Retry-After), beside the pacing. */
    let holdMs = 0;
    for (let attempt = 0; ; attempt++) {
      const last = attempt === attempts - 1;
      // Every call, first or retried, takes its turn under the account's limits.
      const release = await this.pacer.acquire(holdMs, call?.signal);
      holdMs = 0;
      const signals = [AbortSignal.timeout(this.timeoutMs)];
      if (call?.signal) signals.push(call.signal);
      let status: number;
      let retryAfter: number | undefined;
      /** Undefined when the answer's body was not read because the call is tried again. */
      let text: string | undefined;
      try {
        let res: Response;
        try {
          res = await this.fetchFn(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            body: JSON.stringify(body),
            // Followed, a 307 or 308 would send the body, token included, again to wherever it points.
            redirect: 'manual',
            signal: AbortSignal.any(signals),
          });
        } finally {
          // The answer began to arrive (or none will): the call has reached the service, if it ever will,
          // and the next one's gap counts from here. A pacer out of reach loses a turn, not this answer.
          await release().catch(() => undefined);
        }
        status = res.status;
        retryAfter = parseRetryAfter(res.headers.get('retry-after'));
        if (isRedirect(res)) {
          await discard(res);
          throw new UpstreamProtocolError(op, redacted(redirectRefusal(res, url), secrets), status);
        }
        if (status === 429) {
          this.onThrottled?.(op, retryAfter);
          const waitable = retryAfter === undefined || retryAfter <= this.maxRetryAfterMs;
          // The limit is the account's: no call of it goes out before the wait is over, from here or elsewhere.
          if (retryAfter !== undefined && waitable) await this.pacer.hold(retryAfter);
          if (read && !last && waitable) {
            await discard(res);
            holdMs = Math.max(retryAfter ?? 0, backoffDelay({ baseMs: this.backoffMs, maxMs: this.maxBackoffMs }, attempt + 1));
            continue;
          }
          const said = envelopeSchema.safeParse(parseJson(await this.readAnswer(op, res)));
          const [err, msg] = said.success && said.data.status === 'FAILURE' ? [redacted(said.data.err, secrets), redacted(said.data.msg, secrets)] : ['', ''];
          throw new UpstreamThrottledError(op, err, msg, retryAfter, attempt + 1, !read);
        }
        if (isRetryableStatus(status) && !last) await discard(res);
        else text = await this.readAnswer(op, res);
      } catch (e) {
        // A refused answer is the service's final word, as a wrong shape is: not tried again.
        if (call?.signal?.aborted || e instanceof UpstreamProtocolError || e instanceof UpstreamThrottledError) throw e;
        if (!last) {
          await this.pause(attempt, undefined, call?.signal);
          continue;
        }
        const kind = isTimeoutError(e) ? 'timeout' : 'network';
        const what = kind === 'timeout' ? `timed out after ${this.timeoutMs} ms` : `network error: ${redacted(errorText(e), secrets)}`;
        throw new UpstreamTransportError(op, kind, what, undefined, { cause: e });
      }
      if (text === undefined) {
        await this.pause(attempt, retryAfter, call?.signal);
        continue;
      }
      return this.interpret(op, status, text, secrets);
    }
  }

  /**
   * The body as text, read chunk by chunk and refused as soon as it passes `maxAnswerBytes`, so that
   * no more than the cap (and one chunk) is ever held. fetch has already undone any content-encoding
   * (gzip, deflate, br) in `res.body`, so the count is of decoded bytes: a small compressed answer that
   * inflates past the cap is refused too.
   */
  private async readAnswer(op: Operation, res: Response): Promise<string> {
    if (!res.body) return '';
    const r = await readCapped(res.body, this.maxAnswerBytes);
    if (!r.ok) {
      throw new UpstreamAnswerTooLargeError(op, 'maxAnswerBytes', this.maxAnswerBytes, r.read, `answer larger than maxAnswerBytes (${this.maxAnswerBytes} bytes): reading stopped after ${r.read} bytes`, res.status);
    }
    return new TextDecoder().decode(r.bytes);
  }


  /** `secrets`: what the request carried that no error may repeat, should the service echo it. */
  private interpret<O extends Operation>(
    op: O,
    status: number,
    text: string,
    secrets: readonly string[],
  ): { data: z.output<(typeof dataIn)[O]>; msg: string } {
    const envelope = envelopeSchema.safeParse(parseJson(text));
    if (!envelope.success) {
      if (status < 200 || status >= 300) throw new UpstreamTransportError(op, 'http', `HTTP ${status}`, status);
      throw new UpstreamProtocolError(op, `not a {status, data, err, msg} envelope: ${redacted(schemaProblems(envelope.error), secrets)}`, status);
    }
    const { status: result, data, err, msg } = envelope.data;
    if (result === 'FAILURE') throw new UpstreamError(op, redacted(err, secrets), redacted(msg, secrets), status);
    if (status < 200 || status >= 300) throw new UpstreamTransportError(op, 'http', `HTTP ${status} with SUCCESS envelope`, status);
    this.refuseTooManyItems(op, data, status);
    const parsed = (dataIn[op] as z.ZodType<z.output<(typeof dataIn)[O]>>).safeParse(data);
    if (!parsed.success) throw new UpstreamProtocolError(op, redacted(schemaProblems(parsed.error), secrets), status);
    return { data: parsed.data, msg };
  }

  /** Before the schema walks the list: it would copy every item of it. */
  private refuseTooManyItems(op: Operation, data: unknown, status: number): void {
    const cap = this.itemCaps[op];
    if (!cap || !Array.isArray(data) || data.length <= cap.max) return;
    throw new UpstreamAnswerTooLargeError(
      op,
      cap.limit,
      cap.max,
      data.length,
      `${data.length} ${cap.items}, more than ${cap.limit} (${cap.max}); refused whole rather than cut`,
      status,
    );
  }

  private async pause(attempt: number, retryAfterMs: number | undefined, signal?: AbortSignal): Promise<void> {
    const backoff = backoffDelay({ baseMs: this.backoffMs, maxMs: this.maxBackoffMs }, attempt + 1);
    // Honour Retry-After but never wait longer than one timeout: the caller is waiting.
    const wait = retryAfterMs === undefined ? backoff : Math.min(Math.max(backoff, retryAfterMs), this.timeoutMs);
    await sleep(wait, signal);
  }
}

function ms(t: TimeInput): number {
  return t instanceof Date ? t.getTime() : t;
}

/** The credentials a request body carries: its token, and the new password of `changepassword`. */
function secretsOf(body: { token: string; newpassword?: string }): string[] {
  return body.newpassword === undefined ? [body.token] : [body.token, body.newpassword];
}

function positiveInteger(option: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${option} must be a positive integer, not ${value}`);
  return value;
}

function isRedirect(res: Response): boolean {
  // `redirected`: a fetch passed in `fetch` may ignore `redirect: 'manual'`; its answer is refused all the same.
  return (res.status >= 300 && res.status < 400) || res.redirected;
}

/** Names the status and where the redirect pointed, as an origin only: its path or query may hold secrets. */
function redirectRefusal(res: Response, url: string): string {
  const advice = 'this client follows no redirect; set baseUrl to where the service answers';
  if (res.redirected) return `answer from ${originOf(res.url, url)} after a redirect the fetch passed in followed, refused: ${advice}`;
  const location = res.headers.get('location');
  const target = location === null ? 'no Location' : `Location on ${originOf(location, url)}`;
  return `HTTP ${res.status} redirect (${target}) refused: ${advice}`;
}

function originOf(location: string, base: string): string {
  try {
    return new URL(location, base).origin;
  } catch {
    return 'an unreadable address';
  }
}

/** Lets the connection go without reading the rest of the body; a body already broken has nothing to let go. */
async function discard(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}

/** The first few problems a schema found: an answer of a hundred thousand bad items must not make as many lines. */
function schemaProblems(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3);
  const more = error.issues.length - shown.length;
  return z.prettifyError({ issues: shown }) + (more > 0 ? `\n(and ${more} more problems)` : '');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
