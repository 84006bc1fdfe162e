import { Lines } from './lines.js';
import { PartialWriteError, type PointSink, type RefusedLine } from './sink.js';

export interface CoalesceOptions {
  /** Lines per request to the backend (WRITE_BATCH_LINES): merged writes fill it, larger ones are split. */
  maxLines: number;
  /**
   * Bytes per request (WRITE_MAX_BYTES, uncompressed): a request closes before a line would pass it
   * (InfluxDB 3 refuses a body over 10 MiB, Cloud over 50 MB; 5,000 full CAN lines are about 9 MB). A
   * single line larger than it still goes alone. Unset: lines alone decide.
   */
  maxBytes?: number;
  /** Requests to the backend at once; writes arriving while they are out are merged. */
  maxInFlight: number;
  /**
   * WRITE_LINGER: while the sink is busy (a request out, or one sent within this long), how long a
   * request that is not full may wait for more lines. 0 never waits. An idle sink writes at once.
   */
  lingerMs?: number;
}

interface Waiter {
  lines: Lines;
  /** When it asked to write: it waits at most the linger from then. */
  at: number;
  /** Index of its first line not yet given to a request. */
  next: number;
  /** Requests holding some of its lines that have not answered yet. */
  outstanding: number;
  refused: RefusedLine[];
  failed?: unknown;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Lines [from, from + count) of a waiter, at `at` in the request. */
interface Segment {
  waiter: Waiter;
  from: number;
  count: number;
  at: number;
}

/**
 * Group commit for writes, and the one place requests are sized: while `maxInFlight` requests are
 * out, the lines of every caller that wants to write meanwhile are merged into requests of up to
 * `maxLines` (a caller with more is split over several). InfluxDB spends far less per line on few
 * large requests than on many small ones (realtime jobs hold a few dozen records). Under load a
 * request that is not full may linger (`lingerMs`) for more lines; an idle sink writes at once.
 *
 * Each caller learns the truth about its own lines only: a PartialWriteError of a merged request
 * (put an IsolatingSink under this one) is handed to the callers whose lines were refused, with
 * their own line numbers; a caller resolves once every request holding its lines answered.
 */
export class CoalescingSink implements PointSink {
  private readonly pending: Waiter[] = [];
  /** Lines of `pending` not yet given to a request. */
  private pendingLines = 0;
  private inFlight = 0;
  private lastSentAt = -Infinity;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly inner: PointSink,
    private readonly opts: CoalesceOptions,
  ) {}

  write(lines: Lines): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ lines, at: performance.now(), next: 0, outstanding: 0, refused: [], resolve, reject });
      this.pendingLines += lines.length;
      this.pump();
    });
  }

  /** Milliseconds the next request should still wait for company, or 0 to send it now. */
  private lingerLeft(): number {
    const linger = this.opts.lingerMs ?? 0;
    if (linger <= 0 || this.pendingLines >= this.opts.maxLines) return 0;
    const now = performance.now();
    const busy = this.inFlight > 0 || now - this.lastSentAt < linger;
    return busy ? Math.max(0, this.pending[0]!.at + linger - now) : 0;
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.pending.length > 0) {
      const wait = this.lingerLeft();
      if (wait > 0) {
        this.lingerTimer ??= setTimeout(() => {
          this.lingerTimer = undefined;
          this.pump();
        }, Math.ceil(wait));
        return;
      }
      const segments: Segment[] = [];
      let size = 0;
      let bytes = 0;
      const maxBytes = this.opts.maxBytes ?? Infinity;
      while (this.pending.length > 0 && size < this.opts.maxLines && bytes < maxBytes) {
        const waiter = this.pending[0]!;
        let count = Math.min(waiter.lines.length - waiter.next, this.opts.maxLines - size);
        // As many as fit in the bytes left (at least one line a request).
        while (count > 0 && bytes + waiter.lines.byteLength(waiter.next, waiter.next + count) > maxBytes && (size > 0 || count > 1)) count = Math.floor(count / 2);
        if (count === 0) break;
        bytes += waiter.lines.byteLength(waiter.next, waiter.next + count);
        segments.push({ waiter, from: waiter.next, count, at: size });
        waiter.next += count;
        waiter.outstanding++;
        size += count;
        this.pendingLines -= count;
        if (waiter.next === waiter.lines.length) this.pending.shift();
      }
      this.inFlight++;
      this.lastSentAt = performance.now();
      void this.send(segments).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async send(segments: Segment[]): Promise<void> {
    const only = segments.length === 1 ? segments[0]! : undefined;
    const lines =
      only && only.count === only.waiter.lines.length
        ? only.waiter.lines
        : Lines.concat(segments.map((s) => s.waiter.lines.slice(s.from, s.from + s.count)));
    try {
      await this.inner.write(lines);
    } catch (err) {
      if (err instanceof PartialWriteError) {
        for (const r of err.refused) {
          const s = segments.find((seg) => r.line >= seg.at && r.line < seg.at + seg.count)!;
          s.waiter.refused.push({ line: s.from + r.line - s.at, error: r.error });
        }
      } else {
        for (const s of segments) s.waiter.failed ??= err;
      }
    }
    for (const s of segments) {
      const w = s.waiter;
      if (--w.outstanding > 0 || w.next < w.lines.length) continue;
      if (w.failed !== undefined) w.reject(w.failed);
      else if (w.refused.length > 0) w.reject(new PartialWriteError(w.refused.sort((a, b) => a.line - b.line)));
      else w.resolve();
    }
  }

  ready(): Promise<boolean> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
