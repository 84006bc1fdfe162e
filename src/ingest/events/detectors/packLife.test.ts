import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../upstream/emulator/prng.js';
import { can, OPTS, quiet, runAt, runOrdered, T0, V, type Named } from '../events.testkit.js';
import { CorrectedVehicle } from '../corrections/model.testkit.js';
import { entryId } from '../corrections/ledger.js';
import { outputsOf, type OutboxEntry } from '../outbox.js';
import type { PackLife } from './context.js';

/** A pack's life in a vehicle: its stints (which pack, from when to when), a row per UTC day and one where it left, energy and exposure. */

const MIN = 60_000;
const HOUR = 3_600_000;
const A = 410_233;
const B = 733_019;

/** A reading a minute of one pack from `t0` for `minutes`, its ids on every tenth (as a device sends them now and then). */
function stint(t0: number, minutes: number, bms: number, f: (j: number) => Record<string, number>): Named[] {
  return Array.from({ length: minutes + 1 }, (_, j) => can(t0 + j * MIN, { ...(j % 10 === 0 ? { bms_id: bms, bat_id_1: bms + 1 } : {}), ...f(j) }));
}

const rows = (records: Named[]) => runOrdered(records).packLife;

describe('pack life', () => {
  it('follows the pack through two swaps: a row per stint, ended where the next pack’s first record came, with its charge, energy, bands and cycles', () => {
    // Pack A discharging at 36 A (0.5 C of 72 Ah) at 50 V for an hour, 30 °C, soc 95; cycles 100 → 101.
    const a1 = stint(T0, 60, A, (j) => ({ current: -36, battery_voltage: 50, cell_temperature_01: 30, cell_temperature_02: 28, soc: 95, battery_capacity: 72, charge_cycle: j < 60 ? 100 : 101 }));
    // Pack B, a minute later, charging at 72 A (1 C) at 55 V for half an hour, its hottest sensor at 46 °C, soc 10.
    const b = stint(T0 + 61 * MIN, 30, B, () => ({ current: 72, battery_voltage: 55, cell_temperature_01: 20, cell_temperature_03: 46, soc: 10, battery_capacity: 72 }));
    // Pack A back, a minute later, idle: its row is still open (the next day's first record, or its leaving, writes it).
    const a2 = stint(T0 + 92 * MIN, 10, A, () => ({ current: 0, battery_voltage: 51, soc: 50, battery_capacity: 72 }));
    const got = rows([...a1, ...b, ...a2]);
    expect(got).toEqual([
      {
        vehicleno: V, pack: String(A), start: T0, end: T0 + HOUR, durationS: 3600, stintStart: T0, left: 1,
        ahIn: 0, ahOut: 36, kwhIn: 0, kwhOut: 1.8, cycleStart: 100, cycleEnd: 101, capacityAh: 72,
        tempColdS: 0, tempCoolS: 0, tempMildS: 3600, tempWarmS: 0, tempHotS: 0, temperatureMax: 30,
        cRateLowS: 0, cRateMediumS: 3600, cRateHighS: 0, cRateExtremeS: 0, cRateMax: 0.5, socHighS: 3600, socLowS: 0,
      },
      {
        vehicleno: V, pack: String(B), start: T0 + 61 * MIN, end: T0 + 91 * MIN, durationS: 1800, stintStart: T0 + 61 * MIN, left: 1,
        ahIn: 36, ahOut: 0, kwhIn: 1.98, kwhOut: 0, capacityAh: 72,
        tempColdS: 0, tempCoolS: 0, tempMildS: 0, tempWarmS: 0, tempHotS: 1800, temperatureMax: 46,
        cRateLowS: 0, cRateMediumS: 0, cRateHighS: 1800, cRateExtremeS: 0, cRateMax: 1, socHighS: 0, socLowS: 1800,
      },
    ]);
  });

  it('a pack that stays writes a row a UTC day, its readings held to midnight; the current’s sign change splits a trapezoid into in and out', () => {
    const midnight = Date.UTC(2026, 0, 6);
    // From 23:00 to 00:30: discharging at 20 A until 23:59, then +20 A (a charger) from midnight on.
    const records = stint(midnight - HOUR, 90, A, (j) => ({ current: j < 60 ? -20 : 20, battery_voltage: 50, battery_capacity: 40 }));
    // The first record of the next day closes the day's row: 23:59 → 00:00 is a rectangle at the last reading (-20 A).
    const got = rows(records);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ pack: String(A), start: midnight - HOUR, end: midnight, durationS: 3600, ahIn: 0, ahOut: 20, kwhOut: 1, cRateMediumS: 3600 });
    expect(got[0]!.left).toBeUndefined();
    // Across a sign change the trapezoid is split where it crosses 0: +10 A → -10 A in a minute is 5 A·30 s each way.
    const cross = rows([...stint(T0, 1, A, (j) => ({ current: j === 0 ? 10 : -10 })), can(T0 + 2 * MIN, { bms_id: B })]);
    expect(cross[0]).toMatchObject({ ahIn: expect.closeTo(150 / 3600, 12), ahOut: expect.closeTo(150 / 3600, 12) });
  });

  it('never measures across a gap over EVENTS_MAX_GAP; one crossing midnight ends the row at its last record', () => {
    expect(OPTS.maxGapMs).toBe(HOUR);
    const gap = rows([
      ...stint(T0, 1, A, () => ({ current: -36, soc: 95 })),
      ...stint(T0 + 3 * HOUR, 1, A, () => ({ current: -36, soc: 95 })),
      can(T0 + 4 * HOUR, { bms_id: B }),
    ]);
    // Two minutes measured, not three hours.
    expect(gap[0]).toMatchObject({ start: T0, end: T0 + 3 * HOUR + MIN, ahOut: expect.closeTo(1.2, 12), socHighS: 120 });
    const midnight = Date.UTC(2026, 0, 6);
    const overnight = rows([...stint(midnight - 2 * HOUR, 30, A, () => ({ current: -36 })), ...stint(midnight + 6 * HOUR, 1, A, () => ({ current: -36 }))]);
    expect(overnight).toEqual([expect.objectContaining({ start: midnight - 2 * HOUR, end: midnight - 90 * MIN, ahOut: expect.closeTo(18, 12) })]);
  });

  it('a record carrying only bat_id_1, the same as before, is the same pack; a pack known by bat_id_1 takes its bms_id with that module', () => {
    const got = rows([
      can(T0, { bat_id_1: 7, current: -10 }),
      can(T0 + MIN, { bms_id: 900, bat_id_1: 7, current: -10 }), // the same pack, now named by its BMS
      can(T0 + 2 * MIN, { bat_id_1: 7, current: -10 }),
      can(T0 + 3 * MIN, { bms_id: 901, bat_id_1: 8 }), // another pack
    ]);
    expect(got.map((r) => [r.pack, r.start, r.end, r.ahOut])).toEqual([['900', T0, T0 + 2 * MIN, expect.closeTo(20 / 60, 12)]]);
  });

  /** A day of swaps, charges, drives, gaps and temperatures from a seed: CAN about every 20 s, across a midnight. */
  function day(seed: number): Named[] {
    const rnd = mulberry32(seed);
    const out: Named[] = [];
    let pack = 100 + Math.floor(rnd() * 3);
    let t = Date.UTC(2026, 0, 5, 20) + Math.floor(rnd() * 1000);
    let cycles = 50;
    while (t < Date.UTC(2026, 0, 6, 4)) {
      if (rnd() < 0.004) pack = 100 + Math.floor(rnd() * 3);
      if (rnd() < 0.002) t += Math.floor(2 * HOUR * rnd()); // now and then a silence, sometimes over the gap
      if (rnd() < 0.01) cycles++;
      const f: Record<string, number> = {};
      if (rnd() < 0.3) Object.assign(f, { bms_id: pack, bat_id_1: pack * 10 });
      if (rnd() < 0.8) f.current = Math.round((rnd() - 0.4) * 150);
      if (rnd() < 0.7) f.battery_voltage = 48 + Math.round(rnd() * 80) / 10;
      if (rnd() < 0.5) f.soc = Math.floor(rnd() * 101);
      if (rnd() < 0.5) f[`cell_temperature_0${1 + Math.floor(rnd() * 6)}`] = Math.round(-10 + rnd() * 70);
      if (rnd() < 0.3) f.battery_capacity = 60;
      if (rnd() < 0.2) f.charge_cycle = cycles;
      if (Object.keys(f).length > 0) out.push(can(t, f));
      t += 5_000 + Math.floor(rnd() * 30_000);
    }
    return out;
  }

  it('any delivery within the window derives exactly the rows in-order delivery does (and through a state’s bytes)', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const records = day(seed);
      const want = runOrdered(records).packLife;
      expect(want.length).toBeGreaterThan(1);
      expect(runOrdered(records, OPTS, true).packLife).toEqual(want);
      // Shuffled within the window, in batches of up to 20.
      const rnd = mulberry32(seed * 7 + 1);
      const arriving = records.map((r) => ({ at: r.time + rnd() * OPTS.windowMs * 0.9, r })).sort((x, y) => x.at - y.at);
      const deliveries: Array<[number, Named[]]> = [];
      for (let i = 0; i < arriving.length; ) {
        const n = 1 + Math.floor(rnd() * 20);
        const batch = arriving.slice(i, i + n);
        i += n;
        deliveries.push([batch.at(-1)!.at, batch.map((x) => x.r)]);
      }
      expect(runAt(deliveries).packLife).toEqual(want);
    }
  });

  it('records hours late are corrected to what in-order delivery tells: the same rows, by id', () => {
    const plain = (e: OutboxEntry): string => JSON.stringify(e, (k, val: unknown) => (k === 'late' || k === 'revision' || k === 'retracted' ? undefined : val));
    for (let seed = 1; seed <= 4; seed++) {
      const records = day(seed);
      const want = new Map(outputsOf(runOrdered(records)).filter((e) => e.kind === 'pack_life').map((e) => [entryId(e), plain(e)]));
      // A block of a tenth of the records held back and sent two hours after the rest.
      const from = Math.floor(records.length * 0.3);
      const held = records.slice(from, from + Math.floor(records.length / 10));
      const v = new CorrectedVehicle(V, OPTS);
      let now = -Infinity;
      for (const r of records) {
        if (held.includes(r)) continue;
        now = Math.max(now + 1, r.time);
        v.deliver([r], now);
      }
      now += 2 * HOUR;
      v.deliver(held, now);
      for (let round = 0; round < 10; round++) {
        now += quiet(OPTS);
        v.flush(now);
        if (!v.correct(now)) break;
      }
      expect(want.size).toBeGreaterThan(1);
      expect(v.late).toBeGreaterThan(0);
      expect(v.corrections).toBeGreaterThan(0);
      const told = new Map([...v.told].filter(([, e]) => e.kind === 'pack_life' && !(e as PackLife & { retracted?: number }).retracted).map(([id, e]) => [id, plain(e)]));
      expect(told).toEqual(want);
    }
  });
});
