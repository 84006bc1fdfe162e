/**
 * The one backoff formula: the queue's job retries, the upstream client and the push feed all wait
 * by it. Exponential from `baseMs`, capped at `maxMs`, with ±20 % jitter so that many callers
 * retrying at once spread out instead of returning in lockstep.
 */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** The delay before retry `retry` (1 = the first retry) without jitter. */
export function nominalDelay(policy: Backoff, retry: number): number {
  return Math.min(policy.baseMs * 2 ** Math.min(Math.max(retry - 1, 0), 30), policy.maxMs);
}

/** The delay before retry `retry` (1 = the first retry), jittered by `random` ∈ [0, 1). */
export function backoffDelay(policy: Backoff, retry: number, random: () => number = Math.random): number {
  return Math.round(nominalDelay(policy, retry) * (0.8 + 0.4 * random()));
}
