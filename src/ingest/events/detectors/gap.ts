import type { Context } from './context.js';

/**
 * The gap rule (EVENTS_MAX_GAP), one for every detector that holds something open over a stream's records
 * (a trip, a stop, idling, overspeed, a charging session): records at `lastTime` and then at `time` more
 * than `maxGapMs` apart have a gap between them. What was open ends at `lastTime`, the last record before
 * the gap (a vehicle that stopped reporting is not known to have gone on), and nothing is measured across
 * it. A stream's first record (`lastTime` -Infinity) comes after a gap: nothing was open.
 */
export const gapBefore = (ctx: Context, lastTime: number, time: number): boolean => time - lastTime > ctx.opts.maxGapMs;

/**
 * Where a gap before `time` begins: `lastTime`, or -Infinity when there is none. A record after a gap may
 * confirm a fix from before it (the track waits for the next fix to agree): such a fix, at or before
 * this, lies on the side of the gap what was open already ended on, and is skipped.
 */
export const gapFrom = (ctx: Context, lastTime: number, time: number): number => (gapBefore(ctx, lastTime, time) ? lastTime : -Infinity);
