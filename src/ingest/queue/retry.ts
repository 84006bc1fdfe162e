import { backoffDelay, nominalDelay, type Backoff } from '../../retry/backoff.js';

/**
 * The retry budget is a span of time, not a count: an InfluxDB outage of hours must not
 * exhaust a job's attempts. Delays grow exponentially from `baseMs` up to `maxMs`; the number
 * of attempts is whatever fits in `spanMs`.
 */
export interface RetryPolicy extends Backoff {
  spanMs: number;
}

export const BACKOFF_TYPE = 'capped-exponential';

/** Delay before attempt `attemptsMade + 1`, by the one backoff formula. */
export function retryDelay(policy: RetryPolicy, attemptsMade: number, random: () => number = Math.random): number {
  return backoffDelay(policy, attemptsMade, random);
}

/** Attempts needed so that the sum of (un-jittered) delays covers the span, plus the first try. */
export function attemptsForSpan(policy: RetryPolicy): number {
  let total = 0;
  let attempts = 1;
  while (total < policy.spanMs && attempts < 1_000_000) {
    total += nominalDelay(policy, attempts);
    attempts++;
  }
  return attempts;
}
