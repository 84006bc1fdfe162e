/** Exit codes scripts can rely on (listed in README and in `telematics --help`). */
import { UpstreamError, UpstreamProtocolError, UpstreamTransportError } from '../upstream/client/errors.js';
import type { CliIO } from './io.js';

export const EXIT = {
  ok: 0,
  /** The service answered FAILURE (or, for `feed`, the receiver refused records). */
  failure: 1,
  /** Bad flags or arguments, missing configuration, or a confirmation that cannot be asked. */
  usage: 2,
  /** Network error, timeout, or an HTTP error without an answer envelope. */
  network: 3,
  /** The service answered something that does not match the expected shape. */
  protocol: 4,
  /** The user said no at a confirmation prompt. */
  cancelled: 5,
  /** Stopped by SIGINT/SIGTERM. */
  interrupted: 130,
} as const;

export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    /** Command whose --help to point at. */
    readonly command?: string,
  ) {
    super(message);
  }
}

export class CancelledError extends Error {
  override readonly name = 'CancelledError';
}

/** Reports an error on stderr and picks the exit code. */
export function reportError(e: unknown, io: CliIO): number {
  if (e instanceof UsageError) {
    const hint = e.command ? `telematics ${e.command} --help` : 'telematics --help';
    io.stderr.write(`error: ${e.message}\n(see ${hint})\n`);
    return EXIT.usage;
  }
  if (e instanceof CancelledError) {
    io.stderr.write(`${e.message}\n`);
    return EXIT.cancelled;
  }
  if (e instanceof UpstreamError) {
    io.stderr.write(`error: ${e.operation} failed: ${e.err}: ${e.msg}\n`);
    return EXIT.failure;
  }
  if (e instanceof UpstreamTransportError) {
    io.stderr.write(`error: ${e.message}\n`);
    return EXIT.network;
  }
  if (e instanceof UpstreamProtocolError) {
    io.stderr.write(`error: ${e.message}\n`);
    return EXIT.protocol;
  }
  throw e;
}
