/**
 * Pacing of the calls to the telematics service, to the limits its provider publishes for an account:
 * at most 3 calls a second, at least 400 ms between two calls (beyond them it answers HTTP 429). The
 * client takes a turn from its pacer before every call, of every operation, and gives it back once the
 * call was answered (or failed).
 *
 * The provider counts calls as they *arrive*; a client sees only when it sent one and when the answer
 * came. A call sent at t arrives somewhere between t and its answer: a first call of a process (fetch
 * loading, a TCP and TLS handshake) arrived 70 ms after it was sent on 127.0.0.1, the next one 2 ms, so
 * calls sent 425 ms apart arrived 357 ms apart. The only bound that holds is the answer: so the turns
 * go one at a time, and a call starts at least `minGapMs` after the answer of the one before (and the
 * N-th call at least a second after the answer of the N-th before it). The price is the latency: at
 * 200 ms a call, about 1.7 calls a second instead of 2.5.
 *
 * The limits are the account's, not a process's: where several processes call with one token (the
 * service's worker replicas, the command ledger) they must share one pacer, kept where they all see
 * it (the service's is in Redis: `src/ingest/sync/pacer.ts`). `InProcessPacer` is the default, for one
 * process alone (the CLI, a test).
 */
import { sleep } from './retry.js';

/** The provider's published limits of one account. */
export interface CallLimits {
  /** Most calls starting within any one second; 0: no such bound. */
  maxCallsPerSecond: number;
  /** Least time between two calls, ms; 0: no such bound. */
  minGapMs: number;
}

/** What the provider publishes: at most 3 calls a second, at least 400 ms apart. */
export const PROVIDER_CALL_LIMITS: Readonly<CallLimits> = { maxCallsPerSecond: 3, minGapMs: 400 };

/**
 * Added to both bounds: two clocks (ours, the service's) and a timer that fires a little early or a
 * little late do not agree to the millisecond.
 */
export const PACING_MARGIN_MS = 5;

/** Gives a turn back: the call was answered (or failed, or was never made). Call it once. */
export type Release = () => Promise<void>;

export interface UpstreamPacer {
  /**
   * Waits for the account's turn to call (and no earlier than `holdMs` from now, a Retry-After);
   * resolves with the release to call once the call's answer began to arrive, or it failed. Until then
   * nobody sharing the pacer calls. Rejects with the signal's reason when `signal` aborts the wait.
   */
  acquire(holdMs?: number, signal?: AbortSignal): Promise<Release>;
  /** No call by anyone sharing this pacer before `holdMs` from now (a 429's Retry-After), without taking a turn. */
  hold(holdMs: number): Promise<void>;
}

/** The limits as the pacers apply them, each bound with the margin. */
export interface PacingSchedule {
  gapMs: number;
  perWindow: number;
  windowMs: number;
}

export function pacingSchedule(limits: CallLimits, marginMs: number = PACING_MARGIN_MS): PacingSchedule {
  if (!(limits.maxCallsPerSecond >= 0) || !(limits.minGapMs >= 0) || !(marginMs >= 0)) {
    throw new RangeError(`pacing limits must be non-negative: ${JSON.stringify({ ...limits, marginMs })}`);
  }
  return {
    gapMs: limits.minGapMs > 0 ? limits.minGapMs + marginMs : 0,
    perWindow: Math.floor(limits.maxCallsPerSecond),
    windowMs: 1000 + marginMs,
  };
}

/** The earliest a next call may start after calls answered at `answers` (oldest first). */
export function nextTurn(answers: readonly number[], s: PacingSchedule): number {
  let at = -Infinity;
  const last = answers.at(-1);
  if (last !== undefined && s.gapMs > 0) at = Math.max(at, last + s.gapMs);
  if (s.perWindow > 0 && answers.length >= s.perWindow) at = Math.max(at, answers[answers.length - s.perWindow]! + s.windowMs);
  return at;
}

/**
 * One process's pacer: turns in the order they were asked for, one call in flight at a time, the
 * answers' times in memory.
 */
export class InProcessPacer implements UpstreamPacer {
  private readonly schedule: PacingSchedule;
  /** The last answers' times (ms, this clock), oldest first. */
  private readonly answers: number[] = [];
  private holdUntil = 0;
  /** Settles when the turn before the newest asked for has been given back. */
  private queue: Promise<void> = Promise.resolve();
  private readonly now: () => number;

  constructor(limits: CallLimits = PROVIDER_CALL_LIMITS, opts: { marginMs?: number; now?: () => number } = {}) {
    this.schedule = pacingSchedule(limits, opts.marginMs);
    this.now = opts.now ?? (() => performance.now());
  }

  acquire(holdMs = 0, signal?: AbortSignal): Promise<Release> {
    const asked = this.now();
    const before = this.queue;
    let giveBack!: () => void;
    this.queue = new Promise<void>((resolve) => (giveBack = resolve));
    const release: Release = async () => {
      this.answers.push(this.now());
      if (this.answers.length > Math.max(this.schedule.perWindow, 1)) this.answers.shift();
      giveBack();
    };
    return before.then(async () => {
      try {
        for (;;) {
          const at = Math.max(nextTurn(this.answers, this.schedule), this.holdUntil, asked + holdMs);
          const wait = at - this.now();
          if (wait <= 0) return release;
          // A hold may be set while waiting: look again when the wait is over.
          await sleepFor(wait, signal);
        }
      } catch (e) {
        // Not called: the turn passes on without an answer to count.
        giveBack();
        throw e;
      }
    });
  }

  async hold(holdMs: number): Promise<void> {
    this.holdUntil = Math.max(this.holdUntil, this.now() + holdMs);
  }
}

/** No pacing at all: for an upstream without limits (tests of other things, the emulator without limits). */
export const UNPACED: UpstreamPacer = {
  acquire: async (holdMs = 0, signal) => {
    if (holdMs > 0) await sleepFor(holdMs, signal);
    return async () => undefined;
  },
  hold: async () => undefined,
};

/** `sleep` (retry.ts) by the name the pacers use; a negative wait is none. */
export const sleepFor = (ms: number, signal?: AbortSignal): Promise<void> => sleep(Math.max(0, ms), signal);
