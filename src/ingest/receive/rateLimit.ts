import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';



export type RateVerdict = { ok: true } | { ok: false; tooLarge: true } | { ok: false; tooLarge: false; retryAfterMs: number };

/**
 * Per-sender rate limits, shared by every receiver replica: two token buckets in one Redis hash per
 * sender (pushes/s and records/s), refilled continuously, each holding two seconds of its rate.
 * Checked and taken in one script, so replicas never overdraw a bucket between them.
 */
export class RateLimiter {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyOf: (sender: string) => string,
    private readonly perSecond: { pushes: number; records: number },
  ) {
    defineScript(redis, 'telematicsTakeTokens', 'take-tokens-1');
  }

  get enabled(): boolean {
    return this.perSecond.pushes > 0 || this.perSecond.records > 0;
  }

  async take(sender: string, records: number): Promise<RateVerdict> {
    const take = (this.redis as unknown as { telematicsTakeTokens(...args: Array<string | number>): Promise<number> }).telematicsTakeTokens;
    const r = await take.call(this.redis, this.keyOf(sender), Date.now(), this.perSecond.pushes, 1, this.perSecond.records, records);
    if (r === 0) return { ok: true };
    if (r < 0) return { ok: false, tooLarge: true };
    return { ok: false, tooLarge: false, retryAfterMs: r };
  }

  /** What the limits are, for the 413 that names them. */
  describe(): string {
    return [this.perSecond.pushes > 0 ? `RATE_LIMIT_PUSHES=${this.perSecond.pushes}` : '', this.perSecond.records > 0 ? `RATE_LIMIT_RECORDS=${this.perSecond.records}` : '']
      .filter(Boolean)
      .join(', ');
  }
}
