import { describe, expect, it } from 'vitest';
import { can, OPTS, runOrdered, T0 } from '../events.testkit.js';
import { CAPACITY, healthy, MIN, runShuffled, STEP, withCurrent } from './pack.testkit.js';

/** A pack worked hard for long: |current| / battery_capacity over PACK_C_RATE_HIGH for PACK_C_RATE_MIN_DURATION. */

const told = (d: { events: ReadonlyArray<{ event: string; time: number; fields: Record<string, number>; tags?: Record<string, string> }> }) => d.events.filter((e) => e.event === 'pack_c_rate_high');

describe('a sustained high C-rate', () => {
  it('never for a healthy pack’s load, acceleration and regenerative-braking peaks of 3 C for 20 s, or charging', () => {
    expect(OPTS).toMatchObject({ packCRateHigh: 2, packCRateMinDurationMs: 60_000 });
    for (let seed = 1; seed <= 20; seed++) expect(told(runOrdered(healthy(seed)))).toEqual([]);
  });

  it('told once a spell over the bound has lasted the minimum, stamped at its first record, with its evidence', () => {
    // 2.5 C (75 A discharging) for three minutes from minute 10.
    const d = runOrdered(withCurrent(healthy(2), -2.5 * CAPACITY, 10, 3));
    expect(told(d).map((e) => [e.time, e.fields, e.tags])).toEqual([[T0 + 10 * MIN, { c_rate_max: 2.5, c_rate_mean: 2.5, duration_s: 60, limit_c: 2 }, { pack: '4102' }]]);
  });

  it('a record at or under the bound ends the spell; a capacity once reported is the pack’s until it reports another', () => {
    const spell = (from: number, n: number, amps: number) => Array.from({ length: n }, (_, j) => can(T0 + from + j * STEP, { current: amps }));
    // Capacity reported once; 50 s over, one record at 2 C, 50 s over: neither lasted 60 s.
    const d = runOrdered([can(T0 - STEP, { battery_capacity: CAPACITY, current: 0 }), ...spell(0, 6, 70), ...spell(60_000, 1, 60), ...spell(70_000, 6, -70)]);
    expect(told(d)).toEqual([]);
    // Without any capacity, nothing is judged.
    expect(told(runOrdered(spell(0, 20, 90)))).toEqual([]);
  });

  it('any delivery within the reorder window, the state read back from its bytes each call, tells the same', () => {
    for (const feed of [withCurrent(healthy(2), -2.5 * CAPACITY, 10, 3), withCurrent(healthy(4), 2.2 * CAPACITY, 30, 5), healthy(6)]) {
      const inOrder = told(runOrdered(feed));
      for (let seed = 1; seed <= 5; seed++) expect(told(runShuffled(feed, seed))).toEqual(inOrder);
    }
  });
});
