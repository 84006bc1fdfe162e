import { describe, expect, it } from 'vitest';
import { CorrectedVehicle } from '../corrections/model.testkit.js';
import { flush, ingest, newState, type ChargingSession, type DerivedEvent } from '../derive.js';
import { can, OPTS, packCycles, quiet, runOrdered, T0, V, type Named, type PackCycles } from '../events.testkit.js';
import { capacityOf, CHARGING_SLICE } from './charging.js';

/**
 * A pack's capacity measured from its charging sessions (Ah charged against the soc they moved), and the
 * BMS's own figure (battery_capacity × soh) flagged where it disagrees or never moves.
 */

const MIN = 60_000;
const PACK = 410_233;
const sessions = (d: { chargingSessions: readonly ChargingSession[] }) => d.chargingSessions;
const bmsEvents = (d: { events: readonly DerivedEvent[] }) => d.events.filter((e) => e.event.startsWith('bms_soh_'));
const pack = (o: Partial<PackCycles>): PackCycles => ({ cycles: 10, capacityAh: () => 80, soh: () => 80, ratedAh: 100, bmsId: PACK, low: 20, high: 90, ...o });

describe('capacity from charging sessions', () => {
  it('ten deep charges of an 80-Ah pack: each estimate within 5 % of 80, its uncertainty covering 80; the row carries the pack', () => {
    const { records, charges } = packCycles(pack({}));
    const got = sessions(runOrdered(records));
    expect(got.map((s) => s.start)).toEqual(charges.map((c) => c.start));
    for (const s of got) {
      expect(s.pack).toBe(String(PACK));
      expect(s.socMoved).toBeGreaterThanOrEqual(68);
      expect(Math.abs(s.capacityAhEstimate! - 80) / 80).toBeLessThan(0.05);
      expect(Math.abs(s.capacityAhEstimate! - 80)).toBeLessThanOrEqual((s.capacityAhEstimate! * s.capacityUncertaintyPct!) / 100);
      // The bound is the soc's rounding over a 70-point rise, about 3 %, and the current's sampling.
      expect(s.capacityUncertaintyPct).toBeGreaterThan(2);
      expect(s.capacityUncertaintyPct).toBeLessThan(5);
      expect(s.chargeAh! / (s.socMoved! / 100)).toBe(s.capacityAhEstimate);
      expect(s.bmsCapacityAh).toBe(80);
    }
    // The BMS says what the pack holds: nothing flagged.
    expect(bmsEvents(runOrdered(records))).toEqual([]);
  });

  it('the charge is ∫ |current| dt by trapezoids, as by hand; a shallow session gives no estimate', () => {
    // 20 → 40 A over 600 s, 10-s records: exact trapezoids, 30 A × 600 s = 5 Ah; soc 50 → 70: 20 points.
    const rs: Named[] = [can(T0, { soc: 50, current: -1, load_status: 0, bms_id: PACK })];
    for (let j = 0; j <= 60; j++) rs.push(can(T0 + 10_000 + j * 10_000, { soc: 50 + Math.floor(j / 3), current: 20 + j / 3, load_status: 2 }));
    rs.push(can(T0 + 620_000, { soc: 70, current: -1, load_status: 0 }));
    const [s] = sessions(runOrdered(rs));
    expect(s!.chargeAh).toBeCloseTo(5, 9);
    expect(s!.socMoved).toBe(20);
    expect(s).toMatchObject({ pack: String(PACK) });
    expect(s!.capacityAhEstimate).toBeUndefined();
    expect(s!.capacityUncertaintyPct).toBeUndefined();
    // With the minimum lowered to 20 points, it estimates 5 Ah ÷ 0.2 = 25 Ah ± a bound: the current rose
    // 1/3 A each 10-s step (|ΔI| × Δt / 2 summed: 20 A × 10 s / 2 = 1/36 Ah), the soc ±2 points of 20.
    const [t] = sessions(runOrdered(rs, { ...OPTS, capacityMinSocMoved: 20 }));
    expect(t!.capacityAhEstimate).toBeCloseTo(25, 9);
    expect(t!.capacityUncertaintyPct).toBeCloseTo(((5 + 1 / 36) / 0.18 / 25 - 1) * 100, 9);
  });

  it('the uncertainty’s model: the soc a whole percent (±1 point each end), each trapezoid within |ΔI| × Δt / 2', () => {
    expect(capacityOf(40, 0, 40, 40)).toEqual({ ah: 100, uncertaintyPct: (40 / 38 - 1) * 100 });
    expect(capacityOf(40, 0, 39, 40)).toBeUndefined();
    expect(capacityOf(40, 2, 50, 40)!.uncertaintyPct).toBeCloseTo(((42 / 0.48) / 80 - 1) * 100, 12);
    // The smallest capacity the bounds allow, (40 − 2) ÷ 0.52, is nearer the estimate than the largest.
    expect(80 - 38 / 0.52).toBeLessThan(42 / 0.48 - 80);
  });

  it('a pack whose BMS says 100 % all along while it holds 80 % is flagged: bms_soh_disagrees at the third estimate', () => {
    const { records, charges } = packCycles(pack({ soh: () => 100 }));
    const d = runOrdered(records);
    const flags = bmsEvents(d);
    // Told once, though the estimates go on disagreeing; the estimate does not fall, so no stuck soh.
    expect(flags.map((e) => [e.event, e.time])).toEqual([['bms_soh_disagrees', sessions(d)[2]!.end]]);
    expect(flags[0]!.tags).toEqual({ pack: String(PACK) });
    expect(flags[0]!.fields).toMatchObject({ soh: 100, bms_capacity_ah: 100, sessions: 3, capacity_ah_estimate: sessions(d)[2]!.capacityAhEstimate });
    expect(charges).toHaveLength(10);
  });

  it('a soh that never moves while the pack fades 100 → 80 Ah is bms_soh_stuck, once; a soh that follows the fade is not', () => {
    const fade = (c: number) => 100 - (20 * c) / 9;
    const stuck = runOrdered(packCycles(pack({ capacityAh: fade, soh: () => 100 })).records);
    const told = bmsEvents(stuck).filter((e) => e.event === 'bms_soh_stuck');
    expect(told).toHaveLength(1);
    const at = sessions(stuck).findIndex((s) => s.end === told[0]!.time);
    const s = sessions(stuck)[at]!;
    // Told at the first session whose upper bound fell below the first session's lower bound.
    const lowOf = (x: ChargingSession) => x.capacityAhEstimate! * (1 - x.capacityUncertaintyPct! / 100);
    const highOf = (x: ChargingSession) => x.capacityAhEstimate! * (1 + x.capacityUncertaintyPct! / 100);
    const first = sessions(stuck).findIndex((x) => highOf(x) < Math.max(...sessions(stuck).slice(0, sessions(stuck).indexOf(x) + 1).map(lowOf)));
    expect(at).toBe(first);
    expect(told[0]!.fields).toMatchObject({ soh: 100, since: sessions(stuck)[0]!.start, sessions: at + 1, capacity_ah_estimate: s.capacityAhEstimate });
    expect(told[0]!.fields.capacity_ah_before).toBeGreaterThan(highOf(s));
    // The BMS following the pack (its soh the true capacity's share of the rated): nothing.
    const follows = runOrdered(packCycles(pack({ capacityAh: fade, soh: (c) => Math.round(fade(c)) })).records);
    expect(bmsEvents(follows)).toEqual([]);
  });

  it('another pack starts afresh; a session begun before the upgrade (no charge counted from its start) estimates nothing', () => {
    // Two disagreeing estimates of one pack, then a swap: the other pack's first two are no third in a row.
    const a = packCycles(pack({ cycles: 2, soh: () => 100 }));
    const b = packCycles(pack({ cycles: 2, soh: () => 100, bmsId: 733_019 }), a.records.at(-1)!.time + MIN);
    expect(bmsEvents(runOrdered([...a.records, ...b.records]))).toEqual([]);
    // Ids that change within one deep charge: no pack, no estimate (the charge is of neither).
    const one = packCycles(pack({ cycles: 1 }));
    const half = (one.charges[0]!.start + one.charges[0]!.end) / 2;
    const [mixed] = sessions(runOrdered(one.records.map((r) => (r.time > half ? can(r.time, { ...r.fields, bms_id: 733_019 }) : r))));
    expect(mixed!.socMoved).toBeGreaterThan(60);
    expect(mixed!.pack).toBeUndefined();
    expect(mixed!.capacityAhEstimate).toBeUndefined();
    // Half a deep charge derived, the state stored by a release without the charge's doubles, then the rest.
    const { records, charges } = packCycles(pack({ cycles: 1 }));
    const mid = (charges[0]!.start + charges[0]!.end) / 2;
    const s = newState();
    const parts = [];
    for (const r of records.filter((x) => x.time < mid)) parts.push(ingest(V, s, [r], r.time, OPTS));
    parts.push(flush(V, s, mid + quiet(OPTS), OPTS));
    const out = new Float64Array(255);
    const end = CHARGING_SLICE.save(s.charging, out, 0);
    const before = end - 20; // what the release before stored: all but the doubles after `underWay`
    s.charging = CHARGING_SLICE.load((i) => (i < before ? out[i]! : NaN), before);
    for (const r of records.filter((x) => x.time >= mid)) parts.push(ingest(V, s, [r], r.time, OPTS));
    parts.push(flush(V, s, records.at(-1)!.time + quiet(OPTS), OPTS));
    const got = parts.flatMap((p) => p.chargingSessions);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ start: charges[0]!.start });
    expect(got[0]!.chargeAh).toBeUndefined();
    expect(got[0]!.capacityAhEstimate).toBeUndefined();
    // A state stored now reads back as it was.
    const again = CHARGING_SLICE.load((i) => (i < end ? out[i]! : NaN), end);
    const out2 = new Float64Array(255);
    expect(CHARGING_SLICE.save(again, out2, 0)).toBe(end);
    expect(Array.from(out2.subarray(0, end))).toEqual(Array.from(out.subarray(0, end)));
  });

  it('any delivery order, re-sends and late bulks: the sessions and flags told equal in-order delivery', () => {
    const { records } = packCycles(pack({ cycles: 6, capacityAh: (c) => 100 - 4 * c, soh: () => 100 }));
    const want = runOrdered(records);
    const key = (e: object) => JSON.stringify(e, (k, v: unknown) => (k === 'late' || k === 'revision' ? undefined : v));
    const wanted = [...sessions(want).map((s) => key({ kind: 'charging', ...s })), ...bmsEvents(want).map((e) => key({ kind: 'event', ...e }))].sort();
    expect(bmsEvents(want).map((e) => e.event).sort()).toEqual(['bms_soh_disagrees', 'bms_soh_stuck']);
    let corrections = 0;
    for (let seed = 1; seed <= 4; seed++) {
      let x = seed;
      const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const bulks: Array<[number, Named[]]> = [];
      for (let i = 0; i < records.length; i += 20) {
        const rs = records.slice(i, i + 20).sort(() => rnd() - 0.5);
        bulks.push([rs.reduce((m, r) => Math.max(m, r.time), 0) + 5_000 + (rnd() < 0.2 ? Math.floor(rnd() * 90 * MIN) : 0), rs]);
      }
      const again = bulks.filter(() => rnd() < 0.1).map(([at, rs]): [number, Named[]] => [at + 3 * MIN, rs]);
      const v = new CorrectedVehicle(V, OPTS);
      let now = -Infinity;
      for (const [at, rs] of [...bulks, ...again].sort((a, b) => a[0] - b[0])) {
        now = Math.max(now, at);
        v.deliver(rs, now);
        v.correct(now);
      }
      for (let round = 0; round < 5; round++) {
        now += quiet(OPTS);
        v.flush(now);
        if (!v.correct(now)) break;
      }
      const told = [...v.told.values()].filter((e) => (e.kind === 'charging' || (e.kind === 'event' && e.event.startsWith('bms_soh_'))) && !(e.kind === 'event' ? e.fields.retracted : (e as { retracted?: number }).retracted));
      const strip = (e: (typeof told)[number]) => (e.kind === 'event' ? key({ ...e, fields: Object.fromEntries(Object.entries(e.fields).filter(([k]) => k !== 'late' && k !== 'revision')) }) : key(e));
      expect(told.map(strip).sort(), `seed ${seed}`).toEqual(wanted);
      corrections += v.corrections;
    }
    // (Late bulks came: corrections ran.)
    expect(corrections).toBeGreaterThan(0);
  });
});
