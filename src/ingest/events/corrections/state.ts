import type { Slice } from '../detectors/context.js';

/**
 * What a vehicle's state keeps for corrections (README.md beside this file): which epoch its outputs are
 * told in, when its last checkpoint was taken, from when a correction is due, and what its detectors read
 * of another stream before that stream had passed the time (premature reads, each corrected once the
 * stream passes it and shows something else). Also, per stream, how far the detectors that wait for
 * another stream (`waits` in derive.ts) have taken its records.
 */
export interface LateState {
  /** Checkpoints taken since the state's corrections began; outputs are told in this epoch. NaN: none yet. */
  epoch: number;
  /** The checkpoint interval the last checkpoint was taken in (its cut / EVENTS_CHECKPOINT_INTERVAL, floored). */
  bucket: number;
  /** The cut of the first checkpoint: a record at or before it cannot be corrected (-Infinity: a vehicle's first). */
  firstCut: number;
  /** A correction is due from this record time (Infinity: none). */
  correctFrom: number;
  /** Per stream id: its premature reads and its waiting records' progress (absent: none). */
  streams: StreamLate[];
}

export interface StreamLate {
  /** The earliest and latest record time another stream's detector read of this one before it passed there (Infinity / -Infinity: none). */
  awaitFrom: number;
  awaitTo: number;
  /** What the reads took this stream's state to be (`assumption` codes; NaN: nothing to check, correct once passed; -1: they differed). */
  assumed: number;
  /** The last of this stream's records the waiting detectors took (-Infinity: none); those after it up to the watermark wait. */
  waitedThrough: number;
}

export const freshStreamLate = (): StreamLate => ({ awaitFrom: Infinity, awaitTo: -Infinity, assumed: NaN, waitedThrough: -Infinity });

export function freshLate(): LateState {
  return { epoch: NaN, bucket: -Infinity, firstCut: -Infinity, correctFrom: Infinity, streams: [] };
}

export function streamLate(s: LateState, streamId: number): StreamLate {
  return (s.streams[streamId] ??= freshStreamLate());
}

/** A correction is due from `time` (the earliest asked for wins). */
export function correctFrom(s: LateState, time: number): void {
  if (time < s.correctFrom) s.correctFrom = time;
}

/**
 * A detector read stream `streamId`'s state from `from` to `to` before the stream had passed there, taking
 * it to be `assumed` (NaN: nothing to check). Reads taking it alike (`merge: 'equal'`: the same code, else
 * -1, they differed) or from the earliest (`'earliest'`: a time, the least kept) are checked together once
 * the stream passes the latest of them (`awaitPassed`).
 */
export function notePremature(s: LateState, streamId: number, from: number, to: number, assumed: number, merge: 'equal' | 'earliest' = 'equal'): void {
  const st = streamLate(s, streamId);
  if (st.awaitFrom === Infinity) {
    st.awaitFrom = from;
    st.awaitTo = to;
    st.assumed = assumed;
    return;
  }
  if (from < st.awaitFrom) st.awaitFrom = from;
  if (to > st.awaitTo) st.awaitTo = to;
  if (merge === 'earliest') st.assumed = Math.min(st.assumed, assumed);
  else if (!Object.is(st.assumed, assumed)) st.assumed = -1;
}

/**
 * The stream has passed `through`: if it passed its premature reads, `held(from, to, assumed)` says whether
 * what they took it to be held (undefined: cannot tell); a correction is due from the first read where not.
 */
export function awaitPassed(s: LateState, streamId: number, through: number, held: (from: number, to: number, assumed: number) => boolean): void {
  const st = s.streams[streamId];
  if (st === undefined || st.awaitFrom === Infinity || through < st.awaitTo) return;
  if (!(st.assumed === st.assumed && st.assumed !== -1 && held(st.awaitFrom, st.awaitTo, st.assumed))) correctFrom(s, st.awaitFrom);
  st.awaitFrom = Infinity;
  st.awaitTo = -Infinity;
  st.assumed = NaN;
}

/** Stored after its four numbers: a count of streams, then each stream's id and four numbers. */
export const LATE_SLICE: Slice<LateState> = {
  id: 15,
  name: 'late',
  fresh: freshLate,
  save(s, out, at) {
    out[at] = s.epoch;
    out[at + 1] = s.bucket;
    out[at + 2] = s.firstCut;
    out[at + 3] = s.correctFrom;
    let n = 0;
    let o = at + 5;
    s.streams.forEach((st, id) => {
      if (st === undefined) return;
      out[o] = id;
      out[o + 1] = st.awaitFrom;
      out[o + 2] = st.awaitTo;
      out[o + 3] = st.assumed;
      out[o + 4] = st.waitedThrough;
      o += 5;
      n++;
    });
    out[at + 4] = n;
    return o;
  },
  load(x) {
    const s = freshLate();
    s.epoch = x(0);
    if (x(1) === x(1)) s.bucket = x(1);
    if (x(2) === x(2)) s.firstCut = x(2);
    if (x(3) === x(3)) s.correctFrom = x(3);
    const n = x(4);
    for (let j = 0; j < (n === n ? n : 0); j++) {
      const o = 5 + 5 * j;
      s.streams[x(o)] = { awaitFrom: x(o + 1), awaitTo: x(o + 2), assumed: x(o + 3), waitedThrough: x(o + 4) };
    }
    return s;
  },
};
