import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import { type CallLimits, PACING_MARGIN_MS, pacingSchedule, type PacingSchedule, type Release, sleepFor, type UpstreamPacer } from '../../upstream/client/pacer.js';

/** How often a turn waiting for another process's call in flight asks again. */
const POLL_MS = 10;

/**
 * The upstream account's pacer, shared in Redis by every process that calls with the account's token
 * (every worker replica's fuel sync, the command ledger): the provider's limits are the account's, so
 * two processes each keeping them alone would together pass them. One call of the account is in flight
 * at a time, the next one starting `minGapMs` after its answer (`src/upstream/client/pacer.ts` says why),
 * in one hash (RedisKeys.upstreamPacing) kept by one script on Redis's clock (upstream-pace-1.lua).
 *
 * A process that dies with a turn in flight holds the others up to `leaseMs` (default 15 s: the client's
 * 10-s timeout and some), then its turn is taken as answered.
 */
export class RedisPacer implements UpstreamPacer {
  private readonly schedule: PacingSchedule;
  private readonly leaseMs: number;
  /** This process's turns queue here first, so that only one of them asks Redis at a time. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    limits: CallLimits,
    opts: { marginMs?: number; leaseMs?: number } = {},
  ) {
    this.schedule = pacingSchedule(limits, opts.marginMs ?? PACING_MARGIN_MS);
    this.leaseMs = opts.leaseMs ?? 15_000;
    defineScript(redis, 'telematicsUpstreamPace', 'upstream-pace-1');
  }

  acquire(holdMs = 0, signal?: AbortSignal): Promise<Release> {
    const before = this.queue;
    let next!: () => void;
    this.queue = new Promise<void>((resolve) => (next = resolve));
    const id = randomUUID();
    let released = false;
    const release: Release = async () => {
      if (released) return;
      released = true;
      try {
        await this.pace('release', id);
      } finally {
        next();
      }
    };
    return before.then(async () => {
      try {
        for (;;) {
          const r = await this.pace('take', id, Math.max(0, Math.ceil(holdMs)), this.leaseMs);
          if (r >= 0) {
            await sleepFor(r, signal);
            return release;
          }
          await sleepFor(Math.min(-r, POLL_MS), signal);
        }
      } catch (e) {
        // Not called: give the turn back at once rather than hold the account for a lease.
        await release().catch(() => undefined);
        throw e;
      }
    });
  }

  async hold(holdMs: number): Promise<void> {
    await this.pace('hold', String(Math.max(0, Math.ceil(holdMs))));
  }

  private pace(op: 'take' | 'release' | 'hold', ...args: Array<string | number>): Promise<number> {
    const pace = (this.redis as unknown as { telematicsUpstreamPace(...a: Array<string | number>): Promise<number> }).telematicsUpstreamPace;
    const { gapMs, perWindow, windowMs } = this.schedule;
    return pace.call(this.redis, this.key, gapMs, perWindow, windowMs, op, ...args);
  }
}
