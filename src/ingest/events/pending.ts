import { MAX_VALUES, STREAM_BY_ID, valuesInto, type StreamRecord } from './inputs.js';

/**
 * A stream's pending records as columns: one plain array of doubles, `stride` doubles a record (its time,
 * its alarms' mask and values, whether a record merged into it, then its stream's values: as many as its
 * plan's fields, so a GPS record is not as wide as a CAN record), not one object a record. A record object costs its allocation and, every number in it being a double, a box for each:
 * several allocations per record that waits a window and is then thrown away, which the garbage collector
 * spent more on than the detectors did (`docs/benchmarks/history.md`, round 11). Records are read into an
 * object the caller keeps and reuses (`read`), and written from one (`insert`, `mergeAt`).
 *
 * The records are `cells[(start + i) * stride …]` for i below `length`, sorted by time, no two at one
 * time (the stream keeps them so, streams.ts). Committing drops from the front by moving `start`; the
 * array is compacted when its end is reached, and replaced by a smaller one when a burst has passed,
 * so a vehicle's pending records cost what it holds now, not the most it ever held.
 */
const TIME = 0;
const MASK = 1;
const RAISED = 2;
const MERGED = 3;
const VALUES = 4;
/** Records room is made for at first, and the fewest a shrunk array keeps room for. */
const FIRST_ROOM = 8;

/** `n` zeros as a plain array of unboxed doubles (a fraction first: zeros alone would make small integers). */
export function zeros(n: number): number[] {
  const a: number[] = [];
  for (let i = 0; i < n; i++) a.push(0.5);
  a.fill(0);
  return a;
}

/** A record's values as read for `mergeAt` (reused: never re-entered). */
const VALUES_OF = new Float64Array(MAX_VALUES);

/** The cells of a buffer that never held a record: none (most of a vehicle's held buffers stay so). */
const NO_CELLS: number[] = [];

export class PendingRecords {
  private cells: number[] = NO_CELLS;
  private start = 0;
  /** How many records are pending. */
  length = 0;

  /** Doubles a record: VALUES, then its `width` values. */
  private readonly stride: number;

  constructor(
    /** The stream's id: each record read is of it. */
    readonly streamId: number,
    /** How many values a record keeps (its plan's fields; a stream the service does not know: MAX_VALUES). */
    readonly width: number = STREAM_BY_ID.get(streamId)?.fields.length ?? MAX_VALUES,
  ) {
    this.stride = VALUES + width;
  }

  /** The pending records of a list sorted by time (a restored state's). */
  static of(streamId: number, records: readonly StreamRecord[], width?: number): PendingRecords {
    const p = new PendingRecords(streamId, width);
    for (const r of records) p.insert(p.length, r);
    return p;
  }

  timeAt(i: number): number {
    return this.cells[(this.start + i) * this.stride + TIME]!;
  }

  mergedAt(i: number): boolean {
    return this.cells[(this.start + i) * this.stride + MERGED] === 1;
  }

  /** Record `i` into `into` (every field written; those beyond the stream's width NaN); returns it. */
  read(i: number, into: StreamRecord): StreamRecord {
    const c = this.cells;
    const w = this.width;
    const o = (this.start + i) * this.stride;
    const v = o + VALUES;
    into.stream = this.streamId;
    into.time = c[o + TIME]!;
    into.v0 = w > 0 ? c[v]! : NaN;
    into.v1 = w > 1 ? c[v + 1]! : NaN;
    into.v2 = w > 2 ? c[v + 2]! : NaN;
    into.v3 = w > 3 ? c[v + 3]! : NaN;
    into.v4 = w > 4 ? c[v + 4]! : NaN;
    into.v5 = w > 5 ? c[v + 5]! : NaN;
    into.v6 = w > 6 ? c[v + 6]! : NaN;
    into.v7 = w > 7 ? c[v + 7]! : NaN;
    into.v8 = w > 8 ? c[v + 8]! : NaN;
    into.v9 = w > 9 ? c[v + 9]! : NaN;
    into.v10 = w > 10 ? c[v + 10]! : NaN;
    into.v11 = w > 11 ? c[v + 11]! : NaN;
    into.v12 = w > 12 ? c[v + 12]! : NaN;
    into.v13 = w > 13 ? c[v + 13]! : NaN;
    into.v14 = w > 14 ? c[v + 14]! : NaN;
    into.alarmMask = c[o + MASK]!;
    into.alarmValues = c[o + RAISED]!;
    into.merged = c[o + MERGED] === 1;
    return into;
  }

