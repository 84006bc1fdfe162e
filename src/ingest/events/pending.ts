import { MAX_VALUES, valueAt, type StreamRecord } from './inputs.js';

/**
 * A stream's pending records as columns: one plain array of doubles, CELLS doubles a record (its time,
 * its MAX_VALUES values, its alarms' mask and values, whether a record merged into it), not one object a
 * record. A record object costs its allocation and, every number in it being a double, a box for each:
 * several allocations per record that waits a window and is then thrown away, which the garbage collector
 * spent more on than the detectors did (`docs/benchmarks/history.md`, round 11). Records are read into an
 * object the caller keeps and reuses (`read`), and written from one (`insert`, `mergeAt`).
 *
 * The records are `cells[(start + i) * CELLS …]` for i below `length`, sorted by time, no two at one
 * time (the stream keeps them so, streams.ts). Committing drops from the front by moving `start`; the
 * array is compacted when its end is reached, and replaced by a smaller one when a burst has passed,
 * so a vehicle's pending records cost what it holds now, not the most it ever held.
 */
const CELLS = 3 + MAX_VALUES + 1;
const TIME = 0;
const VALUES = 1;
const MASK = 1 + MAX_VALUES;
const RAISED = 2 + MAX_VALUES;
const MERGED = 3 + MAX_VALUES;
/** Records room is made for at first, and the fewest a shrunk array keeps room for. */
const FIRST_ROOM = 8;

/** `n` zeros as a plain array of unboxed doubles (a fraction first: zeros alone would make small integers). */
export function zeros(n: number): number[] {
  const a: number[] = [];
  for (let i = 0; i < n; i++) a.push(0.5);
  a.fill(0);
  return a;
}

/** The cells of a buffer that never held a record: none (most of a vehicle's held buffers stay so). */
const NO_CELLS: number[] = [];

export class PendingRecords {
  private cells: number[] = NO_CELLS;
  private start = 0;
  /** How many records are pending. */
  length = 0;

  constructor(
    /** The stream's id: each record read is of it. */
    readonly streamId: number,
  ) {}

  /** The pending records of a list sorted by time (a restored state's). */
  static of(streamId: number, records: readonly StreamRecord[]): PendingRecords {
    const p = new PendingRecords(streamId);
    for (const r of records) p.insert(p.length, r);
    return p;
  }

  timeAt(i: number): number {
    return this.cells[(this.start + i) * CELLS + TIME]!;
  }

  mergedAt(i: number): boolean {
    return this.cells[(this.start + i) * CELLS + MERGED] === 1;
  }

  /** Record `i` into `into` (every field written); returns it. */
  read(i: number, into: StreamRecord): StreamRecord {
    const c = this.cells;
    const o = (this.start + i) * CELLS;
    into.stream = this.streamId;
    into.time = c[o + TIME]!;
    into.v0 = c[o + VALUES]!;
    into.v1 = c[o + VALUES + 1]!;
    into.v2 = c[o + VALUES + 2]!;
    into.v3 = c[o + VALUES + 3]!;
    into.v4 = c[o + VALUES + 4]!;
    into.v5 = c[o + VALUES + 5]!;
    into.v6 = c[o + VALUES + 6]!;
    into.v7 = c[o + VALUES + 7]!;
    into.v8 = c[o + VALUES + 8]!;
    into.v9 = c[o + VALUES + 9]!;
    into.v10 = c[o + VALUES + 10]!;
    into.v11 = c[o + VALUES + 11]!;
    into.v12 = c[o + VALUES + 12]!;
    into.v13 = c[o + VALUES + 13]!;
    into.alarmMask = c[o + MASK]!;
    into.alarmValues = c[o + RAISED]!;
    into.merged = c[o + MERGED] === 1;
    return into;
  }

  /** Every pending record as an object of its own (tests, and a state rewritten whole). */
  records(): StreamRecord[] {
    const out: StreamRecord[] = [];
    for (let i = 0; i < this.length; i++) out.push(this.read(i, { stream: 0, time: 0, v0: 0, v1: 0, v2: 0, v3: 0, v4: 0, v5: 0, v6: 0, v7: 0, v8: 0, v9: 0, v10: 0, v11: 0, v12: 0, v13: 0, alarmMask: 0, alarmValues: 0, merged: false }));
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
    if ((this.start + this.length + 1) * CELLS > this.cells.length) this.makeRoom();
    const c = this.cells;
    const o = (this.start + at) * CELLS;
    // Nearly always at the end (a stream comes mostly in order); else the tail moves a record back.
    for (let k = (this.start + this.length) * CELLS - 1; k >= o; k--) c[k + CELLS] = c[k]!;
    c[o + TIME] = r.time;
    c[o + VALUES] = r.v0;
    c[o + VALUES + 1] = r.v1;
    c[o + VALUES + 2] = r.v2;
    c[o + VALUES + 3] = r.v3;
    c[o + VALUES + 4] = r.v4;
    c[o + VALUES + 5] = r.v5;
    c[o + VALUES + 6] = r.v6;
    c[o + VALUES + 7] = r.v7;
    c[o + VALUES + 8] = r.v8;
    c[o + VALUES + 9] = r.v9;
    c[o + VALUES + 10] = r.v10;
    c[o + VALUES + 11] = r.v11;
    c[o + VALUES + 12] = r.v12;
    c[o + VALUES + 13] = r.v13;
    c[o + MASK] = r.alarmMask;
    c[o + RAISED] = r.alarmValues;
    c[o + MERGED] = r.merged ? 1 : 0;
    this.length++;
  }

  /**
   * Merges `r` into record `i` (one stream, one time), as InfluxDB merges their point: `r`'s values win,
   * but a raised alarm stays raised. Whether anything changed (then the record is marked merged).
   */
  mergeAt(i: number, r: StreamRecord): boolean {
    const c = this.cells;
    const o = (this.start + i) * CELLS;
    let changed = false;
    // (A position is both coordinates or neither, recordOf: so it is never half from each record.)
    for (let k = 0; k < MAX_VALUES; k++) {
      const x = valueAt(r, k);
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
    if (this.cells.length > 4 * FIRST_ROOM * CELLS && this.length * CELLS * 4 < this.cells.length) this.resize(Math.max(FIRST_ROOM, 2 * this.length));
  }

  /** Room at the end for one more: the records moved to the front, or a larger array. */
  private makeRoom(): void {
    if (this.cells === NO_CELLS) {
      this.cells = zeros(FIRST_ROOM * CELLS);
      return;
    }
    if (this.start * CELLS < this.cells.length / 2) {
      this.resize(2 * (this.cells.length / CELLS));
      return;
    }
    // A loop, not copyWithin: the built-in is a call into the runtime, which costs more than the few records moved.
    const c = this.cells;
    const from = this.start * CELLS;
    for (let k = 0; k < this.length * CELLS; k++) c[k] = c[from + k]!;
    this.start = 0;
  }

  private resize(records: number): void {
    const next = zeros(records * CELLS);
    const from = this.start * CELLS;
    for (let k = 0; k < this.length * CELLS; k++) next[k] = this.cells[from + k]!;
    this.cells = next;
    this.start = 0;
  }
}
