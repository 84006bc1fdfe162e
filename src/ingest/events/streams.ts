import { MAX_VALUES, setValue, valueAt, type StreamRecord } from './inputs.js';

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
  pending: StreamRecord[];
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
}

export interface StreamOptions {
  windowMs: number;
  idleMs: number;
  maxPending: number;
}

/**
 * `n` zeros, as a plain array of doubles: a state's rings are plain arrays, not typed ones (a typed array
 * a ring made each new or restored state cost its backing store and the garbage collector's bookkeeping).
 */
export function zeros(n: number): number[] {
  const a: number[] = [];
  // Filled with a fraction first, so the array holds doubles unboxed from the start (zeros alone would
  // make it an array of small integers, turned into doubles at the first time written).
  for (let i = 0; i < n; i++) a.push(0.5);
  a.fill(0);
  return a;
}

export function newStream(): Stream {
  return { pending: [], newest: -Infinity, newestArrivalMs: -Infinity, lastArrivalMs: -Infinity, watermark: -Infinity, ring: zeros(RING), ringN: 0, ringAt: 0 };
}

/** What became of a record handed to a stream. */
export type Taken = 'added' | 'merged' | 'duplicate' | 'late';

/**
 * Adds a record; `nowMs` is the wall time. What became of it; a record merged into is the pending one,
 * changed in place (`mergedInto` tells which).
 */
export function addRecord(s: Stream, r: StreamRecord, nowMs: number, opts: StreamOptions): Taken {
  const t = r.time;
  if (t <= s.watermark) return committedRecently(s, t) ? 'duplicate' : 'late';
  const p = s.pending;
  const last = p[p.length - 1];
  // Nearly always at the end (a stream comes mostly in order): else a binary search.
  let at = p.length;
  if (last !== undefined && t <= last.time) {
    let lo = 0;
    let hi = p.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (p[mid]!.time < t) lo = mid + 1;
      else hi = mid;
    }
    at = lo;
    const same = p[at];
    if (same !== undefined && same.time === t) {
      mergedInto = same;
      return merge(same, r) ? 'merged' : 'duplicate';
    }
  }
  p.splice(at, 0, r);
  s.lastArrivalMs = nowMs;
  if (!isAhead(s, t, nowMs, opts)) moveNewest(s, t, nowMs);
  else {
    // Held ahead, unless a record held before agrees with it: then the stream has moved there.
    const before = p[at - 1];
    const after = p[at + 1];
    if ((before !== undefined && before.time > s.newest && t - before.time <= opts.windowMs) || (after !== undefined && after.time - t <= opts.windowMs)) {
      moveNewest(s, Math.max(t, after !== undefined && after.time - t <= opts.windowMs ? after.time : t), nowMs);
    }
  }
  return 'added';
}

/** The pending record the last `addRecord` that answered 'merged' or 'duplicate' of a pending one merged into. */
export let mergedInto: StreamRecord | undefined;

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
  for (let j = p.length - 1; j >= 0 && p[j]!.time > s.newest; j--) {
    if (!isAhead(s, p[j]!.time, nowMs, opts)) {
      moveNewest(s, p[j]!.time, nowMs);
      return;
    }
  }
}

/**
 * How many of the first pending records are due now: those W behind the stream's newest, every one
 * past `maxPending` (counted as forced by the caller), and, when `idle` (nothing arrived for idleMs of
 * wall time), every one up to the newest but none past the wall clock (a record ahead of it waits for
 * the records before it).
 */
export function due(s: Stream, nowMs: number, opts: StreamOptions, idle: boolean): number {
  settle(s, nowMs, opts);
  const p = s.pending;
  const limit = idle ? (nowMs - s.lastArrivalMs >= opts.idleMs ? Math.min(s.newest, nowMs) : -Infinity) : s.newest - opts.windowMs;
  let n = 0;
  while (n < p.length && p[n]!.time <= limit) n++;
  return Math.max(n, p.length - opts.maxPending);
}

/** A pending record (the next due, in order) is committed: the watermark and the ring follow it. */
export function committed(s: Stream, r: StreamRecord): void {
  s.watermark = r.time;
  s.ring[s.ringAt] = r.time;
  s.ringAt = (s.ringAt + 1) % RING;
  if (s.ringN < RING) s.ringN++;
}

/** Drops the first `n` pending records, committed. */
export function dropCommitted(s: Stream, n: number): void {
  const p = s.pending;
  p.copyWithin(0, n);
  p.length -= n;
}

function committedRecently(s: Stream, t: number): boolean {
  for (let j = 0; j < s.ringN; j++) if (s.ring[j] === t) return true;
  return false;
}

/** Merges `r` into `into` (one stream, one time): `r`'s values win, but a raised alarm stays raised. Whether anything changed. */
function merge(into: StreamRecord, r: StreamRecord): boolean {
  let changed = false;
  // (A position is both coordinates or neither, recordOf: so it is never half from each record.)
  for (let i = 0; i < MAX_VALUES; i++) {
    const x = valueAt(r, i);
    if (x === x && !Object.is(x, valueAt(into, i))) {
      setValue(into, i, x);
      changed = true;
    }
  }
  const mask = into.alarmMask | r.alarmMask;
  const raised = into.alarmValues | r.alarmValues;
  if (mask !== into.alarmMask || raised !== into.alarmValues) {
    into.alarmMask = mask;
    into.alarmValues = raised;
    changed = true;
  }
  if (changed) into.merged = true;
  return changed;
}
