import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Ring, type RingLayout } from './ring.js';
import { cases } from '../../../../test/harness/short.js';

const doubles = (r: Ring): number[] => {
  const out = new Float64Array(255);
  return Array.from(out.subarray(0, r.save(out, 0)));
};
const read = (stored: number[], capacity: number, stride: number, layout: RingLayout, at = 0): { ring: Ring; end: number } => {
  const ring = new Ring(capacity, stride, layout);
  const end = ring.load((i) => (i < stored.length ? stored[i]! : NaN), at);
  return { ring, end };
};

type Op = { op: 'push'; entry: number[] } | { op: 'dropOldest'; n: number } | { op: 'dropNewest' } | { op: 'clear' };

describe('a ring (a bounded history, saved in its layout)', () => {
  it('holds the last `capacity` entries, oldest first, and reads back from its doubles as it was, in either layout', () => {
    const op = (stride: number): fc.Arbitrary<Op> =>
      fc.oneof(
        { weight: 6, arbitrary: fc.array(fc.integer({ min: -1e6, max: 1e6 }), { minLength: stride, maxLength: stride }).map((entry): Op => ({ op: 'push', entry })) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }).map((n): Op => ({ op: 'dropOldest', n })) },
        { weight: 1, arbitrary: fc.constant<Op>({ op: 'dropNewest' }) },
        { weight: 1, arbitrary: fc.constant<Op>({ op: 'clear' }) },
      );
    const setup = fc.record({ capacity: fc.integer({ min: 1, max: 8 }), stride: fc.integer({ min: 1, max: 3 }), layout: fc.constantFrom<RingLayout>('ring', 'list') });
    fc.assert(
      fc.property(
        setup.chain((s) => fc.tuple(fc.constant(s), fc.array(op(s.stride), { maxLength: 60 }))),
        ([{ capacity, stride, layout }, ops]) => {
          const ring = new Ring(capacity, stride, layout);
          const model: number[][] = [];
          for (const o of ops) {
            if (o.op === 'push') {
              ring.push(o.entry[0]!, o.entry[1], o.entry[2]);
              model.push(o.entry);
              if (model.length > capacity) model.shift();
            } else if (o.op === 'dropOldest') {
              const n = Math.min(o.n, model.length);
              ring.dropOldest(n);
              model.splice(0, n);
            } else if (o.op === 'dropNewest') {
              if (model.length === 0) continue;
              ring.dropNewest();
              model.pop();
            } else {
              ring.clear();
              model.length = 0;
            }
            expect(ring.length).toBe(model.length);
            expect(ring.full).toBe(model.length === capacity);
            const held = Array.from({ length: ring.length }, (_, j) => Array.from({ length: stride }, (_, k) => ring.at(j, k)));
            expect(held).toEqual(model);
            const newestFirst = Array.from({ length: ring.length }, (_, j) => Array.from({ length: stride }, (_, k) => ring.newest(j, k)));
            expect(newestFirst).toEqual([...model].reverse());
            const stored = doubles(ring);
            const back = read(stored, capacity, stride, layout);
            expect(back.ring).toEqual(ring);
            expect(back.end).toBe(stored.length);
            expect(doubles(back.ring)).toEqual(stored);
          }
        },
      ),
      { numRuns: cases(300) },
    );
  });

  it("'ring' layout: the count, the next slot, then every slot as it lies (a fixed size, stale slots included)", () => {
    const r = new Ring(3, 2, 'ring');
    expect(doubles(r)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    for (const t of [1, 2, 3, 4]) r.push(t, 10 * t);
    // The fourth went in the first slot, over the first: the oldest is now the second.
    expect(doubles(r)).toEqual([3, 1, 4, 40, 2, 20, 3, 30]);
    r.dropNewest();
    expect(doubles(r)).toEqual([2, 0, 4, 40, 2, 20, 3, 30]);
    expect([r.at(0), r.newest(0)]).toEqual([2, 3]);
  });

  it("'list' layout: the count, then the entries alone, oldest first", () => {
    const r = new Ring(3, 2, 'list');
    expect(doubles(r)).toEqual([0]);
    for (const t of [1, 2, 3, 4]) r.push(t, 10 * t);
    expect(doubles(r)).toEqual([3, 2, 20, 3, 30, 4, 40]);
    r.dropOldest(2);
    expect(doubles(r)).toEqual([1, 4, 40]);
  });

  it('reads a NaN count (nothing stored there, a state from before the ring was kept) as empty, and says where its doubles end', () => {
    for (const layout of ['ring', 'list'] as const) {
      const { ring, end } = read([7, NaN], 4, 1, layout, 1);
      expect(ring).toEqual(new Ring(4, 1, layout));
      expect(end).toBe(layout === 'ring' ? 1 + 2 + 4 : 1 + 1);
    }
  });
});
