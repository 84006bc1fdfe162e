/**
 * The one rule for durations, in settings and on every command line: a number with a unit, `ms`,
 * `s`, `m`, `h` or `d` (250ms, 30s, 1.5m, 6h, 1d); `0` alone needs none. A bare number is refused,
 * because it would read as milliseconds to one reader and as seconds to another.
 */

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/i;

export const DURATION_HINT = 'expected a duration with a unit such as 500ms, 30s, 5m, 6h or 1d';

/** Milliseconds, or undefined when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  const v = text.trim();
  if (v === '0') return 0;
  const m = DURATION.exec(v);
  return m ? Math.round(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!) : undefined;
}
