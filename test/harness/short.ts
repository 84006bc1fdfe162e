/**
 * The unit tier's quick loop (`npm run test:unit` sets TEST_SHORT=1), as Go's `-short`: fuzz and
 * generated-input tests run a quarter of their cases there, and every case in `npm test` (CI). The same
 * cases, fewer of them: a bug they find in the full run they may miss in the short one, never the reverse.
 */
export const SHORT = process.env.TEST_SHORT === '1';

/** `n` cases, or a quarter of them (at least one) in the short loop. */
export const cases = (n: number): number => (SHORT ? Math.max(1, Math.ceil(n / 4)) : n);
