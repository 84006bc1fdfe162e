import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { flattenRecords } from './flatten.js';
import { MASK_DIGITS, readRows, rowsOf } from './points.js';
import { packHealth } from './packHealth.js';
import { SETTING_DEFAULTS } from '../../config/index.js';
import { Plausibility } from '../plausibility/judge.js';
import { rangeRules } from '../plausibility/rules.js';
const CAN_ALERT_FLAGS = ALARM_FIELDS;

const T = 1_763_700_000_000;
/** CAN_TEMP_SENTINELS as it stands by default. */
const SENTINELS = SETTING_DEFAULTS.CAN_TEMP_SENTINELS;
const can = (fields: Record<string, number>): TelemetryRecord => ({ vehicleno: 'PACK 1', type: 'can', time: T, fields });

describe('pack health', () => {
  it('takes min, max, mean and spread of the cells present, and counts them', () => {
    const f = { cell_voltage_01: 3.312, cell_voltage_02: 3.298, cell_voltage_03: 3.305, soc: 80 };
    expect(packHealth(f, [-40])).toEqual({
      cell_voltage_min: 3.298,
      cell_voltage_max: 3.312,
      cell_voltage_mean: (3.312 + 3.298 + 3.305) / 3,
      cell_voltage_spread: 3.312 - 3.298,
      cells_reported: 3,
    });
  });

  it('counts only cells numbered within no_of_cells, when it is sent', () => {
    const f = { no_of_cells: 2, cell_voltage_01: 3.3, cell_voltage_02: 3.2, cell_voltage_03: 2.1 };
    expect(packHealth(f, [])).toMatchObject({ cell_voltage_min: 3.2, cell_voltage_max: 3.3, cells_reported: 2 });
  });

  it('takes temperatures after the unused-sensor rule: within no_of_temperature_sensors and not a sentinel', () => {
    const f = { no_of_temperature_sensors: 3, cell_temperature_01: 31.5, cell_temperature_02: -40, cell_temperature_03: 29, cell_temperature_04: 55 };
    expect(packHealth(f, [-40])).toEqual({ cell_temperature_min: 29, cell_temperature_max: 31.5, cell_temperature_spread: 2.5, temperature_sensors_reported: 2, temperature_sensors_unused: 2 });
    // Every temperature an unused sensor: nothing to say about temperatures but how many slots were unused.
    expect(packHealth({ cell_temperature_01: -40, soc: 50 }, [-40])).toEqual({ temperature_sensors_unused: 1 });
  });

  it('never lets a sentinel or an empty slot change health, and counts them', () => {
    // A 4-cell, 2-sensor pack on a BMS with 16 cell and 6 sensor slots: as one pack reports it, and as another.
    const used = { no_of_cells: 4, no_of_temperature_sensors: 2, cell_voltage_01: 3.31, cell_voltage_02: 3.29, cell_voltage_03: 3.3, cell_voltage_04: 3.32, cell_temperature_01: 30, cell_temperature_02: 33.5 };
    const health = packHealth(used, SENTINELS);
    expect(health).toEqual({ cell_voltage_min: 3.29, cell_voltage_max: 3.32, cell_voltage_mean: (3.31 + 3.29 + 3.3 + 3.32) / 4, cell_voltage_spread: 3.32 - 3.29, cells_reported: 4, cell_temperature_min: 30, cell_temperature_max: 33.5, cell_temperature_spread: 3.5, temperature_sensors_reported: 2 });
    // Slots beyond the counts, at 0 V and at each sentinel; and, without the counts, empty cells at 0 V and sensors at a sentinel.
    const padded = { ...used, cell_voltage_05: 0, cell_voltage_06: 3.1, cell_temperature_03: -80, cell_temperature_04: -273.15, cell_temperature_05: 12 };
    expect(packHealth(padded, SENTINELS)).toEqual({ ...health, cells_unused: 2, temperature_sensors_unused: 3 });
    const { no_of_cells: _c, no_of_temperature_sensors: _t, ...uncounted } = used;
    const zeros = { ...uncounted, cell_voltage_05: 0, cell_voltage_16: 0, cell_temperature_03: -80, cell_temperature_06: -273.15, cell_temperature_04: -40 };
    expect(packHealth(zeros, SENTINELS)).toEqual({ ...health, cells_unused: 2, temperature_sensors_unused: 3 });
  });

  it('lets the sentinels through plausibility (not refused as out of range): flatten leaves them out', () => {
    const judge = (sentinels: readonly number[]) => new Plausibility({ maxAheadMs: 0, maxAgeMs: 0, ...rangeRules([], sentinels) });
    const r = () => can({ cell_temperature_01: 30, cell_temperature_02: -80, cell_temperature_03: -273.15, cell_temperature_04: -60 });
    expect(judge(SENTINELS).judge(r(), T).refused.map((f) => f.field)).toEqual(['cell_temperature_04']);
    expect(judge([]).judge(r(), T).refused.map((f) => f.field)).toEqual(['cell_temperature_02', 'cell_temperature_03', 'cell_temperature_04']);
    const rec = r();
    judge(SENTINELS).judge(rec, T);
    expect(flattenRecords([rec], { temperatureSentinels: SENTINELS, packHealth: true }).lines).toEqual([
      `can,vehicleno=PACK\\ 1 cell_temperature_01=30 ${T}`,
      `can_pack,vehicleno=PACK\\ 1 cell_temperature_min=30,cell_temperature_max=30,cell_temperature_spread=0,temperature_sensors_reported=1,temperature_sensors_unused=2 ${T}`,
    ]);
  });

  it('counts the alert flags raised among those sent, zero included', () => {
    expect(packHealth({ alert_over_temp: 1, alert_short_circuit: 0, alert_under_temp: 1, alert: 1 }, [])).toEqual({ alerts_raised: 2 });
    expect(packHealth({ alert_over_temp: 0 }, [])).toEqual({ alerts_raised: 0 });
  });

  it('gives a record with none of its inputs no point', () => {
    expect(packHealth({ soc: 50, current: -3, no_of_cells: 16 }, [-40])).toBeUndefined();
  });

  it('is written beside the can point, same tag and time, only when turned on', () => {
    const r = can({ soc: 80, cell_voltage_01: 3.4, cell_voltage_02: 3.3, cell_temperature_01: -40, alert_over_temp: 1 });
    const on = flattenRecords([r, { vehicleno: 'G', type: 'gps', time: T, fields: { lat: 1, lng: 2, alti: 3, speed: 4, ignstatus: 1 } }], { temperatureSentinels: [-40], packHealth: true });
    expect(on.lines).toEqual([
      `can,vehicleno=PACK\\ 1 soc=80,cell_voltage_01=3.4,cell_voltage_02=3.3,alert_over_temp=1 ${T}`,
      `can_pack,vehicleno=PACK\\ 1 cell_voltage_min=3.3,cell_voltage_max=3.4,cell_voltage_mean=${(3.4 + 3.3) / 2},cell_voltage_spread=${3.4 - 3.3},cells_reported=2,alerts_raised=1,temperature_sensors_unused=1 ${T}`,
      `gps,vehicleno=G lat=1,lng=2,alti=3,speed=4,ignstatus=1 ${T}`,
    ]);
    expect(on.sources).toEqual([0, 0, 1]);
    expect(flattenRecords([r], { temperatureSentinels: [-40], packHealth: false }).lines).toHaveLength(1);
  });

  it('queues the unused counts by name after the mask, as the releases before read a pack row (their mask names ten fields)', () => {
    const r = can({ no_of_cells: 2, cell_voltage_01: 3.4, cell_voltage_02: 3.3, cell_voltage_03: 0, cell_temperature_01: -80 });
    const rows = rowsOf([r], { temperatureSentinels: SENTINELS, packHealth: true });
    const packRow = rows.buf.toString('latin1', 0, rows.len).split('\n').find((l) => l.startsWith('p'));
    expect(packRow).toBe(`p${MASK_DIGITS[0b11111]}:3.3,3.4,${(3.4 + 3.3) / 2},${3.4 - 3.3},2;cells_unused=1,temperature_sensors_unused=1`);
    expect(readRows(rows.buf.subarray(0, rows.len)).lines.texts()[1]).toContain('cells_reported=2,cells_unused=1,temperature_sensors_unused=1 ');
  });
});