  /** Every pending record as an object of its own (tests, and a state rewritten whole). */
  records(): StreamRecord[] {
    const out: StreamRecord[] = [];
    for (let i = 0; i < this.length; i++) out.push(this.read(i, { stream: 0, time: 0, v0: 0, v1: 0, v2: 0, v3: 0, v4: 0, v5: 0, v6: 0, v7: 0, v8: 0, v9: 0, v10: 0, v11: 0, v12: 0, v13: 0, v14: 0, alarmMask: 0, alarmValues: 0, merged: false }));
    return out;
  }

  /** The first index whose time is at or after `t` (`length` when none is). */
  lowerBound(t: number): number {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.timeAt(mid) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** `r` as record `at`, the records from `at` on moved one place back. */
  insert(at: number, r: StreamRecord): void {
    const stride = this.stride;
    if ((this.start + this.length + 1) * stride > this.cells.length) this.makeRoom();
    const c = this.cells;
    const o = (this.start + at) * stride;
    // Nearly always at the end (a stream comes mostly in order); else the tail moves a record back.
    for (let k = (this.start + this.length) * stride - 1; k >= o; k--) c[k + stride] = c[k]!;
    c[o + TIME] = r.time;
    c[o + MASK] = r.alarmMask;
    c[o + RAISED] = r.alarmValues;
    c[o + MERGED] = r.merged ? 1 : 0;
    const w = this.width;
    const v = o + VALUES;
    if (w > 0) c[v] = r.v0;
    if (w > 1) c[v + 1] = r.v1;
    if (w > 2) c[v + 2] = r.v2;
    if (w > 3) c[v + 3] = r.v3;
    if (w > 4) c[v + 4] = r.v4;
    if (w > 5) c[v + 5] = r.v5;
    if (w > 6) c[v + 6] = r.v6;
    if (w > 7) c[v + 7] = r.v7;
    if (w > 8) c[v + 8] = r.v8;
    if (w > 9) c[v + 9] = r.v9;
    if (w > 10) c[v + 10] = r.v10;
    if (w > 11) c[v + 11] = r.v11;
    if (w > 12) c[v + 12] = r.v12;
    if (w > 13) c[v + 13] = r.v13;
    if (w > 14) c[v + 14] = r.v14;
    this.length++;
  }

  /**
   * Merges `r` into record `i` (one stream, one time), as InfluxDB merges their point: `r`'s values win,
   * but a raised alarm stays raised. Whether anything changed (then the record is marked merged).
   */
  mergeAt(i: number, r: StreamRecord): boolean {
    const c = this.cells;
    const o = (this.start + i) * this.stride;
    let changed = false;
    const v = valuesInto(r, VALUES_OF);
    // (A position is both coordinates or neither, recordOf: so it is never half from each record.)
    for (let k = 0; k < this.width; k++) {
      const x = v[k]!;
      if (x === x && !Object.is(x, c[o + VALUES + k])) {
        c[o + VALUES + k] = x;
        changed = true;
      }
    }
    const mask = c[o + MASK]! | r.alarmMask;
    const raised = c[o + RAISED]! | r.alarmValues;
    if (mask !== c[o + MASK] || raised !== c[o + RAISED]) {
      c[o + MASK] = mask;
      c[o + RAISED] = raised;
      changed = true;
    }
    if (changed) c[o + MERGED] = 1;
    return changed;
  }

  /** Drops the first `n` records (committed). */
  dropFirst(n: number): void {
    this.start += n;
    this.length -= n;
    if (this.length === 0) this.start = 0;
    // A burst has passed (a bulk of minutes of records): room for a quarter of what the array holds is enough.
    if (this.cells.length > 4 * FIRST_ROOM * this.stride && this.length * this.stride * 4 < this.cells.length) this.resize(Math.max(FIRST_ROOM, 2 * this.length));
  }

  /** Room at the end for one more: the records moved to the front, or a larger array. */
  private makeRoom(): void {
    if (this.cells === NO_CELLS) {
      this.cells = zeros(FIRST_ROOM * this.stride);
      return;
    }
    if (this.start * this.stride < this.cells.length / 2) {
      this.resize(2 * (this.cells.length / this.stride));
      return;
    }
    // A loop, not copyWithin: the built-in is a call into the runtime, which costs more than the few records moved.
    const c = this.cells;
    const from = this.start * this.stride;
    for (let k = 0; k < this.length * this.stride; k++) c[k] = c[from + k]!;
    this.start = 0;
  }

  private resize(records: number): void {
    const next = zeros(records * this.stride);
    const from = this.start * this.stride;
    for (let k = 0; k < this.length * this.stride; k++) next[k] = this.cells[from + k]!;
    this.cells = next;
    this.start = 0;
  }
}
