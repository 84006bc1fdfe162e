import { describe, expect, it } from 'vitest';
import { fieldNames } from '../../telemetry/fields.js';
import { UNUSED_SENSOR_SENTINEL, canRecordData } from './can.js';
import { distanceKm } from './geo.js';
import { CAPACITY_FADE_PER_CYCLE, DRIFT_SHARE, DRIFT_V_PER_CYCLE, Fleet, HEAT_FAST_C_PER_MIN, HEAT_FAST_SHARE, OVER_TEMP_ALARM_C, READING_INTERVAL_MS, SOH_STUCK_SHARE } from './fleet.js';
import { Rng } from './prng.js';
const CAN_FIELDS = fieldNames('can');
const CELL_TEMPERATURE_FIELDS = fieldNames('can').filter((f) => f.startsWith('cell_temperature_'));

const NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
const DAY = 86_400_000;
const fleet = Fleet.create({ seed: 3, size: 8 });

describe('fleet trajectories', () => {
  it('is a pure function of (seed, vehicle, time), whatever the order of questions', () => {
    const other = Fleet.create({ seed: 3, size: 8 });
    const v = fleet.vehicles[2];
    const w = other.vehicles[2];
    if (!v || !w) throw new Error('fleet too small');
    const later = other.gpsAt(w, NOW + DAY);
    expect(other.gpsAt(w, NOW)).toEqual(fleet.gpsAt(v, NOW));
    expect(fleet.gpsAt(v, NOW + DAY)).toEqual(later);
    expect(fleet.canStateAt(v, NOW)).toEqual(other.canStateAt(w, NOW));
  });

  it('drains fuel while driving, or siphoned while parked, refuels to 100 % and never goes below the reserve', () => {
    for (const v of fleet.vehicles) {
      const readings = fleet.fuelReadings(v, NOW - 3 * DAY, NOW, false);
      let refuels = 0;
      for (let i = 1; i < readings.length; i++) {
        const prev = readings[i - 1];
        const cur = readings[i];
        if (!prev || !cur) continue;
        expect(cur.value).toBeGreaterThanOrEqual(12);
        if (cur.value > prev.value) {
          refuels += 1;
          expect(cur.value).toBe(100);
        }
        if (cur.value < prev.value && fleet.activityAt(v, prev.time + READING_INTERVAL_MS / 2) !== 'driving') {
          // A theft: parked, 15 % of the tank over the half hour, 2.5 % a reading.
          expect(fleet.activityAt(v, prev.time + READING_INTERVAL_MS / 2)).toBe('parked');
          expect(prev.value - cur.value).toBeCloseTo(2.5, 1);
        }
      }
      expect(refuels).toBeGreaterThan(0);
    }
  });

  it('now and then fuel is siphoned, or a parked pack drains, so that fuel_drop and soc_drain_while_parked have something to tell', () => {
    let thefts = 0;
    let drains = 0;
    for (const v of fleet.vehicles) {
      for (let t = NOW; t < NOW + 14 * DAY; t += 30 * 60_000) {
        if (fleet.activityAt(v, t + 1) !== 'parked') continue;
        const fuel = fleet.fuelReadings(v, t, t + 30 * 60_000, false);
        const fell = fuel[0]!.value - fuel[fuel.length - 1]!.value;
        const soc = [fleet.canStateAt(v, t).soc!, fleet.canStateAt(v, t + 30 * 60_000 - 1).soc!];
        if (fell > 0) {
          thefts++;
          expect(fell).toBeCloseTo(15, 1);
          // The pack is not the tank: a theft leaves the charge as it was.
          expect(soc[0]).toBe(soc[1]);
        }
        if (soc[0]! - soc[1]! > 0) {
          drains++;
          expect(soc[0]! - soc[1]!).toBeGreaterThanOrEqual(7);
          expect(fleet.gpsAt(v, t + 15 * 60_000).ignstatus).toBe(0);
          expect(fell).toBe(0);
        }
      }
    }
    expect(thefts).toBeGreaterThan(0);
    expect(drains).toBeGreaterThan(0);
  });

  it('never takes a pack below 0 % (a drain, then the driving after it within one cycle): 1,000 vehicles over 30 days', () => {
    // The soc only falls within a cycle until its charging segment: its lowest is just before that segment.
    const big = Fleet.create({ seed: 3, size: 1_000 });
    let lowest = Infinity;
    for (const v of big.vehicles) {
      const n = v.cycleSegments * 30 * 60_000;
      for (let c = Math.floor((NOW - v.cycleOffsetMs) / n); v.cycleOffsetMs + c * n < NOW + 30 * DAY; c++) {
        const charging = v.cycleOffsetMs + (c + 1) * n - 30 * 60_000;
        expect(big.activityAt(v, charging)).toBe('charging');
        lowest = Math.min(lowest, big.canStateAt(v, charging - 1).soc!);
      }
    }
    expect(lowest).toBeGreaterThanOrEqual(0);
  });

  it('moves plausibly: under 75 km/h, ignition on exactly while driving (idling included), moving with it off only when towed', () => {
    for (const v of fleet.vehicles.slice(0, 3)) {
      let prev = fleet.gpsAt(v, NOW);
      for (let t = NOW + 60_000; t <= NOW + DAY; t += 60_000) {
        const cur = fleet.gpsAt(v, t);
        expect(distanceKm(prev, cur)).toBeLessThan(1.1);
        expect(cur.speed).toBeLessThan(75);
        expect(cur.ignstatus).toBe(fleet.activityAt(v, t) === 'driving' ? 1 : 0);
        if (cur.ignstatus === 0 && cur.speed > 0) expect(fleet.activityAt(v, t)).toBe('parked');
        expect(Math.abs(cur.lat - v.depot.lat)).toBeLessThan(0.25);
        prev = cur;
      }
    }
  });

  it('idles before some drives and is towed now and then, so the vehicle events have them to tell', () => {
    let idling = 0;
    let towed = 0;
    for (const v of fleet.vehicles) {
      for (let t = NOW; t <= NOW + 7 * DAY; t += 60_000) {
        const g = fleet.gpsAt(v, t);
        if (g.ignstatus === 1 && g.speed === 0) idling++;
        if (g.ignstatus === 0 && g.speed > 0) towed++;
      }
    }
    // A week of the fleet: minutes standing with the ignition on, and minutes towed with it off.
    expect(idling).toBeGreaterThan(100);
    expect(towed).toBeGreaterThan(10);
  });
});

