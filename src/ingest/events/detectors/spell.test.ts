import { describe, expect, it } from 'vitest';
import { lasted, spellBegin, spellDue, spellEnd, type Spell } from './spell.js';

const fresh = (): Spell => ({ since: NaN, told: 0 });

describe('a spell (a condition that counts once it held a minimum time)', () => {
  it('has lasted the minimum at exactly the minimum, not a millisecond before', () => {
    expect(lasted(1_000, 1_000 + 300_000, 300_000)).toBe(true);
    expect(lasted(1_000, 1_000 + 299_999, 300_000)).toBe(false);
    expect(lasted(1_000, 1_000, 0)).toBe(true);
  });

  it('begins once, keeps its first start, and is due once, when it has lasted', () => {
    const s = fresh();
    expect(spellDue(s, 10_000, 5_000)).toBe(false); // none under way
    expect(spellBegin(s, 1_000)).toBe(true);
    expect(spellBegin(s, 2_000)).toBe(false);
    expect(s.since).toBe(1_000);
    expect(spellDue(s, 5_999, 5_000)).toBe(false);
    expect(spellDue(s, 6_000, 5_000)).toBe(true);
    expect(spellDue(s, 7_000, 5_000)).toBe(false); // told already
    expect(spellEnd(s, 9_000, 5_000)).toBe('told');
    expect(s).toEqual(fresh());
  });

  it('ends short (nothing to tell), or untold when it reached the minimum between two records (its start told late)', () => {
    const s = fresh();
    spellBegin(s, 1_000);
    expect(spellEnd(s, 5_999, 5_000)).toBe('short');
    expect(s).toEqual(fresh());
    spellBegin(s, 1_000);
    expect(spellEnd(s, 6_000, 5_000)).toBe('untold');
    expect(s).toEqual(fresh());
  });
});
