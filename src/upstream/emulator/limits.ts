/**
 * The provider's published limits, enforced as a real upstream would: per account (the token's user),
 * at most `maxCallsPerSecond` calls starting within any second, at least `minGapMs` between two calls,
 * and at most `historyCallsPerDay` `getfuelhistory` calls per vehicle a day. Beyond them a call is
 * answered HTTP 429 with `Retry-After` and a FAILURE envelope, and is not carried out.
 *
 * Choices where the document says nothing (README, "not shown"): a call answered 429 is not counted
 * (only served calls are); the second's bounds are kept on the wall clock of the process, the day's on
 * the emulator's clock (its `now`, so that tests moving time see days pass), and a day is a UTC day.
 */
import type { Operation } from '../client/schema.js';

export interface EmulatorLimits {
  /** 0: no such bound. */
  maxCallsPerSecond: number;
  /** ms; 0: no such bound. */
  minGapMs: number;
  /** `getfuelhistory` calls per vehicle per UTC day; 0: no such bound. */
  historyCallsPerDay: number;
}

/** What the provider publishes: 3 calls a second, 400 ms apart, 24 history calls per vehicle a day. */
export const PROVIDER_LIMITS: Readonly<EmulatorLimits> = { maxCallsPerSecond: 3, minGapMs: 400, historyCallsPerDay: 24 };

/**
 * The provider's limits with the second's bounds `factor` times tighter in time (`factor` times the
 * calls a second, a gap `factor` times shorter) and the day's unchanged: a test scales a client's
 * pacing by the same factor to run a large fleet in seconds instead of minutes.
 */
export function scaledLimits(factor: number, base: EmulatorLimits = PROVIDER_LIMITS): EmulatorLimits {
  if (!(factor > 0)) throw new RangeError(`scale factor must be positive, not ${factor}`);
  return { maxCallsPerSecond: base.maxCallsPerSecond * factor, minGapMs: base.minGapMs / factor, historyCallsPerDay: base.historyCallsPerDay };
}

export type LimitVerdict = { ok: true } | { ok: false; err: 'rate_limited' | 'history_limit'; msg: string; retryAfterSeconds: number };

const DAY_MS = 86_400_000;

/** One emulator's limits and what each account has spent of them. */
export class LimitKeeper {
  /** Per account: the start times (wall clock, ms) of its served calls within the last second, oldest first. */
  private readonly recent = new Map<string, number[]>();
  /** Per account and vehicle, today's history calls; only the current day is kept. */
  private history = new Map<string, number>();
  private historyDay = -1;

  constructor(
    readonly limits: EmulatorLimits,
    private readonly wallClock: () => number = () => performance.now(),
  ) {
    for (const [k, v] of Object.entries(limits)) if (!(typeof v === 'number' && v >= 0)) throw new RangeError(`limits.${k} must be a non-negative number, not ${String(v)}`);
  }

  /**
   * Whether `account` may make this call now; when it may, the call is counted. `vehicleno` is the
   * vehicle a `getfuelhistory` names (undefined for other operations); `now` the emulator's clock.
   */
  take(account: string, op: Operation, vehicleno: string | undefined, now: number): LimitVerdict {
    const at = this.wallClock();
    const { maxCallsPerSecond, minGapMs, historyCallsPerDay } = this.limits;
    const recent = (this.recent.get(account) ?? []).filter((t) => at - t < 1000);
    const last = recent.at(-1);
    if (minGapMs > 0 && last !== undefined && at - last < minGapMs) {
      return this.tooMany(`calls must be at least ${minGapMs} ms apart; this one came ${Math.floor(at - last)} ms after the last`, last + minGapMs - at);
    }
    if (maxCallsPerSecond > 0 && recent.length >= maxCallsPerSecond) {
      return this.tooMany(`at most ${maxCallsPerSecond} calls a second`, recent[recent.length - maxCallsPerSecond]! + 1000 - at);
    }
    if (op === 'getfuelhistory' && vehicleno !== undefined && historyCallsPerDay > 0) {
      const day = Math.floor(now / DAY_MS);
      if (day !== this.historyDay) {
        this.history = new Map();
        this.historyDay = day;
      }
      const key = `${account}\n${vehicleno}`;
      const spent = this.history.get(key) ?? 0;
      if (spent >= historyCallsPerDay) {
        return {
          ok: false,
          err: 'history_limit',
          msg: `at most ${historyCallsPerDay} getfuelhistory calls per vehicle a day; vehicle ${vehicleno} has had them today (UTC)`,
          retryAfterSeconds: Math.max(1, Math.ceil(((day + 1) * DAY_MS - now) / 1000)),
        };
      }
      this.history.set(key, spent + 1);
    }
    recent.push(at);
    this.recent.set(account, recent);
    return { ok: true };
  }

  private tooMany(why: string, waitMs: number): LimitVerdict {
    // Retry-After is in whole seconds: a wait of 40 ms is told as 1 s, as HTTP allows no less.
    return { ok: false, err: 'rate_limited', msg: `too many calls: ${why}`, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }
}