describe('packHealth against a plain reading of its rules', () => {
  /** The rules written out plainly: filter, then min, max, mean, spread and counts. */
  function reference(fields: Record<string, number>, sentinels: readonly number[]): Record<string, number> | undefined {
    const entries = Object.entries(fields);
    const cellSlots = entries.filter(([k]) => /^cell_voltage_\d{2}$/.test(k));
    const cells = cellSlots.filter(([k, v]) => (fields.no_of_cells === undefined || Number(k.slice(-2)) <= fields.no_of_cells) && v !== 0).map(([, v]) => v);
    const sensorSlots = entries.filter(([k]) => /^cell_temperature_\d{2}$/.test(k));
    const temps = sensorSlots.filter(([k, v]) => (fields.no_of_temperature_sensors === undefined || Number(k.slice(-2)) <= fields.no_of_temperature_sensors) && !sentinels.includes(v)).map(([, v]) => v);
    const flags = entries.filter(([k]) => (CAN_ALERT_FLAGS as readonly string[]).includes(k));
    if (cellSlots.length === 0 && sensorSlots.length === 0 && flags.length === 0) return undefined;
    const out: Record<string, number> = {};
    if (cells.length > 0) {
      Object.assign(out, { cell_voltage_min: Math.min(...cells), cell_voltage_max: Math.max(...cells) });
      out.cell_voltage_mean = cells.reduce((a, b) => a + b, 0) / cells.length;
      out.cell_voltage_spread = out.cell_voltage_max! - out.cell_voltage_min!;
      out.cells_reported = cells.length;
    }
    if (temps.length > 0) {
      Object.assign(out, { cell_temperature_min: Math.min(...temps), cell_temperature_max: Math.max(...temps) });
      out.cell_temperature_spread = out.cell_temperature_max! - out.cell_temperature_min!;
      out.temperature_sensors_reported = temps.length;
    }
    if (flags.length > 0) out.alerts_raised = flags.filter(([, v]) => v !== 0).length;
    if (cellSlots.length > cells.length) out.cells_unused = cellSlots.length - cells.length;
    if (sensorSlots.length > temps.length) out.temperature_sensors_unused = sensorSlots.length - temps.length;
    return out;
  }

  it('agrees on random CAN records: any subset of cells, sensors, flags and counts', () => {
    const names = [
      ...Array.from({ length: 16 }, (_, i) => `cell_voltage_${String(i + 1).padStart(2, '0')}`),
      ...Array.from({ length: 6 }, (_, i) => `cell_temperature_${String(i + 1).padStart(2, '0')}`),
      ...CAN_ALERT_FLAGS.slice(0, 4),
      'no_of_cells', 'no_of_temperature_sensors', 'soc', 'current',
    ];
    const value = fc.oneof(fc.constantFrom(0, -40, -80, -273.15, 215, 1, 3.3), fc.double({ noNaN: true, noDefaultInfinity: true, min: -100, max: 300 }), fc.integer({ min: 0, max: 20 }));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), value, { maxKeys: names.length }), (fields) => {
        expect(packHealth(fields, [...SENTINELS, 215])).toEqual(reference(fields, [...SENTINELS, 215]));
      }),
      { numRuns: 2_000 },
    );
  });
});
