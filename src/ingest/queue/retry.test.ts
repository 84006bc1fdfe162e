import { expect, it } from 'vitest';
import { attemptsForSpan, retryDelay } from './retry.js';

const policy = { spanMs: 6 * 3_600_000, baseMs: 1_000, maxMs: 60_000 };

it('grows delays exponentially up to the cap, with bounded jitter', () => {
  const mid = () => 0.5;
  expect([1, 2, 3, 4, 7, 8, 50].map((n) => retryDelay(policy, n, mid))).toEqual([1_000, 2_000, 4_000, 8_000, 60_000, 60_000, 60_000]);
  expect(retryDelay(policy, 1, () => 0)).toBe(800);
  expect(retryDelay(policy, 1, () => 1)).toBe(1_200);
});

it('gives enough attempts to keep retrying for the whole span', () => {
  const attempts = attemptsForSpan(policy);
  let total = 0;
  for (let n = 1; n < attempts; n++) total += retryDelay(policy, n, () => 0.5);
  expect(total).toBeGreaterThanOrEqual(policy.spanMs);
  expect(total - retryDelay(policy, attempts - 1, () => 0.5)).toBeLessThan(policy.spanMs);
});
