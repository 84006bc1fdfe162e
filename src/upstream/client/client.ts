/**
 * Typed client of the six request operations (spec §4.1–4.6).
 *
 * Every call is `POST {baseUrl}/api/standard/<op>` with a JSON body carrying `token`. Answers are
 * validated with the shared zod schemas; a FAILURE envelope becomes an `UpstreamError`. Only the reads
 * are retried: a command (immobilise, mobilise, change password) that timed out may have been carried
 * out, and sending it twice is not ours to decide.
 */
import { z } from 'zod';
import { UpstreamError, UpstreamProtocolError, UpstreamTransportError } from './errors.js';
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
  value: number;
  /** `null` when the service answered a bare number without naming the unit. */
  unit: FuelUnit | null;
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
  fetch?: typeof fetch;
}

export interface CallOptions {
  signal?: AbortSignal;
}

const READS: ReadonlySet<Operation> = new Set(['getfuelhistory', 'getfuelused', 'listvehicles']);

export class UpstreamClient {
  private readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly timeUnit: TimeUnit;
  private readonly fetchFn: typeof fetch;

  constructor(opts: UpstreamClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.retries = opts.retries ?? 2;
    this.backoffMs = opts.backoffMs ?? 250;
    this.maxBackoffMs = opts.maxBackoffMs ?? 4_000;
    this.timeUnit = opts.timeUnit ?? 'ms';
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
    if (typeof data === 'number') return { ...base, value: data, unit: null };
    return { ...base, value: data.fuelused, unit: data.unit ?? 'litres' };
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
    const attempts = READS.has(op) ? this.retries + 1 : 1;
    const url = `${this.base}/api/standard/${op}`;
    for (let attempt = 0; ; attempt++) {
      const last = attempt === attempts - 1;
      const signals = [AbortSignal.timeout(this.timeoutMs)];
      if (call?.signal) signals.push(call.signal);
      let status: number;
      let text: string;
      let retryAfter: number | undefined;
      try {
        const res = await this.fetchFn(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.any(signals),
        });
        status = res.status;
        retryAfter = parseRetryAfter(res.headers.get('retry-after'));
        text = await res.text();
      } catch (e) {
        if (call?.signal?.aborted) throw e;
        if (!last) {
          await this.pause(attempt, undefined, call?.signal);
          continue;
        }
        const kind = isTimeoutError(e) ? 'timeout' : 'network';
        const what = kind === 'timeout' ? `timed out after ${this.timeoutMs} ms` : `network error: ${errorText(e)}`;
        throw new UpstreamTransportError(op, kind, what, undefined, { cause: e });
      }
      if (isRetryableStatus(status) && !last) {
        await this.pause(attempt, retryAfter, call?.signal);
        continue;
      }
      return this.interpret(op, status, text);
    }
  }

  private interpret<O extends Operation>(
    op: O,
    status: number,
    text: string,
  ): { data: z.output<(typeof dataIn)[O]>; msg: string } {
    const envelope = envelopeSchema.safeParse(parseJson(text));
    if (!envelope.success) {
      if (status < 200 || status >= 300) throw new UpstreamTransportError(op, 'http', `HTTP ${status}`, status);
      throw new UpstreamProtocolError(op, `not a {status, data, err, msg} envelope: ${z.prettifyError(envelope.error)}`, status);
    }
    const { status: result, data, err, msg } = envelope.data;
    if (result === 'FAILURE') throw new UpstreamError(op, err, msg, status);
    if (status < 200 || status >= 300) throw new UpstreamTransportError(op, 'http', `HTTP ${status} with SUCCESS envelope`, status);
    const parsed = (dataIn[op] as z.ZodType<z.output<(typeof dataIn)[O]>>).safeParse(data);
    if (!parsed.success) throw new UpstreamProtocolError(op, z.prettifyError(parsed.error), status);
    return { data: parsed.data, msg };
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

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
