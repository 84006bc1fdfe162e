import { zeros } from '../pending.js';

/**
 * Where a ring's doubles lie in its slice (frozen: a stored state is read by its layout).
 *
 * - `'ring'`: the count, the slot the next entry goes in, then all `capacity` slots as they lie (a
 *   circular buffer, stale slots included): a fixed size, whatever the count.
 * - `'list'`: the count, then the entries alone, oldest first: as many doubles as it holds.
 */
export type RingLayout = 'ring' | 'list';

/**
 * A bounded list of entries, oldest first, each `stride` doubles (a time and a value, a signed time, a
 * time and a position): the one history a detector's slice keeps (the track's motion and stops, the
 * soc's and the ignition's changes, charging's, the drain's readings). Adding past `capacity` forgets the
 * oldest. `save` / `load` write and read it at a slice's offset in its `layout`, and return where it ends.
 *
 * In memory it is what `load` rebuilds from its doubles (a state read back equals the state written): in
 * the `'ring'` layout the circular buffer itself; in the `'list'` layout the entries alone, from slot 0.
 */
export class Ring {
  /** The entries' doubles: `'ring'`, capacity × stride slots, the next entry at `next`; `'list'`, the entries alone. */
  slots: number[];
  /** Entries held. */
  length = 0;
  /** `'ring'`: the slot the next entry goes in. */
  next = 0;

  constructor(
    readonly capacity: number,
    readonly stride: number,
    readonly layout: RingLayout,
  ) {
    this.slots = layout === 'ring' ? zeros(capacity * stride) : [];
  }

  get full(): boolean {
    return this.length >= this.capacity;
  }

  /** Where the `j`-th oldest entry's doubles begin. */
  private slotOf(j: number): number {
    if (this.layout === 'list') return j * this.stride;
    let k = this.next - this.length + j;
    if (k < 0) k += this.capacity;
    return k * this.stride;
  }

  /** The `k`-th double of the `j`-th oldest entry (0: the oldest). */
  at(j: number, k = 0): number {
    return this.slots[this.slotOf(j) + k]!;
  }

  /** The `k`-th double of the `j`-th newest entry (0: the newest). */
  newest(j: number, k = 0): number {
    return this.slots[this.slotOf(this.length - 1 - j) + k]!;
  }

  /** Adds an entry, newest (its first `stride` of `a`, `b`, `c`); when full, the oldest is forgotten. */
  push(a: number, b = 0, c = 0): void {
    if (this.layout === 'list') {
      if (this.length >= this.capacity) this.dropOldest(1);
      const s = this.slots;
      s.push(a);
      if (this.stride > 1) s.push(b);
      if (this.stride > 2) s.push(c);
      this.length++;
      return;
    }
    const i = this.next * this.stride;
    this.slots[i] = a;
    if (this.stride > 1) this.slots[i + 1] = b;
    if (this.stride > 2) this.slots[i + 2] = c;
    this.next = (this.next + 1) % this.capacity;
    if (this.length < this.capacity) this.length++;
  }

  /** Forgets the `count` oldest entries. */
  dropOldest(count = 1): void {
    if (count <= 0) return;
    if (this.layout === 'list') this.slots.splice(0, count * this.stride);
    this.length -= count;
  }

  /** Takes back the newest entry. */
  dropNewest(): void {
    if (this.layout === 'list') this.slots.length -= this.stride;
    else this.next = (this.next - 1 + this.capacity) % this.capacity;
    this.length--;
  }

  clear(): void {
    if (this.length === 0) return;
    if (this.layout === 'list') this.slots.length = 0;
    else this.next = 0;
    this.length = 0;
  }

  /** Writes its doubles at `at` in its layout; returns where they end. */
  save(out: Float64Array, at: number): number {
    const s = this.slots;
    out[at] = this.length;
    if (this.layout === 'list') {
      for (let i = 0; i < s.length; i++) out[at + 1 + i] = s[i]!;
      return at + 1 + s.length;
    }
    out[at + 1] = this.next;
    for (let i = 0; i < s.length; i++) out[at + 2 + i] = s[i]!;
    return at + 2 + s.length;
  }

  /** Reads, into a fresh ring, the doubles `save` wrote at `at` (a NaN count: none stored there, it stays empty); returns where they end. */
  load(x: (i: number) => number, at: number): number {
    const n = x(at);
    if (this.layout === 'list') {
      const doubles = n === n ? n * this.stride : 0;
      for (let i = 0; i < doubles; i++) this.slots.push(x(at + 1 + i));
      this.length = n === n ? n : 0;
      return at + 1 + doubles;
    }
    const size = this.capacity * this.stride;
    if (n === n) {
      this.length = n;
      this.next = x(at + 1);
      for (let i = 0; i < size; i++) this.slots[i] = x(at + 2 + i);
    }
    return at + 2 + size;
  }
}