describe('CAN records', () => {
  // A vehicle with unused sensor slots, so that the sentinel can appear.
  const v = fleet.vehicles.find((x) => x.battery.temperatureSensors < 6);
  if (!v) throw new Error('no vehicle with fewer than 6 sensors in this fleet');
  const rng = Rng.seeded(11);
  const records = Array.from({ length: 400 }, (_, i) => canRecordData(fleet.canStateAt(v, NOW + i * 1000), rng));
  const allowed = new Set(['time', ...CAN_FIELDS]);

  it('carry time and a varying subset of the spec\'s parameters only', () => {
    const shapes = new Set(records.map((r) => Object.keys(r).sort().join(',')));
    expect(shapes.size).toBeGreaterThan(50);
    records.forEach((r, i) => {
      expect(r.time).toBe(NOW + i * 1000);
      expect(Object.keys(r).length).toBeGreaterThan(1);
      for (const key of Object.keys(r)) expect(allowed).toContain(key);
      for (const value of Object.values(r)) expect(typeof value).toBe('number');
    });
  });

  it('have realistic values', () => {
    for (const r of records) {
      for (const [k, value] of Object.entries(r)) {
        if (k.startsWith('cell_voltage_')) {
          expect(value).toBeGreaterThanOrEqual(3.0);
          expect(value).toBeLessThanOrEqual(3.65);
        }
        if (k === 'soc') {
          expect(value).toBeGreaterThanOrEqual(0);
          expect(value).toBeLessThanOrEqual(100);
        }
      }
      if (r.battery_voltage !== undefined) expect(Number.isInteger(r.battery_voltage * 100)).toBe(true);
    }
  });

  it('use the sentinel only for sensors beyond no_of_temperature_sensors, and say how many there are', () => {
    let sentinels = 0;
    for (const r of records) {
      CELL_TEMPERATURE_FIELDS.forEach((field, i) => {
        if (r[field] !== UNUSED_SENSOR_SENTINEL) return;
        sentinels += 1;
        expect(r.no_of_temperature_sensors).toBeDefined();
        expect(i + 1).toBeGreaterThan(r.no_of_temperature_sensors ?? 99);
      });
    }
    expect(sentinels).toBeGreaterThan(0);
  });
});

