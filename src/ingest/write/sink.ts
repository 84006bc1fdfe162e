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

/** What a store's answer says beyond its status, as `toWriteError` (influx.ts) reads it. */
export interface WriteAnswer {
  /** `Retry-After`, in ms: no request to the store before it (429 and 503 of Cloud). */
  retryAfterMs?: number;
  /** The request was too large for the store (413): it is split, and no line of it is refused for it. */
  tooLarge?: boolean;
  /** A refusal of the request, not of its lines (a database missing or over a limit): retried, never quarantined. */
  ofRequest?: boolean;
  /** The lines the store named as refused, by index in the request (3.x `data[].line_number`, Cloud's "line N"). */
  named?: readonly RefusedLine[];
  /** The store wrote every line it did not name (3.x `accept_partial`, Cloud): those are not sent again. */
  partial?: boolean;
}

export class WriteError extends Error {
  constructor(
    message: string,
    /** HTTP status, or undefined when no answer came (refused, reset, timed out). */
    readonly status: number | undefined,
    /** True when the same write can succeed later (outage, overload, a refusal of the request); false for data the store refuses, or a request too large. */
    readonly retryable: boolean,
    readonly body?: string,
    readonly answer: WriteAnswer = {},
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
