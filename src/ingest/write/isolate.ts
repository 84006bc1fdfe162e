import type { Lines } from './lines.js';
import { PartialWriteError, WriteError, type PointSink, type RefusedLine } from './sink.js';

/**
 * Says which lines the store refused. InfluxDB refuses a whole request for data in it (400, 422: a
 * field-type conflict made by another writer, a line it cannot parse) without saying reliably which
 * line, so a refused request is halved until the refused lines stand alone. Points are idempotent,
 * so rewriting the halves that had landed changes nothing. Refused lines end in a PartialWriteError;
 * anything retryable is thrown as it came.
 */
export class IsolatingSink implements PointSink {
  constructor(private readonly inner: PointSink) {}

  async write(lines: Lines): Promise<void> {
    const refused: RefusedLine[] = [];
    await this.isolate(lines, 0, refused);
    if (refused.length > 0) throw new PartialWriteError(refused);
  }

  private async isolate(lines: Lines, offset: number, refused: RefusedLine[]): Promise<void> {
    try {
      await this.inner.write(lines);
    } catch (err) {
      if (!(err instanceof WriteError) || err.retryable) throw err;
      if (lines.length === 1) {
        refused.push({ line: offset, error: err.message });
        return;
      }
      const half = Math.ceil(lines.length / 2);
      await this.isolate(lines.slice(0, half), offset, refused);
      await this.isolate(lines.slice(half), offset + half, refused);
    }
  }

  ready(): Promise<boolean> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
