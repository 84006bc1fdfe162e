/** Epoch values below this are taken as seconds: 1e11 s is the year 5138, 1e11 ms is March 1973. */
export const SECONDS_THRESHOLD = 1e11;

/** An epoch timestamp in seconds or milliseconds, to milliseconds. */
export function toEpochMs(value: number): number {
  return Math.abs(value) < SECONDS_THRESHOLD ? Math.round(value * 1000) : Math.round(value);
}

export type TimeUnit = 'ms' | 's';