describe('what an analyst should find in the fleet', () => {
  it('a weak cell in one vehicle of seven: its imbalance grows as the pack discharges', () => {
    const fleet = Fleet.create({ seed: 5, size: 8 });
    const spread = (v: (typeof fleet.vehicles)[number], t: number) => {
      const s = fleet.canStateAt(v, t);
      const cells = Object.entries(s).filter(([k]) => k.startsWith('cell_voltage_')).map(([, x]) => x as number);
      return { soc: s.soc as number, spread: Math.max(...cells) - Math.min(...cells) };
    };
    const samples = Array.from({ length: 400 }, (_, k) => spread(fleet.vehicles[0]!, 1_763_700_000_000 + k * 900_000)).sort((a, b) => a.soc - b.soc);
    const mean = (xs: Array<{ spread: number }>) => xs.reduce((sum, x) => sum + x.spread, 0) / xs.length;
    const lowest = samples.slice(0, 100);
    const highest = samples.slice(-100);
    // A quarter of the state of charge lower sags the weak cell by about WEAK_CELL_SAG / 4 more.
    expect(mean(lowest) - mean(highest)).toBeGreaterThan(((highest.at(-1)!.soc - lowest[0]!.soc) / 100) * 0.12 * 0.3);
    // The others keep their small, steady spread.
    const other = Array.from({ length: 50 }, (_, k) => spread(fleet.vehicles[1]!, 1_763_700_000_000 + k * 900_000).spread);
    expect(Math.max(...other)).toBeLessThan(0.045);
  });

  const SEG = 30 * 60_000;
  const aged = Fleet.create({ seed: 11, size: 1_000 });
  /** Every charging segment's start of `v` within [from, to). */
  const chargings = (v: (typeof aged.vehicles)[number], from: number, to: number) => {
    const n = v.cycleSegments * SEG;
    const out: number[] = [];
    for (let c = Math.floor((from - v.cycleOffsetMs) / n); v.cycleOffsetMs + c * n < to; c++) out.push(v.cycleOffsetMs + (c + 1) * n - SEG);
    return out;
  };
  const cellsOf = (s: Record<string, number>) => Object.entries(s).filter(([k]) => k.startsWith('cell_voltage_')).sort().map(([, x]) => x);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

  it('packs lose capacity with their cycles; charging, Ah counted against the soc moved measure it; the BMS soh follows it, or is stuck at 100', () => {
    let stuck = 0;
    for (const v of aged.vehicles.slice(0, 200)) {
      const [a, b] = [aged.trueCapacityAh(v, NOW), aged.trueCapacityAh(v, NOW + 60 * DAY)];
      const cycles = aged.chargeCyclesAt(v, NOW + 60 * DAY) - aged.chargeCyclesAt(v, NOW);
      expect(cycles).toBeGreaterThan(10);
      expect(a - b).toBeCloseTo(cycles * CAPACITY_FADE_PER_CYCLE * v.battery.capacityAh, 6);
      const soh = aged.canStateAt(v, NOW).soh!;
      if (aged.sohStuck(v)) {
        stuck++;
        expect(soh).toBe(100);
      } else expect(soh).toBe(Math.round((100 * a) / v.battery.capacityAh));
    }
    expect(stuck).toBeGreaterThan(200 * SOH_STUCK_SHARE * 0.4);
    expect(stuck).toBeLessThan(200 * SOH_STUCK_SHARE * 2);
    // One vehicle's deep charges: the Ah a record a minute counts, over the soc points they moved, within 5 % of the truth.
    for (const v of aged.vehicles.slice(0, 20)) {
      for (const start of chargings(v, NOW, NOW + 10 * DAY)) {
        const first = aged.canStateAt(v, start);
        const last = aged.canStateAt(v, start + SEG - 1);
        if (last.soc! - first.soc! < 30) continue;
        let ah = 0;
        for (let m = 0; m < 30; m++) ah += aged.canStateAt(v, start + m * 60_000 + 30_000).current! / 60;
        const estimate = ah / ((last.soc! - first.soc!) / 100);
        expect(Math.abs(estimate / aged.trueCapacityAh(v, start) - 1)).toBeLessThan(0.05);
      }
    }
  });

  it('one pack in fifty has a drifting cell: below the others at rest, above them as a charge ends, further each cycle; the rest do not', () => {
    const drifting = aged.vehicles.filter((v) => aged.driftingCell(v) !== undefined);
    expect(drifting.length).toBeGreaterThan(aged.vehicles.length * DRIFT_SHARE * 0.4);
    expect(drifting.length).toBeLessThan(aged.vehicles.length * DRIFT_SHARE * 2);
    for (const v of drifting) {
      const n = aged.driftingCell(v)!;
      const starts = chargings(v, NOW, NOW + 12 * DAY);
      const atRest: Array<[drift: number, away: number]> = [];
      for (const start of starts) {
        // At rest: the middle of the cycle's first segment (parked at the depot); as the charge ends: its last minute.
        const rest = aged.canStateAt(v, start - (v.cycleSegments - 1) * SEG + SEG / 2);
        const end = aged.canStateAt(v, start + SEG - 60_000);
        const away = (s: Record<string, number>) => s[`cell_voltage_${String(n).padStart(2, '0')}`]! - median(cellsOf(s));
        const drift = aged.cellDriftV(v, start);
        atRest.push([drift, away(rest)]);
        if (drift > 0.05) {
          expect(away(rest)).toBeLessThan(-drift + 0.03);
          expect(away(end)).toBeGreaterThan(drift * 0.8 - 0.03);
        }
      }
      // Growing each cycle, but for a service's rebalancing (one in DRIFT_CYCLES), and the cell's distance at rest with it
      // (apart from the noise of a reading: its fixed offset from the others cancels).
      let rebalanced = 0;
      for (let i = 1; i < atRest.length; i++) {
        const [d0, a0] = atRest[i - 1]!;
        const [d1, a1] = atRest[i]!;
        if (d1 < d0) rebalanced++;
        else {
          expect(d1 - d0).toBeGreaterThanOrEqual(DRIFT_V_PER_CYCLE - 1e-9);
          expect(Math.abs(a1 - a0 + (d1 - d0))).toBeLessThan(0.015);
        }
      }
      expect(rebalanced).toBeLessThanOrEqual(1);
    }
    // A healthy pack's last cell stays with the others.
    for (const v of aged.vehicles.slice(0, 100).filter((v) => aged.driftingCell(v) === undefined && v.battery.cells > 1)) {
      for (const t of [NOW, NOW + 3 * DAY, NOW + 9 * DAY]) {
        const s = aged.canStateAt(v, t);
        expect(Math.abs(s[`cell_voltage_${String(v.battery.cells).padStart(2, '0')}`]! - median(cellsOf(s)))).toBeLessThan(0.04);
      }
    }
  });

  it('one pack in two hundred heats fast under load, its temperature rising well ahead of its own thermal alarm; the others warm slowly', () => {
    const big = Fleet.create({ seed: 11, size: 4_000 });
    const fast = big.vehicles.filter((v) => big.heatsFast(v));
    expect(fast.length).toBeGreaterThan(big.vehicles.length * HEAT_FAST_SHARE * 0.4);
    expect(fast.length).toBeLessThan(big.vehicles.length * HEAT_FAST_SHARE * 2);
    const hottest = (s: Record<string, number>) => Math.max(...Object.entries(s).filter(([k]) => k.startsWith('cell_temperature_')).map(([, x]) => x));
    for (const v of fast) {
      const start = chargings(v, NOW, NOW + 3 * DAY)[0]!;
      const minutes = Array.from({ length: 30 }, (_, m) => big.canStateAt(v, start + m * 60_000));
      const alarm = minutes.findIndex((s) => s.alert_over_temp === 1);
      expect(alarm).toBeGreaterThan(5);
      expect(hottest(minutes[alarm]!)).toBeGreaterThanOrEqual(OVER_TEMP_ALARM_C);
      // Five minutes before the alarm it was already rising faster than HEAT_FAST_C_PER_MIN less the others' warming.
      expect((hottest(minutes[alarm - 1]!) - hottest(minutes[alarm - 6]!)) / 5).toBeGreaterThan(HEAT_FAST_C_PER_MIN * 0.8);
      // The truth the soak judges by: heating fast since the charge began, and not once parked again.
      expect(big.heatingFastSince(v, start + alarm * 60_000)).toBe(start);
      // (A cycle begins parked at the depot, right after its charge.)
      expect(big.heatingFastSince(v, start + SEG + 60_000)).toBeUndefined();
    }
    for (const v of big.vehicles.slice(0, 100).filter((v) => !big.heatsFast(v))) {
      for (const start of chargings(v, NOW, NOW + 3 * DAY)) {
        const a = hottest(big.canStateAt(v, start));
        const b = hottest(big.canStateAt(v, start + 5 * 60_000));
        expect((b - a) / 5).toBeLessThan(1);
        expect(big.heatingFastSince(v, start + 5 * 60_000)).toBeUndefined();
        expect(big.canStateAt(v, start + 20 * 60_000).alert_over_temp === 1 && hottest(big.canStateAt(v, start + 20 * 60_000)) >= OVER_TEMP_ALARM_C).toBe(false);
      }
    }
  });

  it('a vehicle that goes silent sends nothing from then on', () => {
    const fleet = Fleet.create({ seed: 5, size: 3, silent: { index: 2, fromMs: 1_000 } });
    expect(fleet.reportsAt(fleet.vehicles[2]!, 999)).toBe(true);
    expect(fleet.reportsAt(fleet.vehicles[2]!, 1_000)).toBe(false);
    expect(fleet.reportsAt(fleet.vehicles[1]!, 5_000)).toBe(true);
  });
});

describe('battery swaps', () => {
  it('a third of the fleet gets another pack at each cycle’s charging segment: bms_id and bat_id_1 change there, and only there', () => {
    let swappers = 0;
    for (const v of fleet.vehicles) {
      const ids = new Set<number>();
      let changes = 0;
      let last: number | undefined;
      for (let t = NOW; t <= NOW + 7 * DAY; t += 30 * 60_000) {
        const s = fleet.canStateAt(v, t);
        ids.add(s.bms_id as number);
        if (last !== undefined && s.bms_id !== last) {
          changes++;
          expect(fleet.activityAt(v, t)).toBe('charging');
          expect(String(s.bms_id)).toHaveLength(6);
          expect(String(s.bat_id_1)).toHaveLength(7);
        }
        last = s.bms_id as number;
      }
      if (changes > 0) swappers++;
    }
    expect(swappers).toBeGreaterThan(0);
    expect(swappers).toBeLessThan(fleet.vehicles.length);
  });
});
