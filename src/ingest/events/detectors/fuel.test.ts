import { describe, expect, it } from 'vitest';
import { Rng } from '../../../upstream/emulator/prng.js';
import { cases } from '../../../../test/harness/short.js';
import { freshFuelState, fuelEvent, judgeFuel, type FuelChange, type FuelChangeState, type FuelReading } from './fuel.js';

/** Fuel drops and refuels in the synced history: FUEL_DROP_MIN / FUEL_REFUEL_MIN within FUEL_CHANGE_WINDOW. */

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 20, 6, 0, 0);
const O = { dropMin: 5, refuelMin: 5, windowMs: 30 * MIN };

/** A reading every 5 minutes from `levels`. */
const history = (levels: number[]): FuelReading[] => levels.map((value, i) => ({ time: T0 + i * 5 * MIN, value }));
const at = (i: number) => T0 + i * 5 * MIN;

/** Judged in one go, with the history complete to its last reading plus a window. */
function judgeAll(rs: readonly FuelReading[], until = Math.max(...rs.map((r) => r.time)) + O.windowMs + 1): FuelChange[] {
  return judgeFuel(freshFuelState(), rs, O, until);
}

describe('fuel drops and refuels', () => {
  it('a theft: the fall from the level before to where it stopped falling, stamped where it began', () => {
    const rs = history([40, 40, 40, 37, 33, 31, 31, 31.1, 30.9]);
    const changes = judgeAll(rs);
    expect(changes).toEqual([{ event: 'fuel_drop', fromAt: at(2), from: 40, toAt: at(5), to: 31 }]);
    expect(fuelEvent('KA01', 'litres', changes[0]!)).toEqual({
      vehicleno: 'KA01',
      event: 'fuel_drop',
      time: at(2),
      value: 1,
      fields: { fuel_before: 40, fuel_after: 31, fuel_amount: 9, over_s: 15 * 60 },
      tags: { unit: 'litres' },
    });
  });

  it('a slow siphon no two readings show counts within the window; consumption slower than it does not', () => {
    // 2 l every 5 minutes for 15 minutes: 6 l from the highest within 30 minutes.
    expect(judgeAll(history([50, 48, 46, 44, 44]))).toEqual([{ event: 'fuel_drop', fromAt: at(0), from: 50, toAt: at(3), to: 44 }]);
    // 0.8 l every 5 minutes for hours (driving): never 5 within 30 minutes.
    expect(judgeAll(history(Array.from({ length: 40 }, (_, i) => 50 - 0.8 * i)))).toEqual([]);
  });

  it('a refuel, and a drop right before it, each once; the level after a change is the next one’s reference', () => {
    const rs = history([20, 20, 12, 12, 60, 60, 59.8, 59.6]);
    expect(judgeAll(rs)).toEqual([
      { event: 'fuel_drop', fromAt: at(1), from: 20, toAt: at(2), to: 12 },
      { event: 'fuel_refuel', fromAt: at(3), from: 12, toAt: at(4), to: 60 },
    ]);
  });

  it('at the threshold counts (in decimals as they read), under it does not', () => {
    expect(judgeAll(history([40.3, 35.3, 35.3]))).toHaveLength(1);
    expect(judgeAll(history([40.3, 35.31, 35.31]))).toEqual([]);
  });

  it('a gap over the window ends a change; a change is told once the history passed a window beyond its extreme', () => {
    const s = freshFuelState();
    // Falling when the range read ends: under way, not told.
    expect(judgeFuel(s, history([40, 34]), O, at(1))).toEqual([]);
    expect(s.open).toMatchObject({ event: 'fuel_drop', to: 34 });
    // The next run read 30 minutes further and nothing more came: told.
    expect(judgeFuel(s, [], O, at(1) + O.windowMs + 1)).toEqual([{ event: 'fuel_drop', fromAt: at(0), from: 40, toAt: at(1), to: 34 }]);
    // A reading after a gap of hours is measured from nothing before the gap.
    const t = at(1) + 5 * 3_600_000;
    expect(judgeFuel(s, [{ time: t, value: 20 }], O, t)).toEqual([]);
  });

  it('a range pulled again, repeated readings and any order within a response judge the same, once', () => {
    const levels = [60, 60, 52, 47, 47, 47.1, 30, 29, 29, 70, 71, 71, 70.9, 70.8, 64, 64, 64];
    const rs = history(levels);
    const whole = judgeAll(rs);
    expect(whole.map((c) => [c.event, c.from, c.to])).toEqual([
      ['fuel_drop', 60, 47],
      ['fuel_drop', 47.1, 29],
      ['fuel_refuel', 29, 71],
      ['fuel_drop', 71, 64],
    ]);
    const until = at(levels.length - 1) + O.windowMs + 1;
    for (let k = 0; k < cases(200); k++) {
      // Cut into overlapping ranges, each shuffled with a few readings twice, judged on a state round-tripped as JSON.
      let s: FuelChangeState = freshFuelState();
      const got: FuelChange[] = [];
      let from = 0;
      const rnd = Rng.seeded(k).next;
      while (from < rs.length) {
        const to = Math.min(rs.length, from + 1 + Math.floor(rnd() * 6));
        const back = Math.max(0, from - Math.floor(rnd() * 3));
        const range = rs.slice(back, to);
        const shuffled = [...range, ...range.filter(() => rnd() < 0.2)].sort(() => rnd() - 0.5);
        got.push(...judgeFuel(s, shuffled, O, rs[to - 1]!.time));
        s = JSON.parse(JSON.stringify(s)) as FuelChangeState;
        from = to;
      }
      got.push(...judgeFuel(s, [], O, until));
      expect(got).toEqual(whole);
    }
  });
});
