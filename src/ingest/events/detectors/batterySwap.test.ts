import { describe, expect, it } from 'vitest';
import { can, eventTimes, runOrdered, T0 } from '../events.testkit.js';

/** A battery swapped: the pack's bms_id or bat_id_1 differs from the last seen of the same field. */

describe('battery swapped', () => {
  it('is told when the pack’s ids change, with the old and new ids and the soc then; records without ids say nothing', () => {
    const d = runOrdered([
      can(T0, { soc: 18, bms_id: 410_233, bat_id_1: 5_550_001 }),
      can(T0 + 60_000, { soc: 17 }), // no ids: nothing
      can(T0 + 120_000, { soc: 17, bms_id: 410_233 }), // the same pack
      can(T0 + 180_000, { soc: 96, bms_id: 733_019, bat_id_1: 5_550_417 }), // swapped
      can(T0 + 240_000, { bat_id_1: 5_550_417 }),
    ]);
    // (The new pack's 96 % also ends the old one's low charge.)
    expect(eventTimes(d)).toEqual([
      ['soc_low', T0],
      ['soc_recovered', T0 + 180_000],
      ['battery_swapped', T0 + 180_000],
    ]);
    const swap = d.events.find((e) => e.event === 'battery_swapped')!;
    expect(swap.fields).toEqual({ bms_id_old: 410_233, bms_id_new: 733_019, bat_id_old: 5_550_001, bat_id_new: 5_550_417, soc: 96 });
  });

  it('one id changing is enough; the first ids a vehicle reports are no swap', () => {
    const d = runOrdered([can(T0, { soc: 50, bat_id_1: 1 }), can(T0 + 60_000, { soc: 50, bms_id: 9 }), can(T0 + 120_000, { soc: 50, bat_id_1: 2 })]);
    expect(d.events.filter((e) => e.event === 'battery_swapped').map((e) => [e.time, e.fields])).toEqual([[T0 + 120_000, { bat_id_old: 1, bat_id_new: 2, soc: 50 }]]);
  });
});
