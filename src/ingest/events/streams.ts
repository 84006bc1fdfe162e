import type { StreamRecord } from './inputs.js';
import { PendingRecords, zeros } from './pending.js';

/**
 * One ordered stream of a vehicle: the records of one type (gps, can), each type with its own
 * watermark and reorder window, so a CAN stream pushed in 5-minute bulks behind a realtime GPS stream
 * commits exactly what it would in step with it. Pure: no clock, no I/O (the wall time is passed in).
 *
 * Records wait in `pending`, sorted by time, until the stream's newest time is W (the window) past
 * them, then are committed in time order. A record at or before the watermark (the last committed
 * time) is late, or a duplicate when its time is among the last RING committed.
 *
 * **Ahead.** A device's clock can be minutes off for one record (plausibility admits 15 minutes ahead).
 * A record more than W ahead of both the wall clock and where the stream can have got to since its
 * newest record arrived (newest + wall time since) is held: it waits in `pending` but does not move the
 * stream's newest time, so it neither commits the records before it early nor makes the ones after it
 * late. It is taken as the stream's once another record agrees with it (within W of it) or once the
 * wall time says the stream has had time to reach it.
 *
 * **One instant, two records.** Two records of one stream at one time (a CAN bulk without `time` is
 * stamped with one receive time) are merged as InfluxDB merges their point: the later one's values
 * win, except a raised alarm flag, which stays raised (an alarm in either is seen).
 */

/** Committed times remembered, so a record re-delivered after it was committed is a duplicate, not late. */
export const RING = 32;

export interface Stream {
  /** Records not committed yet, sorted by time, no two at one time. */
  pending: PendingRecords;
  /** The stream's newest time (records held ahead aside); -Infinity before any. */
  newest: number;
  /** Wall time at which `newest` last moved. */
  newestArrivalMs: number;
  /** Wall time of the last call that added a record (the idle flush counts from it). */
  lastArrivalMs: number;
  /** The time of the last committed record: anything at or before it is late. */
  watermark: number;
  /** The times of the last RING committed records: ringN of them, the next written at ringAt. */
  ring: number[];
  ringN: number;
  ringAt: number;
  /**
   * Committed records charging has not taken yet, waiting for the track (derive.ts, "Waits"), oldest first;
   * `heldNew` of them (the last) were added by the call under way (a store writes those).
   */
  held: PendingRecords;
  heldNew: number;
  /** Whether charging took held records in the call under way (a store then removes them). */
  heldTaken: boolean;
}

/**
 * A stream's records held for charging (`Stream.held`) are stored as the pending records of a set of their
 * own (wire.ts, store/commit.ts), `heldSetId` (HELD above the stream's id): a release that does not know it skips
 * it. (Stream ids stay below HELD.)
 */
export const HELD = 128;
export const heldSetId = (streamId: number): number => HELD + streamId;

export interface StreamOptions {
  windowMs: number;
  /** A stream nothing arrived for this long (wall time) has all its pending records committed. */
  streamQuietMs: number;
  maxPending: number;
}

/** A stream with nothing yet; `width`: how many values its records keep (default: the service's plan's, pending.ts). */
export function newStream(streamId: number, width?: number): Stream {
  return {
    pending: new PendingRecords(streamId, width),
    newest: -Infinity,
    newestArrivalMs: -Infinity,
    lastArrivalMs: -Infinity,
    watermark: -Infinity,
    ring: zeros(RING),
    ringN: 0,
    ringAt: 0,
    held: new PendingRecords(streamId, width),
    heldNew: 0,
    heldTaken: false,
  };
}

/** What became of a record handed to a stream. */
export type Taken = 'added' | 'merged' | 'duplicate' | 'late';

/**
 * Adds a record (copied: `r` may be reused); `nowMs` is the wall time. What became of it: 'merged' when
 * it changed the pending record of its instant, 'duplicate' when it changed nothing there or was
 * committed recently.
 */
export function addRecord(s: Stream, r: StreamRecord, nowMs: number, opts: StreamOptions): Taken {
  const t = r.time;
  if (t <= s.watermark) return committedRecently(s, t) ? 'duplicate' : 'late';
  const p = s.pending;
  // Nearly always at the end (a stream comes mostly in order): else a binary search.
  let at = p.length;
  if (at > 0 && t <= p.timeAt(at - 1)) {
    at = p.lowerBound(t);
    if (p.timeAt(at) === t) return p.mergeAt(at, r) ? 'merged' : 'duplicate';
  }
  p.insert(at, r);
  s.lastArrivalMs = nowMs;
  if (!isAhead(s, t, nowMs, opts)) moveNewest(s, t, nowMs);
  else {
    // Held ahead, unless a record held before agrees with it: then the stream has moved there.
    const before = at > 0 ? p.timeAt(at - 1) : undefined;
    const after = at + 1 < p.length ? p.timeAt(at + 1) : undefined;
    if ((before !== undefined && before > s.newest && t - before <= opts.windowMs) || (after !== undefined && after - t <= opts.windowMs)) {
      moveNewest(s, Math.max(t, after !== undefined && after - t <= opts.windowMs ? after : t), nowMs);
    }
  }
  return 'added';
}

function moveNewest(s: Stream, t: number, nowMs: number): void {
  if (t > s.newest) {
    s.newest = t;
    s.newestArrivalMs = nowMs;
  }
}

/**
 * Whether a record at `t` is further ahead than the stream can have moved since its newest arrived, and
 * ahead of the wall clock too (a bulk of records arriving at once is behind the wall clock, not ahead).
 */
function isAhead(s: Stream, t: number, nowMs: number, opts: StreamOptions): boolean {
  if (s.newest === -Infinity) return false;
  return t > Math.max(s.newest + Math.max(0, nowMs - s.newestArrivalMs), nowMs) + opts.windowMs;
}

/** Held records the wall time now lets the stream reach become its newest. */
function settle(s: Stream, nowMs: number, opts: StreamOptions): void {
  const p = s.pending;
  for (let j = p.length - 1; j >= 0 && p.timeAt(j) > s.newest; j--) {
    if (!isAhead(s, p.timeAt(j), nowMs, opts)) {
      moveNewest(s, p.timeAt(j), nowMs);
      return;
    }
  }
}

/**
 * How many of the first pending records are due now: those W behind the stream's newest, every one
 * past `maxPending` (counted as forced by the caller), and, when `idle` (nothing arrived for streamQuietMs of
 * wall time), every one up to the newest but none past the wall clock (a record ahead of it waits for
 * the records before it).
 */
export function due(s: Stream, nowMs: number, opts: StreamOptions, idle: boolean): number {
  settle(s, nowMs, opts);
  const p = s.pending;
  const limit = idle ? (nowMs - s.lastArrivalMs >= opts.streamQuietMs ? Math.min(s.newest, nowMs) : -Infinity) : s.newest - opts.windowMs;
  let n = 0;
  while (n < p.length && p.timeAt(n) <= limit) n++;
  return Math.max(n, p.length - opts.maxPending);
}

/** The pending record at `time` (the next due, in order) is committed: the watermark and the ring follow it. */
export function committed(s: Stream, time: number): void {
  s.watermark = time;
  s.ring[s.ringAt] = time;
  s.ringAt = (s.ringAt + 1) % RING;
  if (s.ringN < RING) s.ringN++;
}

/** Drops the first `n` pending records, committed. */
export function dropCommitted(s: Stream, n: number): void {
  s.pending.dropFirst(n);
}

function committedRecently(s: Stream, t: number): boolean {
  for (let j = 0; j < s.ringN; j++) if (s.ring[j] === t) return true;
  return false;
}
