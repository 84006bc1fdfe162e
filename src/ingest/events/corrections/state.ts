import type { Slice } from '../detectors/slice.js';

/**
 * What a vehicle's state keeps for corrections (README.md beside this file): which epoch its outputs are
 * emitted in, when its last checkpoint was taken, from when a correction is due, what its detectors read of
 * the other stream before that stream had passed the time (premature reads: each checked once the stream
 * passes it, and corrected if it shows something else), and how far charging, which waits for the track,
 * took the soc stream's records (derive.ts, "Waits").
 */
export interface LateState {
  /** Checkpoints taken since the state's corrections began; outputs are emitted in this epoch. NaN: none yet. */
  epoch: number;
  /** The checkpoint interval the last checkpoint was taken in (its cut / EVENTS_CHECKPOINT_INTERVAL, floored). */
  bucket: number;
  /** The cut of the first checkpoint: a record at or before it cannot be corrected (-Infinity: a vehicle's first). */
  firstCut: number;
  /** A correction is due from this record time (Infinity: none). */
  correctFrom: number;
  /** What was read early of the track's stream (charging and the drain let go after waiting), and of the soc's (trips emitted before it came). */
  track: Awaited;
  soc: Awaited;
  /** The last of the soc stream's records charging took (-Infinity: none); those after it up to the watermark wait in `Stream.held`. */
  chargingThrough: number;
}

/** Reads of a stream made before it passed there. */
export interface Awaited {
  /** The earliest and latest record time read (Infinity / -Infinity: none). */
  from: number;
  to: number;
  /** What the reads took the stream to be (a code, or a time: `notePremature`'s merge; NaN: nothing to check, correct once passed; -1: they differed). */
  assumed: number;
}

const freshAwaited = (): Awaited => ({ from: Infinity, to: -Infinity, assumed: NaN });

export function freshLate(): LateState {
  return { epoch: NaN, bucket: -Infinity, firstCut: -Infinity, correctFrom: Infinity, track: freshAwaited(), soc: freshAwaited(), chargingThrough: -Infinity };
}

/**
 * Whether a state's corrections have begun (its `epoch` a number). A derivation of a state whose have not
 * begins them (derive.ts `begin`): the state as it was before that call is epoch 0's checkpoint.
 */
export const correctionsBegun = (s: LateState): boolean => s.epoch === s.epoch;

/** A correction is due from `time` (the earliest asked for wins). */
export function correctFrom(s: LateState, time: number): void {
  if (time < s.correctFrom) s.correctFrom = time;
}

/**
 * A detector read the `which` stream's state from `from` to `to` before the stream had passed there, taking
 * it to be `assumed`. Reads taking it alike (`merge: 'equal'`: the same code, else -1, they differed) or
 * from the earliest (`'earliest'`: a time, the least kept) are checked together once the stream passes the
 * latest of them (`awaitPassed`).
 */
export function notePremature(s: LateState, which: 'track' | 'soc', from: number, to: number, assumed: number, merge: 'equal' | 'earliest' = 'equal'): void {
  const a = s[which];
  if (a.from === Infinity) {
    a.from = from;
    a.to = to;
    a.assumed = assumed;
    return;
  }
  if (from < a.from) a.from = from;
  if (to > a.to) a.to = to;
  if (merge === 'earliest') a.assumed = Math.min(a.assumed, assumed);
  else if (!Object.is(a.assumed, assumed)) a.assumed = -1;
}

/**
 * The `which` stream has passed `through`: if it passed its premature reads, `held(from, to, assumed)` says
 * whether what they took it to be held; a correction is due from the first read where not.
 */
export function awaitPassed(s: LateState, which: 'track' | 'soc', through: number, held: (from: number, to: number, assumed: number) => boolean): void {
  const a = s[which];
  if (a.from === Infinity || through < a.to) return;
  if (!(a.assumed === a.assumed && a.assumed !== -1 && held(a.from, a.to, a.assumed))) correctFrom(s, a.from);
  a.from = Infinity;
  a.to = -Infinity;
  a.assumed = NaN;
}

/** Eleven doubles: epoch, bucket, firstCut, correctFrom; the track's reads (from, to, assumed), the soc's; chargingThrough. */
export const LATE_SLICE: Slice<LateState> = {
  id: 15,
  name: 'late',
  fresh: freshLate,
  save(s, out, at) {
    out[at] = s.epoch;
    out[at + 1] = s.bucket;
    out[at + 2] = s.firstCut;
    out[at + 3] = s.correctFrom;
    out[at + 4] = s.track.from;
    out[at + 5] = s.track.to;
    out[at + 6] = s.track.assumed;
    out[at + 7] = s.soc.from;
    out[at + 8] = s.soc.to;
    out[at + 9] = s.soc.assumed;
    out[at + 10] = s.chargingThrough;
    return at + 11;
  },
  load(x) {
    const s = freshLate();
    s.epoch = x(0);
    if (x(1) === x(1)) s.bucket = x(1);
    if (x(2) === x(2)) s.firstCut = x(2);
    if (x(3) === x(3)) s.correctFrom = x(3);
    if (x(4) === x(4)) s.track = { from: x(4), to: x(5), assumed: x(6) };
    if (x(7) === x(7)) s.soc = { from: x(7), to: x(8), assumed: x(9) };
    if (x(10) === x(10)) s.chargingThrough = x(10);
    return s;
  },
};
