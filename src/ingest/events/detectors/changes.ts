/**
 * The last few changes of one value over time (time, value; newest last), for a detector that reads
 * another's state at a record time the other has already passed: the value at that time, and whether the
 * changes kept reach back to it (beyond them the read is not exact, and derive.ts has it corrected).
 */
export class Changes {
  times: number[] = [];
  values: number[] = [];

  constructor(readonly capacity: number) {}

  /** The value became `value` at `time` (at or after every change kept). */
  note(time: number, value: number): void {
    if (this.values.length > 0 && this.values[this.values.length - 1] === value) return;
    this.times.push(time);
    this.values.push(value);
    if (this.times.length > this.capacity) {
      this.times.shift();
      this.values.shift();
    }
  }

  /** The value at `time`: of the last change at or before it; before every change kept, `before`. */
  at(time: number, before: number): number {
    for (let j = this.times.length - 1; j >= 0; j--) if (this.times[j]! <= time) return this.values[j]!;
    return before;
  }

  /** Whether the changes kept reach back to `time` (none was forgotten, or the oldest kept is at or before it). */
  covers(time: number): boolean {
    return this.times.length < this.capacity || this.times[0]! <= time;
  }

  /** Its doubles: the count, then (time, value) pairs. */
  save(out: Float64Array, at: number): number {
    out[at] = this.times.length;
    for (let j = 0; j < this.times.length; j++) {
      out[at + 1 + 2 * j] = this.times[j]!;
      out[at + 2 + 2 * j] = this.values[j]!;
    }
    return at + 1 + 2 * this.times.length;
  }

  /** From doubles `save` wrote at `at` (NaN there: none kept). */
  load(x: (i: number) => number, at: number): this {
    const n = x(at);
    for (let j = 0; j < (n === n ? n : 0); j++) {
      this.times.push(x(at + 1 + 2 * j));
      this.values.push(x(at + 2 + 2 * j));
    }
    return this;
  }
}
