import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WindowedExtreme } from './windowed.js';
import { cases } from '../../../../test/harness/short.js';

describe('the highest and lowest within a window', () => {
  it('is the extreme of every reading within the window, of equal levels the latest, whatever came before', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 20 })), { minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 200 }), (steps, window) => {
        const high = new WindowedExtreme('highest', 1_000);
        const low = new WindowedExtreme('lowest', 1_000);
        const all: Array<[number, number]> = [];
        let t = 0;
        for (const [dt, v] of steps) {
          t += dt;
          for (const w of [high, low]) {
            w.expire(t - window);
            w.push(t, v);
          }
          all.push([t, v]);
          const within = all.filter(([at]) => at >= t - window);
          const top = within.reduce((a, b) => (b[1] >= a[1] ? b : a));
          const bottom = within.reduce((a, b) => (b[1] <= a[1] ? b : a));
          expect([high.time, high.value]).toEqual(top);
          expect([low.time, low.value]).toEqual(bottom);
        }
      }),
      { numRuns: cases(200) },
    );
  });

  it('past its capacity makes a later extreme lower, never higher', () => {
    const w = new WindowedExtreme('highest', 3);
    for (const [t, v] of [[1, 10], [2, 9], [3, 8], [4, 7]] as const) w.push(t, v);
    expect(w.entries()).toEqual([[1, 10], [2, 9], [4, 7]]);
  });
});
