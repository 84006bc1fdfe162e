import { HttpError, InfluxDB } from '@influxdata/influxdb-client';
import type { Lines } from './lines.js';
import type { PointSink } from './sink.js';
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
}

/** Smaller bodies gain nothing from gzip (Telegraf and the client library use the same bound). */
const GZIP_ABOVE_BYTES = 1_000;

/**
 * Writes through `/api/v2/write` (InfluxDB 2.x, 3.x, Cloud, and 1.8+), one request per call,
 * awaited (CoalescingSink sizes the requests). The client's WriteApi is not used: its background retry buffer acknowledges
 * before InfluxDB has the data and drops lines on overflow or close; BullMQ owns retries here.
 */
export class InfluxSink implements PointSink {
  private readonly influx: InfluxDB;
  private readonly path: string;

  private readonly metrics: Metrics | undefined;
  private readonly gzipThreshold: number | undefined;

  constructor(opts: InfluxSinkOptions) {
    this.metrics = opts.metrics;
    this.gzipThreshold = opts.gzip ? GZIP_ABOVE_BYTES : undefined;
    this.influx = new InfluxDB({ url: opts.url, token: opts.token || undefined, timeout: opts.timeoutMs });
    const q = new URLSearchParams({ bucket: opts.bucket, precision: 'ms' });
    if (opts.org) q.set('org', opts.org);
    this.path = `/api/v2/write?${q}`;
  }

  async write(lines: Lines): Promise<void> {
    const started = performance.now();
    try {
      await this.post(lines.bytes);
      this.metrics?.writeRequests.inc({ outcome: 'ok', status_class: '2xx' });
    } catch (err) {
      const e = toWriteError(err);
      this.metrics?.writeRequests.inc({ outcome: e.retryable ? 'error' : 'refused', status_class: e.status === undefined ? 'none' : `${Math.floor(e.status / 100)}xx` });
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

function toWriteError(err: unknown): WriteError {
  if (err instanceof HttpError) {
    const message = errorMessage(err.body ?? '') ?? err.message;
    // 4xx other than throttling and auth mean the data itself was refused; retrying won't help.
    const retryable = err.statusCode >= 500 || [401, 403, 404, 408, 429].includes(err.statusCode);
    return new WriteError(`InfluxDB answered ${err.statusCode}: ${message}`, err.statusCode, retryable, err.body);
  }
  return new WriteError(`InfluxDB write failed: ${err instanceof Error ? err.message : String(err)}`, undefined, true);
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
