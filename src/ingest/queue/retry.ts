/**
 * The retry budget is a span of time, not a count: an InfluxDB outage of hours must not
 * exhaust a job's attempts. Delays grow exponentially from `baseMs` up to `maxMs`; the number
 * of attempts is whatever fits in `spanMs`.
 */
export interface RetryPolicy {
  spanMs: number;
  baseMs: number;
  maxMs: number;
}

export const BACKOFF_TYPE = 'capped-exponential';

/** Delay before attempt `attemptsMade + 1`, with ±20% jitter so retries of many jobs spread out. */
export function retryDelay(policy: RetryPolicy, attemptsMade: number, random: () => number = Math.random): number {
  const exp = policy.baseMs * 2 ** Math.min(Math.max(attemptsMade - 1, 0), 30);
  const capped = Math.min(exp, policy.maxMs);
  return Math.round(capped * (0.8 + 0.4 * random()));
}

/** Attempts needed so that the sum of (un-jittered) delays covers the span, plus the first try. */
export function attemptsForSpan(policy: RetryPolicy): number {
  let total = 0;
  let attempts = 1;
  while (total < policy.spanMs && attempts < 1_000_000) {
    total += Math.min(policy.baseMs * 2 ** Math.min(attempts - 1, 30), policy.maxMs);
    attempts++;
  }
  return attempts;
}
