import type { Operation } from './schema.js';

/**
 * Most characters of any one text the service sent (`err`, `msg`, a schema problem, a redirect's
 * target) an error of this client carries: its message ends up in log lines and in a failed job's
 * reason in Redis, which a megabyte-long `msg` must not fill.
 */
export const UPSTREAM_TEXT_MAX = 300;

/**
 * Characters that make one log line look like several, or rewrite what a terminal shows: C0 (line
 * breaks, ESC of ANSI sequences), DEL, C1, the Unicode line and paragraph separators, and the
 * bidirectional overrides and isolates.
 */
const CONTROL_RUN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g;

/**
 * `text` on one line and short: each run of control characters (`CONTROL_RUN`) becomes one space, and a
 * text longer than `max` characters keeps its first `max` and `… (N characters)`, N its length.
 */
export function boundedText(text: string, max: number = UPSTREAM_TEXT_MAX): string {
  if (text.length <= max) return text.replace(CONTROL_RUN, ' ');
  // Cut before, not inside, a surrogate pair, so that the head stays well-formed; cut first, so that
  // a megabyte is not scanned for the few hundred characters kept.
  const code = text.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end).replace(CONTROL_RUN, ' ')}… (${text.length} characters)`;
}

/** Secrets shorter than this are not looked for in the service's words: they would match ordinary words. */
export const SECRET_MIN = 4;

/**
 * `text` with every occurrence of each secret (the token, a new password) replaced by `[redacted]`: a
 * service may echo what it was sent ("token abc… has expired"), and errors end up in logs and in Redis.
 * Done on the whole text, before `boundedText` cuts it, so that no secret's head is left at the cut.
 */
export function redacted(text: string, secrets: readonly string[]): string {
  let out = text;
  // Longest first: a secret inside another must not leave the other's rest behind.
  const sought = secrets.filter((s) => s.length >= SECRET_MIN).sort((a, b) => b.length - a.length);
  for (const secret of sought) out = out.split(secret).join('[redacted]');
  return out;
}

/**
 * The service answered with a FAILURE envelope: `err` and `msg` are the service's own words, each cut
 * to `UPSTREAM_TEXT_MAX` characters (`boundedText`).
 */
export class UpstreamError extends Error {
  override readonly name: string = 'UpstreamError';
  readonly err: string;
  readonly msg: string;
  constructor(
    readonly operation: Operation,
    err: string,
    msg: string,
    readonly httpStatus: number,
    /** The whole message, when the default (`<op> failed: <err>: <msg>`) does not say enough; its own words only, never the service's. */
    message?: (err: string, msg: string) => string,
  ) {
    const boundedErr = boundedText(err);
    const boundedMsg = boundedText(msg);
    super(message ? message(boundedErr, boundedMsg) : `${operation} failed: ${boundedErr || '(no err)'}: ${boundedMsg || '(no msg)'}`);
    this.err = boundedErr;
    this.msg = boundedMsg;
  }
}

/**
 * The service answered HTTP 429 Too Many Requests: the call was refused, not carried out. A read was
 * retried as long as the service's Retry-After allowed (see the client's `maxRetryAfterMs`); a command
 * is never sent twice by this client, so it is reported as not carried out, to be sent again by its
 * caller after `retryAfterMs` (undefined when the service named no wait). `err` and `msg` are the
 * FAILURE envelope's, empty when the answer had none.
 */
export class UpstreamThrottledError extends UpstreamError {
  override readonly name: string = 'UpstreamThrottledError';
  /** Always false: a 429 is a refusal. Named so that a caller deciding whether to send again need not know HTTP. */
  readonly carriedOut = false;
  constructor(
    operation: Operation,
    err: string,
    msg: string,
    readonly retryAfterMs: number | undefined,
    readonly attempts: number,
    command: boolean,
  ) {
    super(operation, err, msg, 429, (e, m) => {
      const wait = retryAfterMs === undefined ? 'the service named no wait (no Retry-After)' : `retry after ${Math.ceil(retryAfterMs / 1000)} s`;
      const said = e || m ? ` (${e || 'no err'}: ${m || 'no msg'})` : '';
      return command
        ? `${operation} not carried out: the service answered 429 Too Many Requests${said}; it was sent once and refused, and this client does not send a command twice: ${wait}`
        : `${operation} refused: the service answered 429 Too Many Requests${said} after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${wait}`;
    });
  }
}

export type TransportFailure = 'network' | 'timeout' | 'http';

/**
 * No usable answer: the connection failed, the call timed out, or the HTTP status was an error
 * without a FAILURE envelope in the body. The message is cut to `UPSTREAM_TEXT_MAX` characters.
 */
export class UpstreamTransportError extends Error {
  override readonly name = 'UpstreamTransportError';
  constructor(
    readonly operation: Operation,
    readonly kind: TransportFailure,
    message: string,
    readonly httpStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(`${operation} failed: ${boundedText(message)}`, options);
  }
}

/**
 * An answer this client does not take: a redirect, or a 2xx that does not match the schema of the
 * operation. `detail` is cut to `UPSTREAM_TEXT_MAX` characters.
 */
export class UpstreamProtocolError extends Error {
  override readonly name: string = 'UpstreamProtocolError';
  readonly detail: string;
  constructor(
    readonly operation: Operation,
    detail: string,
    readonly httpStatus: number,
  ) {
    const bounded = boundedText(detail);
    super(`${operation}: unexpected answer from the service: ${bounded}`);
    this.detail = bounded;
  }
}

/** The client option whose cap an answer passed. */
export type AnswerLimit = 'maxAnswerBytes' | 'maxVehicles' | 'maxReadings';

/**
 * An answer larger than the client takes: more bytes than `maxAnswerBytes` (then `count` is the bytes
 * read when reading stopped, so the answer had at least that many), or more vehicles or readings than
 * `maxVehicles` / `maxReadings` (then `count` is how many it held). Nothing of it is returned: a part
 * would be told as the whole.
 */
export class UpstreamAnswerTooLargeError extends UpstreamProtocolError {
  override readonly name: string = 'UpstreamAnswerTooLargeError';
  constructor(
    operation: Operation,
    readonly limit: AnswerLimit,
    readonly cap: number,
    readonly count: number,
    detail: string,
    httpStatus: number,
  ) {
    super(operation, detail, httpStatus);
  }
}
