import type { Operation } from './schema.js';

/** The service answered with a FAILURE envelope: `err` and `msg` are the service's own words. */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';
  constructor(
    readonly operation: Operation,
    readonly err: string,
    readonly msg: string,
    readonly httpStatus: number,
  ) {
    super(`${operation} failed: ${err || '(no err)'}: ${msg || '(no msg)'}`);
  }
}

export type TransportFailure = 'network' | 'timeout' | 'http';

/**
 * No usable answer: the connection failed, the call timed out, or the HTTP status was an error
 * without a FAILURE envelope in the body.
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
    super(`${operation} failed: ${message}`, options);
  }
}

/** A 2xx answer that does not match the schema of the operation. */
export class UpstreamProtocolError extends Error {
  override readonly name = 'UpstreamProtocolError';
  constructor(
    readonly operation: Operation,
    readonly detail: string,
    readonly httpStatus: number,
  ) {
    super(`${operation}: unexpected answer from the service: ${detail}`);
  }
}
