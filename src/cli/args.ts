/** Flag parsing on node:util parseArgs, with the conversions the commands share. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { DURATION_HINT, parseDuration } from '../config/duration.js';
import { toEpochMs } from '../telemetry/numbers.js';
import { UsageError } from './exit.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const satisfies Options;

/** What `parse` gives: parseArgs' own result type, named so that declarations can be emitted. */
export type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: typeof HELP_OPTION & O; strict: true; allowPositionals: true }>>;

/** parseArgs, strict, with its errors turned into usage errors of `command`. */
export function parse<O extends Options>(command: string, args: string[], options: O): Parsed<O> {
  try {
    return parseArgs({ args, options: { ...HELP_OPTION, ...options }, strict: true, allowPositionals: true });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e), command);
  }
}

/**
 * A date as ISO 8601 (2025-06-01T12:00:00Z), epoch seconds or epoch milliseconds (digits; below 1e11
 * they are seconds), or "now". Returns epoch milliseconds.
 */
export function parseTime(value: string, flag: string, command: string, now: number): number {
  const v = value.trim();
  if (v === 'now') return now;
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    return toEpochMs(n);
  }
  // Only full dates: Date.parse also takes loose forms like "1" that are surely typos here.
  if (/^\d{4}-\d{2}-\d{2}/.test(v)) {
    const t = Date.parse(v);
    if (!Number.isNaN(t)) return t;
  }
  throw new UsageError(
    `${flag}: "${value}" is not a date; use ISO 8601 (2025-06-01T12:00:00Z), epoch seconds or milliseconds, or "now"`,
    command,
  );
}

/** A duration flag by the one rule of `src/config/duration.ts` (500ms, 30s, 5m, 2h). Returns milliseconds. */
export function parseDurationFlag(value: string, flag: string, command: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new UsageError(`${flag}: "${value}" is not a duration; ${DURATION_HINT}`, command);
  if (ms <= 0) throw new UsageError(`${flag} must be more than zero`, command);
  return ms;
}

export function parseNumber(
  value: string,
  flag: string,
  command: string,
  check: { integer?: boolean; min?: number; max?: number } = {},
): number {
  const n = value.trim() === 'inf' ? Infinity : Number(value);
  const bad =
    Number.isNaN(n) ||
    value.trim() === '' ||
    (check.integer === true && !Number.isInteger(n)) ||
    (check.min !== undefined && n < check.min) ||
    (check.max !== undefined && n > check.max);
  if (bad) {
    const range = [check.min !== undefined ? `>= ${check.min}` : '', check.max !== undefined ? `<= ${check.max}` : '']
      .filter(Boolean)
      .join(' and ');
    throw new UsageError(`${flag}: "${value}" is not ${check.integer ? 'an integer' : 'a number'}${range ? ` ${range}` : ''}`, command);
  }
  return n;
}

/** Exactly one positional argument, named `name` in messages. */
export function onePositional(positionals: string[], name: string, command: string): string {
  if (positionals.length === 0) throw new UsageError(`missing <${name}>`, command);
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`, command);
  return positionals[0] ?? '';
}

export function noPositionals(positionals: string[], command: string): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`, command);
}
