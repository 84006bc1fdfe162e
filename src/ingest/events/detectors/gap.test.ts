import { describe, expect, it } from 'vitest';
import { gapBefore, gapFrom } from './gap.js';
import { emptyDerived, type Context } from './context.js';
import { OPTS } from '../events.testkit.js';

const ctx = (maxGapMs: number): Context => ({ vehicleno: 'V', opts: { ...OPTS, maxGapMs }, out: emptyDerived(), late: undefined as never, cutBefore: NaN, previousTime: -Infinity });

describe('the gap rule (EVENTS_MAX_GAP)', () => {
  it('is a gap only past the maximum: records exactly EVENTS_MAX_GAP apart are none', () => {
    const c = ctx(3_600_000);
    expect(gapBefore(c, 1_000, 1_000 + 3_600_000)).toBe(false);
    expect(gapBefore(c, 1_000, 1_000 + 3_600_001)).toBe(true);
    expect(gapBefore(c, 1_000, 1_000)).toBe(false);
  });

  it("a stream's first record comes after a gap, and a gap begins at the last record before it (none: -Infinity, so no fix is skipped)", () => {
    const c = ctx(60_000);
    expect(gapBefore(c, -Infinity, 0)).toBe(true);
    expect(gapFrom(c, 5_000, 70_000)).toBe(5_000);
    expect(gapFrom(c, 5_000, 65_000)).toBe(-Infinity);
    expect(gapFrom(c, -Infinity, 0)).toBe(-Infinity);
  });
});
