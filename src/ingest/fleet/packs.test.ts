import { describe, expect, it } from 'vitest';
import { packQuery, riskOf, stintsOf, worstOf, worstQuery } from './packs.js';

/** `telematics-fleet pack` and `packs --worst`: a pack's rows as stints across vehicles, and packs ranked by risk. */

const DAY = 86_400_000;
const T = Date.UTC(2026, 0, 5, 8);
const row = (vehicleno: string, time: number, stintStart: number, end: number, f: Record<string, number> = {}) => ({ time, vehicleno, pack: '410233', stint_start: stintStart, end, duration_s: (end - time) / 1000, ...f });

describe('a pack across vehicles', () => {
  it('its daily rows make one stint a vehicle visit, summed, in time order; the pack back in a vehicle is a new stint', () => {
    const rows = [
      row('A', T, T, T + 4 * 3_600_000, { left: 1, ah_out: 30, kwh_out: 1.5, cycle_start: 100, cycle_end: 101, temp_hot_s: 600 }),
      row('B', T + 5 * 3_600_000, T + 5 * 3_600_000, Date.UTC(2026, 0, 6), { ah_in: 10, cycle_start: 101, cycle_end: 102, temperature_max: 41 }),
      row('B', Date.UTC(2026, 0, 6), T + 5 * 3_600_000, Date.UTC(2026, 0, 6, 3), { left: 1, ah_in: 5, ah_out: 2, cycle_end: 103, temperature_max: 47, c_rate_high_s: 60 }),
      row('A', T + DAY, T + DAY, T + DAY + 60_000, { ah_out: 1 }),
    ];
    const stints = stintsOf(rows);
    expect(stints.map((s) => [s.vehicleno, s.from, s.to, s.left, s.ahIn, s.ahOut, s.cycleStart, s.cycleEnd, s.temperatureMax])).toEqual([
      ['A', T, T + 4 * 3_600_000, true, 0, 30, 100, 101, null],
      ['B', T + 5 * 3_600_000, Date.UTC(2026, 0, 6, 3), true, 15, 2, 101, 103, 47],
      ['A', T + DAY, T + DAY + 60_000, false, 0, 1, null, null, null],
    ]);
    expect(stints[1]!.cRateHighS).toBe(60);
  });

  it('asks InfluxDB for the pack by its tag, standing rows only, and for every pack’s sums grouped by it', () => {
    const r = { since: T, until: T + DAY, limit: 50 };
    expect(packQuery('410233', r)).toBe(`SELECT * FROM "pack_life" WHERE "pack" = '410233' AND time >= '2026-01-05T08:00:00.000Z' AND time <= '2026-01-06T08:00:00.000Z' AND "duration_s" >= 0 ORDER BY time ASC LIMIT 50`);
    expect(worstQuery(r)).toMatch(/^SELECT sum\("temp_hot_s"\) AS "temp_hot_s", .* FROM "pack_life" WHERE .* AND "duration_s" >= 0 GROUP BY "pack"$/);
  });

  it('ranks packs by hours of stress: heat and high C-rate first, a soc held high or low a quarter', () => {
    const hot = { pack: '1', temp_hot_s: 3600, temp_warm_s: 7200 }; // 1 + ½·2 = 2
    const hard = { pack: '2', c_rate_high_s: 3600, c_rate_extreme_s: 3600 }; // 1 + 2 = 3
    const parked = { pack: '3', soc_high_s: 4 * 3600, soc_low_s: 3600 }; // ¼·4 + ¼·1 = 1.25
    expect(riskOf(hot).risk).toBe(2);
    expect(worstOf([hot, hard, parked], 10).map((p) => [p.pack, p.risk])).toEqual([['2', 3], ['1', 2], ['3', 1.25]]);
    expect(worstOf([hot, hard, parked], 1).map((p) => p.pack)).toEqual(['2']);
  });
});
