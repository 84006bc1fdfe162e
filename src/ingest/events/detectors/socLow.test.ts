import { describe, expect, it } from 'vitest';
import { can, eventTimes, OPTS, runOrdered, T0 } from '../events.testkit.js';

/** A battery running low: soc_low at SOC_LOW (20 %), soc_recovered at SOC_RECOVERED (30 %); no flapping between. */

const socs = (values: number[]) => values.map((soc, j) => can(T0 + j * 60_000, { soc, battery_voltage: 48 + soc / 10 }));

describe('soc low', () => {
  it('is told once at the threshold and recovered only past the hysteresis, however the soc wanders between', () => {
    expect(OPTS).toMatchObject({ socLowPercent: 20, socRecoveredPercent: 30 });
    // Down through 20, wandering 19–25 (no flap), charged past 30, down again.
    const d = runOrdered(socs([40, 30, 21, 20, 19, 21, 19, 25, 22, 29, 30, 45, 30, 20]));
    expect(eventTimes(d)).toEqual([
      ['soc_low', T0 + 3 * 60_000],
      ['soc_recovered', T0 + 10 * 60_000],
      ['soc_low', T0 + 13 * 60_000],
    ]);
    expect(d.events[0]!.fields).toEqual({ soc: 20, battery_voltage: 50 });
  });

  it('a first soc already low is told; records without a soc say nothing', () => {
    const d = runOrdered([can(T0, { current: -5 }), ...socs([12, 15]).map((r) => ({ ...r, time: r.time + 1000 }))]);
    expect(eventTimes(d)).toEqual([['soc_low', T0 + 1000]]);
  });
});
