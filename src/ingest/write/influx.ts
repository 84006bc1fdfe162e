import { HttpError, InfluxDB } from '@influxdata/influxdb-client';
import type { Lines } from './lines.js';
import type { PointSink, RefusedLine, WriteAnswer } from './sink.js';
import { WriteError } from './sink.js';
import type { Metrics } from '../../metrics/index.js';

export interface InfluxSinkOptions {
  url: string;
  token: string;
  org: string;
  bucket: string;
  timeoutMs: number;
  /** INFLUX_CONTENT_ENCODING=gzip: bodies above 1 kB are gzipped (in libuv's thread pool, off the event loop). */
  gzip?: boolean;
  /** Where requests are counted and timed. */
  metrics?: Metrics | undefined;
  /**
   * INFLUX_API: `v2` writes `/api/v2/write` (2.x, 3.x, Cloud, 1.8+); `v3` InfluxDB 3's own
   * `/api/v3/write_lp`, which writes the good lines of a request and names the refused ones.
   */
  api?: 'v2' | 'v3';
}

/** Smaller bodies gain nothing from gzip (Telegraf and the client library use the same bound). */
const GZIP_ABOVE_BYTES = 1_000;

/**
 * Writes through `/api/v2/write` (InfluxDB 2.x, 3.x, Cloud, and 1.8+) or InfluxDB 3's `/api/v3/write_lp`, one request per call,
 * awaited (CoalescingSink sizes the requests). The client's WriteApi is not used: its background retry buffer acknowledges
 * before InfluxDB has the data and drops lines on overflow or close; BullMQ owns retries here.
 */
export class InfluxSink implements PointSink {
  private readonly influx: InfluxDB;
  private readonly path: string;

  private readonly metrics: Metrics | undefined;
  private readonly gzipThreshold: number | undefined;
  /** Until when (epoch ms) the store asked not to be written to (Retry-After). */
  private resumeAt = 0;

  constructor(opts: InfluxSinkOptions) {
    this.metrics = opts.metrics;
    this.gzipThreshold = opts.gzip ? GZIP_ABOVE_BYTES : undefined;
    this.influx = new InfluxDB({ url: opts.url, token: opts.token || undefined, timeout: opts.timeoutMs });
    if (opts.api === 'v3') {
      // `millisecond`: the name every 3.x release takes (later ones also take `ms`). `no_sync` is never
      // set: a 204 must mean the write is in the WAL, as the job's completion says it is stored.
      this.path = `/api/v3/write_lp?${new URLSearchParams({ db: opts.bucket, precision: 'millisecond', accept_partial: 'true' })}`;
    } else {
      const q = new URLSearchParams({ bucket: opts.bucket, precision: 'ms' });
      if (opts.org) q.set('org', opts.org);
      this.path = `/api/v2/write?${q}`;
    }
  }

  async write(lines: Lines): Promise<void> {
    // A store that asked for a pause (Retry-After) gets no request before it ends, from any caller.
    const pause = this.resumeAt - Date.now();
    if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    const started = performance.now();
    try {
      await this.post(lines.bytes);
      this.metrics?.writeRequests.inc({ outcome: 'ok', status_class: '2xx' });
    } catch (err) {
      const e = toWriteError(err);
      if (e.answer.retryAfterMs !== undefined) this.resumeAt = Math.max(this.resumeAt, Date.now() + e.answer.retryAfterMs);
      this.metrics?.writeRequests.inc({ outcome: outcomeOf(e), status_class: e.status === undefined ? 'none' : `${Math.floor(e.status / 100)}xx` });
      throw e;
    } finally {
      this.metrics?.writeDuration.observe((performance.now() - started) / 1000);
    }
  }

  /**
   * The body as bytes: the transport's `send` takes them as they are (its `request` would
   * JSON-encode anything but a string), and its errors are the same HttpError.
   */
  private post(body: Buffer): Promise<void> {
    const options = {
      method: 'POST',
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      ...(this.gzipThreshold === undefined ? {} : { gzipThreshold: this.gzipThreshold }),
    };
    return new Promise<void>((resolve, reject) => {
      // `send` reads its body with Buffer.from, which takes bytes as well as text.
      this.influx.transport.send(this.path, body as unknown as string, options, { next() {}, complete: () => resolve(), error: reject });
    });
  }

