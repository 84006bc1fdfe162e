import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundedJson, nestingDepth } from './json.js';

describe('boundedJson', () => {
  it('is JSON.stringify within the bound, and a prefix of it beyond', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 400 }), (v, max) => {
        const full = JSON.stringify(v);
        const b = boundedJson(v, max);
        if (full.length <= max) expect(b).toEqual({ text: full, truncated: false });
        else expect(b).toEqual({ text: full.slice(0, max), truncated: true });
      }),
      { numRuns: 3_000 },
    );
  });

  it('writes a value nested a million levels deep without overflowing the stack, at bounded cost', () => {
    const deep = JSON.parse('['.repeat(1_000_000) + ']'.repeat(1_000_000)) as unknown;
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(boundedJson(deep, 20)).toEqual({ text: '['.repeat(20), truncated: true });
    expect(nestingDepth(deep, 32)).toBe(33);
    expect(nestingDepth({ data: { soc: 1 } }, 32)).toBe(2);
  });
});
