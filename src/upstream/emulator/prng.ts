/**
 * Reproducible randomness. Two tools: `mulberry32` for sequences (the feed's choices), and `hash32` /
 * `unitAt` for random access, so that the fleet can answer "what was vehicle 7 doing at time t" without
 * replaying everything before t.
 */

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uint32 hash of a list of numbers (integers up to 2^53, negative allowed). */
export function hash32(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    // Both 32-bit halves, so epoch milliseconds that differ only above bit 32 still differ.
    const lo = p >>> 0;
    const hi = Math.floor(p / 4294967296) >>> 0;
    h = Math.imul(h ^ lo, 0x01000193);
    h ^= h >>> 15;
    h = Math.imul(h ^ hi, 0x85ebca6b);
    h ^= h >>> 13;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A number in [0, 1) fixed by its arguments. */
export function unitAt(...parts: number[]): number {
  return hash32(...parts) / 4294967296;
}

/** Convenience over a [0, 1) source. */
export class Rng {
  constructor(readonly next: () => number) {}

  static seeded(seed: number): Rng {
    return new Rng(mulberry32(seed));
  }

  /** Integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  range(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
}

export const round = (v: number, decimals: number): number => {
  const f = 10 ** decimals;
  return Math.round(v * f) / f;
};
