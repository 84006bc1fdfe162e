/** Exit codes scripts can rely on (listed in docs/telematics-service.md and in `telematics --help`). */
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

/** A program's mapping of its own errors to an exit code and the line that explains it; undefined: not its error. */
export type ErrorClassifier = (e: unknown) => { code: number; message: string } | undefined;

/**
 * Reports an error on stderr as one line and picks the exit code. An error no classifier knows is a
 * bug: it is thrown on, so that its stack is seen.
 */
export function reportError(e: unknown, io: CliIO, program: string, classify?: ErrorClassifier): number {
  if (e instanceof UsageError) {
    const hint = e.command ? `${program} ${e.command} --help` : `${program} --help`;
    io.stderr.write(`error: ${e.message}\n(see ${hint})\n`);
    return EXIT.usage;
  }
  if (e instanceof CancelledError) {
    io.stderr.write(`${e.message}\n`);
    return EXIT.cancelled;
  }
  const known = classify?.(e);
  if (known) {
    io.stderr.write(`error: ${known.message}\n`);
    return known.code;
  }
  throw e;
}
