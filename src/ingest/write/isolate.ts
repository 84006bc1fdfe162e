import type { Lines } from './lines.js';
import { PartialWriteError, WriteError, type PointSink, type RefusedLine } from './sink.js';

/**
 * Says which lines the store refused, and refuses no line for what the store said about the request.
 *
 * - **Lines the store names** (3.x `data[].line_number`, Cloud Serverless's "line N"): those are
 *   refused; where the store wrote the rest (`partial`), nothing is sent again, else the lines between
 *   them are.
 * - **Lines it does not name** (2.x and 1.x, 3.x's `/api/v2/write`, which refuse a request for data in
 *   it without saying reliably which line): the request is halved until the refused lines stand alone.
 *   Points are idempotent, so rewriting halves that had landed changes nothing.
 * - **The request, not its lines**: a refusal `toWriteError` recognises (a database missing or over a
 *   limit) is retryable and passes through; so does one whose every half is refused with the very words
 *   the whole was (every line refused alike is the request's doing: a store that names no line still
 *   words a line's fault by the line). Nothing of such a request reaches the quarantine.
 * - **Too large** (413): halved, and no line is refused for it, unless one line alone is too large.
 *
 * The halves of a split go out side by side, at most `maxInFlight` of the isolation's requests at once
 * (WRITE_CONCURRENCY): a store that answers each request after a WAL flush (InfluxDB 3, a second) takes
 * a fraction of the time to name the lines. Refused lines end in a PartialWriteError; anything retryable
 * is thrown as it came.
 */
export class IsolatingSink implements PointSink {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly inner: PointSink,
    /** Requests of one write's isolation at once (the first request is the write itself). */
    private readonly maxInFlight = 1,
  ) {}

  async write(lines: Lines): Promise<void> {
    const refused: RefusedLine[] = [];
    await this.isolate(lines, 0, refused);
    if (refused.length > 0) throw new PartialWriteError(refused.sort((a, b) => a.line - b.line));
  }

  /** Writes; the store's refusal of data, or of a request too large, is returned, anything else thrown. */
  private async attempt(lines: Lines): Promise<WriteError | undefined> {
    if (this.inFlight >= this.maxInFlight) await new Promise<void>((r) => this.waiting.push(r));
    this.inFlight++;
    try {
      await this.inner.write(lines);
      return undefined;
    } catch (err) {
      if (!(err instanceof WriteError) || err.retryable) throw err;
      return err;
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  /** `lines` (at `offset` in the caller's) were refused with `err`: finds which, into `refused`. */
  private async settle(lines: Lines, offset: number, err: WriteError, refused: RefusedLine[]): Promise<void> {
    const named = (err.answer.named ?? []).filter((r) => r.line >= 0 && r.line < lines.length);
    if (named.length > 0) {
      for (const r of named) refused.push({ line: offset + r.line, error: r.error });
      if (err.answer.partial) return;
      // Nothing written: the runs between the named lines go again.
      const cuts = [...new Set(named.map((r) => r.line))].sort((a, b) => a - b);
      let from = 0;
      for (const cut of [...cuts, lines.length]) {
        if (cut > from) await this.isolate(lines.slice(from, cut), offset + from, refused);
        from = cut + 1;
      }
      return;
    }
    if (lines.length === 1) {
      refused.push({ line: offset, error: err.answer.tooLarge ? `${err.message} (one line larger than the store takes)` : err.message });
      return;
    }
    const half = Math.ceil(lines.length / 2);
    const first = lines.slice(0, half);
    const second = lines.slice(half);
    const [a, b] = await Promise.all([this.attempt(first), this.attempt(second)]);
    if (!err.answer.tooLarge && a !== undefined && b !== undefined && sameWords(a, err) && sameWords(b, err)) {
      throw new WriteError(`InfluxDB refused the request, not its lines (every part of it alike): ${err.message}`, err.status, true, err.body, { ofRequest: true });
    }
    await Promise.all([a && this.settle(first, offset, a, refused), b && this.settle(second, offset + half, b, refused)]);
  }

  private async isolate(lines: Lines, offset: number, refused: RefusedLine[]): Promise<void> {
    const err = await this.attempt(lines);
    if (err !== undefined) await this.settle(lines, offset, err, refused);
  }

  ready(): Promise<boolean> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Words of a refusal of data: a store that names no line still says what is wrong with one (a syntax
 * error, a type conflict, a field or column), and parts that each hold such a line are refused alike.
 */
const DATA_WORDS = /pars|syntax|conflict|type|field|column|line|invalid|value|schema/i;

/** Two refusals in the same words that say nothing of data (1.x's `dropped=N` already differs by part). */
const sameWords = (x: WriteError, y: WriteError): boolean => x.status === y.status && x.message === y.message && !x.answer.tooLarge && !DATA_WORDS.test(x.message);
