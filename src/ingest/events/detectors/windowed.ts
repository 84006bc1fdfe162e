import { Ring } from './ring.js';

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
  /** The readings held, (time, value) oldest first: a ring in the `'list'` layout (`ring.ts`), as the drain stores it. */
  readonly held: Ring;

  constructor(
    readonly kind: 'highest' | 'lowest',
    readonly capacity: number,
  ) {
    this.held = new Ring(capacity, 2, 'list');
  }

  get length(): number {
    return this.held.length;
  }

  /** Drops the readings before `from` (the window's start). */
  expire(from: number): void {
    const h = this.held;
    let k = 0;
    while (k < h.length && h.at(k, 0) < from) k++;
    h.dropOldest(k);
  }

  /** The extreme's value and time, of the readings held (undefined when none). */
  get value(): number | undefined {
    return this.held.length > 0 ? this.held.at(0, 1) : undefined;
  }

  get time(): number | undefined {
    return this.held.length > 0 ? this.held.at(0, 0) : undefined;
  }

  /** Adds a reading, newer than every one held. */
  push(time: number, value: number): void {
    const h = this.held;
    const highest = this.kind === 'highest';
    while (h.length > 0 && !(highest ? h.newest(0, 1) > value : h.newest(0, 1) < value)) h.dropNewest();
    if (h.full) h.dropNewest();
    h.push(time, value);
  }

  clear(): void {
    this.held.clear();
  }

  /** The readings held, oldest first, as [time, value]. */
  entries(): Array<[number, number]> {
    return Array.from({ length: this.held.length }, (_, i): [number, number] => [this.held.at(i, 0), this.held.at(i, 1)]);
  }
}
