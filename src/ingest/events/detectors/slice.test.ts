import { describe, expect, it } from 'vitest';
import { flatSlice } from './slice.js';

type S = { open: number; since: number; sum: number; sign: number };
const fresh = (): S => ({ open: 0, since: NaN, sum: 0, sign: 0 });
const saved = (slice: ReturnType<typeof flatSlice<S, 'copy'>>, s: S) => {
  const out = new Float64Array(16).fill(7);
  const end = slice.save(s, out, 2, {} as never);
  return Array.from(out.subarray(2, end));
};
const read = (slice: ReturnType<typeof flatSlice<S, 'copy'>>, doubles: number[]) => slice.load((i) => (i < doubles.length ? doubles[i]! : NaN), doubles.length);

describe('a flat slice', () => {
  const slice = flatSlice<S>(90, 'test', ['open', 'since', 'sum', 'sign'], fresh);

  it('leaves out the doubles at its end that hold what a fresh state does, and reads them back as that', () => {
    expect(saved(slice, fresh())).toEqual([]);
    expect(saved(slice, { open: 1, since: NaN, sum: 0, sign: 0 })).toEqual([1]);
    expect(saved(slice, { open: 0, since: 5, sum: 0, sign: 0 })).toEqual([0, 5]);
    for (const s of [fresh(), { open: 1, since: NaN, sum: 0, sign: 0 }, { open: 0, since: 5, sum: 0, sign: 0 }, { open: 1, since: 3, sum: 2.5, sign: 1 }]) expect(read(slice, saved(slice, s))).toEqual(s);
  });

  it('tells -0 from 0 and a number from NaN, as Object.is does, so what it reads back is what it held', () => {
    const s = { open: 0, since: NaN, sum: 0, sign: -0 };
    expect(saved(slice, s)).toHaveLength(4);
    expect(Object.is(read(slice, saved(slice, s)).sign, -0)).toBe(true);
    expect(saved(slice, { open: 0, since: 0, sum: 0, sign: 0 })).toEqual([0, 0]);
  });

  it('writes every double up to its last copy, and a part of a slice every double', () => {
    const copied = flatSlice<S, 'copy'>(91, 'test', ['open', 'copy', 'since', 'sum', 'sign'], fresh, { copy: () => 42 });
    expect(saved(copied, fresh())).toEqual([0, 42]);
    expect(saved(copied, { open: 0, since: 1, sum: 0, sign: 0 })).toEqual([0, 42, 1]);
    const part = flatSlice<S>(92, 'test', ['open', 'since', 'sum', 'sign'], fresh, undefined, true);
    expect(saved(part, fresh())).toEqual([0, NaN, 0, 0]);
    expect(part.leftOut).toBeUndefined();
  });
});
