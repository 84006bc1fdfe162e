import { describe, expect, it } from 'vitest';
import { cases } from '../../../../test/harness/short.js';
import { canRecordData } from '../../../upstream/emulator/can.js';
import { DRIFT_CYCLES, DRIFT_V_PER_CYCLE, Fleet } from '../../../upstream/emulator/fleet.js';
import { hash32, Rng } from '../../../upstream/emulator/prng.js';
import { flush, ingest, newState } from '../derive.js';
import { can, OPTS, quiet, runOrdered, V, type Named } from '../events.testkit.js';
import { cellDays, DAY, MIN, runShuffled } from './pack.testkit.js';

/** A cell drifting from the others: further from their median at the end of each full charge, session after session. */

type Told = { event: string; time: number; fields: Record<string, number>; tags?: Record<string, string> };
const told = (d: { events: readonly Told[] }) => d.events.filter((e) => e.event === 'cell_drifting');
/** The day (from the feed's first midnight) an event was told on. */
const dayOf = (e: Told, records: readonly Named[]) => Math.floor((e.time - records[0]!.time) / DAY);

describe('a cell drifting', () => {
  it('a last cell drifting 3 mV a cycle is told once, within 25 charges, ten charges or more before it first reads outside 3.0–3.65 V, with its evidence', () => {
    expect(OPTS).toMatchObject({ cellDriftGrowthV: 0.03, cellDriftMinV: 0.05, cellDriftSessions: 5, cellDriftNoiseV: 0.01, cellDriftFullSoc: 90, cellDriftRestMs: 30 * MIN });
    for (let seed = 1; seed <= 5; seed++) {
      const { records, lastCell } = cellDays({ days: 60, seed, cells: 14, driftV: 0.003, every: 5 });
      const e = told(runOrdered(records));
      expect(e, `seed ${seed}`).toHaveLength(1);
      const [drift] = e;
      expect(dayOf(drift!, records)).toBeLessThan(25);
      expect(drift!.tags).toEqual({ pack: '4102' });
      // The last cell, above the others at the end of a charge; below them at rest.
      expect(drift!.fields).toMatchObject({ cell: 14 });
      expect(drift!.fields.deviation_v!).toBeGreaterThanOrEqual(0.05);
      expect(drift!.fields.growth_v!).toBeCloseTo(drift!.fields.deviation_v! - drift!.fields.from_deviation_v!, 12);
      expect(drift!.fields.growth_v!).toBeGreaterThanOrEqual(0.03);
      expect(drift!.fields.sessions!).toBeGreaterThanOrEqual(5);
      expect(drift!.fields.soc!).toBeGreaterThanOrEqual(90);
      expect(drift!.fields.rest_deviation_v!).toBeLessThan(0);
      // Told well before the cell first reads outside the healthy band.
      const out = lastCell.findIndex((v) => v < 3.0 || v > 3.65);
      expect(out, `seed ${seed}`).toBeGreaterThan(0);
      expect(Math.floor((records[out]!.time - records[0]!.time) / DAY) - dayOf(drift!, records), `seed ${seed}`).toBeGreaterThanOrEqual(10);
    }
  });

  it('never for healthy packs over 60 days: noise, fixed offsets, a weak cell sagging with the soc, an unused slot at 0 V and one beyond no_of_cells', () => {
    for (let seed = 1; seed <= 6; seed++) {
      const { records } = cellDays({ days: 60, seed, cells: 4 + 2 * (seed % 6), weak: seed % 2 === 1, every: 4 });
      expect(told(runOrdered(records)), `seed ${seed}`).toEqual([]);
    }
    // The slot beyond no_of_cells floats up 5 mV a day: were it counted (a record without no_of_cells), it would be told.
    const { records } = cellDays({ days: 20, seed: 1, cells: 8 });
    const uncounted = records.map((r) => {
      const { no_of_cells: _n, ...fields } = r.fields;
      return can(r.time, fields);
    });
    expect(told(runOrdered(uncounted)).map((e) => e.fields.cell)).toEqual([10]);
  });

  it('the current’s direction as the settings say: a negative charging sign, or a magnitude with load_status', () => {
    const { records } = cellDays({ days: 30, seed: 3, cells: 10, driftV: 0.003 });
    const expected = told(runOrdered(records));
    expect(expected).toHaveLength(1);
    const negative = records.map((r) => can(r.time, { ...r.fields, current: -r.fields.current! }));
    expect(told(runOrdered(negative, { ...OPTS, currentSign: { from: 'signed', charging: 'negative' } }))).toEqual(expected);
    const load = records.map((r) => can(r.time, { ...r.fields, current: Math.abs(r.fields.current!), load_status: r.fields.current! > 1 ? 2 : r.fields.current! < -1 ? 1 : 0 }));
    expect(told(runOrdered(load, { ...OPTS, currentSign: { from: 'load_status', charging: 'positive' } }))).toEqual(expected);
    // Read with the wrong sign, the charges are drives and nothing is sampled at their end.
    expect(told(runOrdered(negative))).toEqual([]);
  });

  it('a new pack starts afresh: packs swapped every week never grow enough; after one swap the growth is measured on the new pack only', () => {
    const weekly = cellDays({ days: 40, seed: 2, cells: 14, driftV: 0.003, bmsId: (d) => 4_102 + Math.floor(d / 7) });
    expect(told(runOrdered(weekly.records))).toEqual([]);
    const once = cellDays({ days: 40, seed: 2, cells: 14, driftV: 0.003, bmsId: (d) => (d < 12 ? 4_102 : 5_230) });
    const e = told(runOrdered(once.records));
    expect(e).toHaveLength(1);
    expect(e[0]!.tags).toEqual({ pack: '5230' });
    // Its sessions are the new pack's charges (day 12 on), its growth from the first of them.
    expect(e[0]!.fields.sessions!).toBeLessThanOrEqual(dayOf(e[0]!, once.records) - 12 + 1);
    const first = told(runOrdered(cellDays({ days: 40, seed: 2, cells: 14, driftV: 0.003 }).records));
    expect(e[0]!.time).toBeGreaterThan(first[0]!.time);
  });

  it('any delivery within the reorder window, the state read back from its bytes each call, tells the same', () => {
    const feeds = [cellDays({ days: 20, seed: 4, cells: 8, driftV: 0.006, every: 5 }).records, cellDays({ days: 12, seed: 5, cells: 6, weak: true, every: 5 }).records, cellDays({ days: 24, seed: 6, cells: 8, driftV: 0.006, bmsId: (d) => (d < 6 ? 1 : 2), every: 5 }).records];
    for (const feed of feeds) {
      const inOrder = told(runOrdered(feed));
      for (let seed = 1; seed <= 2; seed++) expect(told(runShuffled(feed, seed))).toEqual(inOrder);
    }
    expect(told(runOrdered(feeds[0]!))).toHaveLength(1);
    expect(told(runOrdered(feeds[2]!))).toHaveLength(1);
  });
});

