/**
 * The highest (or lowest) of the readings within a window of time before the newest: what a slow fall
 * or rise is measured from (charge draining while parked, `drain.ts`; fuel drops and refuels, `fuel.ts`).
 *
 * A monotonic queue: the readings that can still become the extreme once older ones leave the window,
 * oldest first, each strictly beyond the next (for the highest: higher). A reading removes from the back
 * every one it equals or passes (of equal levels the latest counts: a level that stood still before it
 * fell began to fall at its last reading); readings older than the window leave at the front. So the
 * front is always the extreme of every reading within the window, and nothing is forgotten that could
 * become it: a running extreme reset when it ages out (an older 80 hiding a fall from 79) cannot happen.
 *
 * Held readings are the levels a fall (rise) passes through without reaching the threshold: a handful,
 * since each lies between the extreme and the threshold below it. Past `capacity` (a fall in steps finer
 * than the threshold over capacity), the newest held gives way to the reading, which only ever makes a
 * later extreme lower (a fall smaller): the queue may tell a fall late, never one that was not.
 */
export class WindowedExtreme {
  times: number[] = [];
  values: number[] = [];

  constructor(
    readonly kind: 'highest' | 'lowest',
    readonly capacity: number,
  ) {}

  get length(): number {
    return this.times.length;
  }

  /** Drops the readings before `from` (the window's start). */
  expire(from: number): void {
    let k = 0;
    while (k < this.times.length && this.times[k]! < from) k++;
    if (k > 0) {
      this.times.splice(0, k);
      this.values.splice(0, k);
    }
  }

  /** The extreme's value and time, of the readings held (undefined when none). */
  get value(): number | undefined {
    return this.values[0];
  }

  get time(): number | undefined {
    return this.times[0];
  }

  /** Adds a reading, newer than every one held. */
  push(time: number, value: number): void {
    const beyond = this.kind === 'highest' ? (a: number, b: number) => a > b : (a: number, b: number) => a < b;
    while (this.values.length > 0 && !beyond(this.values[this.values.length - 1]!, value)) {
      this.values.pop();
      this.times.pop();
    }
    if (this.values.length >= this.capacity) {
      this.values.splice(this.values.length - 1, 1);
      this.times.splice(this.times.length - 1, 1);
    }
    this.times.push(time);
    this.values.push(value);
  }

  clear(): void {
    this.times = [];
    this.values = [];
  }

  /** The readings held, oldest first, as [time, value]. */
  entries(): Array<[number, number]> {
    return this.times.map((t, i) => [t, this.values[i]!]);
  }
}
