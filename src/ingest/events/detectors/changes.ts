import { Ring } from './ring.js';

/**
 * The last few changes of one value over time (time, value; newest last), for a detector that reads
 * another's state at a record time the other has already passed: the value at that time, and whether the
 * changes kept reach back to it (beyond them the read is not exact, and derive.ts has it corrected).
 * Stored as a ring in the `'list'` layout (`ring.ts`): the count, then (time, value) pairs.
 */
export class Changes {
  readonly ring: Ring;

  constructor(readonly capacity: number) {
    this.ring = new Ring(capacity, 2, 'list');
  }

  /** The value became `value` at `time` (at or after every change kept). */
  note(time: number, value: number): void {
    const r = this.ring;
    if (r.length > 0 && r.newest(0, 1) === value) return;
    r.push(time, value);
  }

  /** The value at `time`: of the last change at or before it; before every change kept, `before`. */
  at(time: number, before: number): number {
    const r = this.ring;
    for (let j = 0; j < r.length; j++) if (r.newest(j, 0) <= time) return r.newest(j, 1);
    return before;
  }

  /** Whether the changes kept reach back to `time` (none was forgotten, or the oldest kept is at or before it). */
  covers(time: number): boolean {
    return !this.ring.full || this.ring.at(0, 0) <= time;
  }

  /** Its doubles: the count, then (time, value) pairs. */
  save(out: Float64Array, at: number): number {
    return this.ring.save(out, at);
  }

  /** From doubles `save` wrote at `at` (NaN there: none kept). */
  load(x: (i: number) => number, at: number): this {
    this.ring.load(x, at);
    return this;
  }
}
