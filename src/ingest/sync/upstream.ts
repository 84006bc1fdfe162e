/**
 * The service's upstream account: one client a process, paced in Redis with every other process that
 * calls with the same token (the provider's limits are the account's), its 429s counted, and its
 * token's expiry watched. The fuel sync and the command ledger call through it.
 */
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { UpstreamClient } from '../../upstream/client/client.js';
import { tokenExpiry } from '../../upstream/client/token.js';
import type { CallLimits } from '../../upstream/client/pacer.js';
import { RedisPacer } from './pacer.js';

/** The account's limits as configured (UPSTREAM_MAX_CALLS_PER_SECOND, UPSTREAM_MIN_CALL_GAP). */
export function callLimitsOf(cfg: Config): CallLimits {
  return { maxCallsPerSecond: cfg.UPSTREAM_MAX_CALLS_PER_SECOND, minGapMs: cfg.UPSTREAM_MIN_CALL_GAP };
}

/** The client of the configured upstream (UPSTREAM_URL must be set), paced in Redis under `pacingKey`. */
export function serviceUpstreamClient(cfg: Config, redis: RedisClient, pacingKey: string, metrics?: Metrics): UpstreamClient {
  if (!cfg.UPSTREAM_URL) throw new Error('UPSTREAM_URL is not set');
  return new UpstreamClient({
    baseUrl: cfg.UPSTREAM_URL,
    token: cfg.UPSTREAM_TOKEN,
    timeUnit: cfg.UPSTREAM_TIME_UNIT,
    pacer: new RedisPacer(redis, pacingKey, callLimitsOf(cfg)),
    onThrottled: (op) => metrics?.upstreamThrottled.inc({ operation: op }),
  });
}

const HOUR_MS = 3_600_000;

/**
 * Watches the upstream token's expiry, read from the token (a JWT's `exp`; otherwise unknown, and the
 * log says so once). The expiry is a gauge (epoch seconds) an alert compares with the time; the log
 * warns from `warnBeforeMs` before it, at most once every `checkEveryMs`, and once expired says so.
 */
export class TokenExpiryWatch {
  private timer: NodeJS.Timeout | undefined;
  private readonly expiry: ReturnType<typeof tokenExpiry>;

  constructor(
    token: string,
    private readonly warnBeforeMs: number,
    private readonly log: Logger,
    private readonly metrics?: Metrics,
    private readonly now: () => number = Date.now,
  ) {
    this.expiry = tokenExpiry(token);
  }

  /** Says what is known at once, then checks every `checkEveryMs` (default an hour) until stopped. */
  start(checkEveryMs: number = HOUR_MS): void {
    if (!this.expiry.known) {
      this.log.info({ reason: this.expiry.reason }, 'upstream token: its expiry is unknown (UPSTREAM_TOKEN carries none); the provider says tokens expire after about 15 days');
      return;
    }
    this.metrics?.upstreamTokenExpiry.set({ source: 'jwt_exp' }, Math.floor(this.expiry.expiresAt / 1000));
    if (!this.check()) this.log.info({ expiresAt: new Date(this.expiry.expiresAt).toISOString() }, 'upstream token: expiry read from the token');
    this.timer = setInterval(() => this.check(), checkEveryMs);
    this.timer.unref();
  }

  /** Warns when the expiry is within `warnBeforeMs` or past; true when it did. */
  check(): boolean {
    if (!this.expiry.known) return false;
    const left = this.expiry.expiresAt - this.now();
    const expiresAt = new Date(this.expiry.expiresAt).toISOString();
    if (left <= 0) {
      this.log.error({ expiresAt }, 'upstream token expired: every call to the upstream is refused; set a new UPSTREAM_TOKEN');
      return true;
    }
    if (left <= this.warnBeforeMs) {
      this.log.warn({ expiresAt, inHours: Math.floor(left / HOUR_MS) }, 'upstream token expires soon (UPSTREAM_TOKEN_WARN_BEFORE): set a new UPSTREAM_TOKEN before then');
      return true;
    }
    return false;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
