import type { Lines } from './lines.js';

/**
 * Where flattened points go. One adapter per backend behind this interface (InfluxDB's
 * /api/v2/write today), so the worker knows nothing of HTTP paths or auth schemes.
 */
export interface PointSink {
  /** Resolves only once the backend accepted every line; rejects with a `WriteError` otherwise. */
  write(lines: Lines): Promise<void>;
  /** True when the backend answers and accepts our credentials. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

export class WriteError extends Error {
  constructor(
    message: string,
    /** HTTP status, or undefined when no answer came (refused, reset, timed out). */
    readonly status: number | undefined,
    /** True when the same write can succeed later (outage, overload); false for data the store refuses. */
    readonly retryable: boolean,
    readonly body?: string,
  ) {
    super(message);
    this.name = 'WriteError';
  }
}

/** A line the store refused for good, by its index in the `lines` given to `write`. */
export interface RefusedLine {
  line: number;
  error: string;
}

/**
 * Some lines were refused for good and every other line landed: what Telegraf's
 * PartialWriteError says. Thrown by `IsolatingSink`, which finds which lines they are.
 */
export class PartialWriteError extends WriteError {
  constructor(readonly refused: readonly RefusedLine[]) {
    const more = refused.length > 1 ? ` (and ${refused.length - 1} more line(s))` : '';
    super(`${refused[0]?.error ?? 'lines refused'}${more}`, undefined, false);
    this.name = 'PartialWriteError';
  }
}
