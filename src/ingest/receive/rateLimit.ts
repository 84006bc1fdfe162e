import type { RedisClient } from '../../redis/connect.js';

// Returns 0 when taken, -1 when the push is larger than a bucket can ever hold, else ms to wait.
const TAKE = `
local now = tonumber(ARGV[1])
local wait = 0
local fill = {}
for i = 0, 1 do
  local rate, cost = tonumber(ARGV[2 + i * 2]), tonumber(ARGV[3 + i * 2])
  if rate > 0 then
    local cap = rate * 2
    if cost > cap then return -1 end
    local tokens = tonumber(redis.call('HGET', KEYS[1], 't' .. i)) or cap
    local at = tonumber(redis.call('HGET', KEYS[1], 'at' .. i)) or now
    tokens = math.min(cap, tokens + math.max(0, now - at) / 1000 * rate)
    if tokens < cost then wait = math.max(wait, math.ceil((cost - tokens) / rate * 1000)) end
    fill[i] = tokens - cost
  end
end
if wait > 0 then return wait end
for i, v in pairs(fill) do redis.call('HSET', KEYS[1], 't' .. i, v, 'at' .. i, now) end
redis.call('PEXPIRE', KEYS[1], 60000)
return 0
`;

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
    redis.defineCommand('telematicsTakeTokens', { numberOfKeys: 1, lua: TAKE });
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