describe('a cell drifting, against the emulator’s truth', () => {
  /**
   * The emulator's fleet (src/upstream/emulator/fleet.ts): one pack in fifty drifts its last cell
   * DRIFT_V_PER_CYCLE a cycle, rebalanced to 0 every DRIFT_CYCLES; one vehicle in seven has a healthy weak
   * first cell. Each vehicle's CAN records as the emulator sends them (a varying subset of its parameters,
   * `canRecordData`): a record a minute while charging, one a half-hour segment otherwise (the rule reads a
   * charge's last records and a rest's first after CELL_DRIFT_REST), derived in order.
   */
  const SEED = 11;
  const SEG = 30 * 60_000;
  const NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
  const fleet = Fleet.create({ seed: SEED, size: 1_000 });
  type Vehicle = (typeof fleet.vehicles)[number];
  const cycle = (v: Vehicle) => v.cycleSegments * SEG;

  function* feed(v: Vehicle, from: number, to: number): Generator<Named> {
    const rng = Rng.seeded(hash32(SEED, v.index, 7));
    for (let s = Math.ceil(from / SEG) * SEG; s < to; s += SEG) {
      const times = fleet.activityAt(v, s) === 'charging' ? Array.from({ length: 30 }, (_, m) => s + m * MIN + MIN / 2) : [s + SEG / 2];
      for (const t of times) {
        const { time, ...fields } = canRecordData(fleet.canStateAt(v, t), rng);
        yield can(time, fields as Record<string, number>);
      }
    }
  }
  /** Derived in order, one record a call, up to the first `cell_drifting` (the records after it are not made). */
  function untilTold(records: Iterable<Named>): Told[] {
    const s = newState();
    let last = -Infinity;
    for (const r of records) {
      const e = told(ingest(V, s, [r], (last = r.time), OPTS));
      if (e.length > 0) return e;
    }
    return told(flush(V, s, last + quiet(OPTS), OPTS));
  }
  /** The start of the first cycle at or after `t` whose drift is 0 (a rebalance). */
  function rebalanced(v: Vehicle, t: number): number {
    let start = v.cycleOffsetMs + Math.ceil((t - v.cycleOffsetMs) / cycle(v)) * cycle(v);
    while (fleet.cellDriftV(v, start) > 0) start += cycle(v);
    return start;
  }
  /** A vehicle on swapped packs gets another pack at each charge: no pack of it sees two charges, and none can be seen to drift. */
  const swapsPacks = (v: Vehicle) => fleet.canStateAt(v, NOW).bms_id !== fleet.canStateAt(v, NOW + cycle(v)).bms_id;

  it('every pack with a drifting cell is told within 40 charges of its rebalance, while the drift grows; no healthy one, weak cells among them, in 15 cycles', () => {
    const drifting = fleet.vehicles.filter((v) => fleet.driftingCell(v) !== undefined && !swapsPacks(v));
    expect(drifting.length).toBeGreaterThanOrEqual(10);
    for (const v of drifting) {
      const from = rebalanced(v, NOW);
      const e = untilTold(feed(v, from, from + 40 * cycle(v)));
      expect(e.length, `vehicle ${v.index}`).toBeGreaterThanOrEqual(1);
      expect(e[0]!.fields.cell).toBe(fleet.driftingCell(v));
      // At the end of the charge of cycle c from the rebalance, its (c + 1)th: before the next rebalance (DRIFT_CYCLES on), while the drift grows.
      const c = Math.floor((e[0]!.time - from) / cycle(v));
      expect(c + 1).toBeLessThanOrEqual(40);
      expect(c).toBeLessThan(DRIFT_CYCLES);
      expect(fleet.cellDriftV(v, e[0]!.time)).toBeCloseTo(DRIFT_V_PER_CYCLE * c, 9);
      // Above the others at the end of the charge, below them at rest.
      expect(e[0]!.fields.deviation_v!).toBeGreaterThan(0);
      if (e[0]!.fields.rest_deviation_v !== undefined) expect(e[0]!.fields.rest_deviation_v).toBeLessThan(0);
    }
    const healthy = fleet.vehicles.filter((v) => fleet.driftingCell(v) === undefined && !swapsPacks(v)).slice(0, cases(24));
    for (const v of healthy) expect(told(runOrdered([...feed(v, NOW, NOW + 15 * cycle(v))])), `vehicle ${v.index}`).toEqual([]);
  });
});