  async ready(): Promise<boolean> {
    try {
      await this.influx.transport.request('/ping', '', { method: 'GET' });
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    // The transport keeps no pool of its own to drain.
  }
}

/** How a request's answer is counted (`telematics_write_requests_total{outcome}`). */
function outcomeOf(e: WriteError): string {
  if (e.answer.ofRequest) return 'request_refused';
  if (e.answer.tooLarge) return 'too_large';
  if (e.status === 429 || e.answer.retryAfterMs !== undefined) return 'throttled';
  return e.retryable ? 'error' : 'refused';
}

/**
 * Refusals of the request rather than of its lines, as the servers word them (influxdb 1.x/2.x
 * `http/write_handler.go`, influxdb3's catalog limits, Cloud's namespaces): a database or bucket that
 * is missing or over a limit, a table a server will not create. Every line of such a request would be
 * refused alike, and is valid: the write is retried until the operator fixes the store, never
 * quarantined.
 */
const REQUEST_REFUSAL = /(database|bucket|namespace|retention policy|db) (\S+ )?(not found|does not exist)|exceed(s|ed)? (the )?limit of \d+ (databases|tables)|(database|table) limit|too many (databases|tables)|would exceed .*(databases|tables)/i;

export function toWriteError(err: unknown): WriteError {
  if (err instanceof HttpError) {
    const status = err.statusCode;
    const body = err.body ?? '';
    const message = errorMessage(body) ?? err.message;
    const text = `InfluxDB answered ${status}: ${message}`;
    const retryAfterS = err.retryAfter();
    const answer: WriteAnswer = retryAfterS > 0 ? { retryAfterMs: retryAfterS * 1_000 } : {};
    if (status === 413) return new WriteError(text, status, false, body, { tooLarge: true });
    if ((status === 400 || status === 422) && REQUEST_REFUSAL.test(message)) return new WriteError(text, status, true, body, { ofRequest: true });
    // 4xx other than throttling and auth mean the data itself was refused; retrying won't help.
    const retryable = status >= 500 || [401, 403, 404, 408, 429].includes(status);
    if (!retryable) Object.assign(answer, namedLines(body, message));
    return new WriteError(text, status, retryable, body, answer);
  }
  return new WriteError(`InfluxDB write failed: ${err instanceof Error ? err.message : String(err)}`, undefined, true);
}

/**
 * The lines a refusal names, 0-based: 3.x answers `{error, data: [{line_number, error_message}]}`
 * (1-based; with `accept_partial`, the rest written), Cloud Serverless "line N: …" in its message
 * (the rest written: "partial write"). Neither: nothing named (2.x, 1.x, 3.x's v2 endpoint).
 */
function namedLines(body: string, message: string): Pick<WriteAnswer, 'named' | 'partial'> {
  const partial = /partial write/i.test(message);
  try {
    const j = JSON.parse(body) as { data?: unknown };
    if (Array.isArray(j.data)) {
      const named: RefusedLine[] = [];
      for (const d of j.data as Array<{ line_number?: unknown; error_message?: unknown }>) {
        if (typeof d.line_number === 'number') named.push({ line: d.line_number - 1, error: `InfluxDB refused the line: ${String(d.error_message ?? message)}` });
      }
      if (named.length > 0) return { named, partial };
    }
  } catch {
    // not JSON: the message may still name lines
  }
  const named = [...message.matchAll(/\bline (\d+): (.*?)(?=[;,]?\s*\bline \d+: |$)/g)].map(([, n, e]) => ({ line: Number(n) - 1, error: `InfluxDB refused the line: ${e!.trim()}` }));
  return named.length > 0 ? { named, partial } : {};
}

/** 2.x answers `{code, message}`, 3.x `{error, data}`, 1.x `{error}`. */
function errorMessage(body: string): string | undefined {
  try {
    const j = JSON.parse(body) as { message?: unknown; error?: unknown };
    const m = j.message ?? j.error;
    return typeof m === 'string' ? m : undefined;
  } catch {
    return body ? body.slice(0, 500) : undefined;
  }
}
