import type { PointSink } from './sink.js';
import { WriteError } from './sink.js';

export interface CoalesceOptions {
  /** Largest merged request, in lines. */
  maxLines: number;
  /** Requests to the backend at once; writes arriving while they are out are merged. */
  maxInFlight: number;
}

interface Waiter {
  lines: readonly string[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for writes: while `maxInFlight` requests are out, the lines of every job that
 * wants to write meanwhile are merged into one request of up to `maxLines`. InfluxDB spends far
 * less per line on few large requests than on many small ones (realtime jobs hold a few dozen
 * records). A write never waits for company: with a request slot free it goes at once.
 *
 * Each caller still learns the truth about its own lines: when the store refuses data in a
 * merged request, every caller's lines are written again on their own (points are idempotent),
 * so the caller whose data was refused gets the refusal and isolates it, and the others succeed.
 */
export class CoalescingSink implements PointSink {
  private pending: Waiter[] = [];
  private inFlight = 0;

  constructor(
    private readonly inner: PointSink,
    private readonly opts: CoalesceOptions,
  ) {}

  write(lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ lines, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.pending.length > 0) {
      const batch: Waiter[] = [this.pending.shift()!];
      let n = batch[0]!.lines.length;
      while (this.pending.length > 0 && n + this.pending[0]!.lines.length <= this.opts.maxLines) {
        const w = this.pending.shift()!;
        batch.push(w);
        n += w.lines.length;
      }
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async send(batch: Waiter[]): Promise<void> {
    const alone = async (w: Waiter) => {
      try {
        await this.inner.write(w.lines);
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    };
    if (batch.length === 1) return alone(batch[0]!);
    try {
      await this.inner.write(batch.flatMap((w) => w.lines));
      for (const w of batch) w.resolve();
    } catch (err) {
      if (err instanceof WriteError && !err.retryable) {
        for (const w of batch) await alone(w);
      } else {
        for (const w of batch) w.reject(err);
      }
    }
  }

  ready(): Promise<boolean> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
