import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { flattenRecords } from './flatten.js';
import { packHealth } from './packHealth.js';
const CAN_ALERT_FLAGS = ALARM_FIELDS;

const T = 1_763_700_000_000;
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
    expect(packHealth(f, [-40])).toEqual({ cell_temperature_min: 29, cell_temperature_max: 31.5, cell_temperature_spread: 2.5, temperature_sensors_reported: 2 });
    // Every temperature an unused sensor: nothing to say about temperatures.
    expect(packHealth({ cell_temperature_01: -40, soc: 50 }, [-40])).toBeUndefined();
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
      `can_pack,vehicleno=PACK\\ 1 cell_voltage_min=3.3,cell_voltage_max=3.4,cell_voltage_mean=${(3.4 + 3.3) / 2},cell_voltage_spread=${3.4 - 3.3},cells_reported=2,alerts_raised=1 ${T}`,
      `gps,vehicleno=G lat=1,lng=2,alti=3,speed=4,ignstatus=1 ${T}`,
    ]);
    expect(on.sources).toEqual([0, 0, 1]);
    expect(flattenRecords([r], { temperatureSentinels: [-40], packHealth: false }).lines).toHaveLength(1);
  });
});

describe('packHealth against a plain reading of its rules', () => {
  /** The rules written out plainly: filter, then min, max, mean, spread and counts. */
  function reference(fields: Record<string, number>, sentinels: readonly number[]): Record<string, number> | undefined {
    const entries = Object.entries(fields);
    const cells = entries.filter(([k]) => /^cell_voltage_\d{2}$/.test(k) && (fields.no_of_cells === undefined || Number(k.slice(-2)) <= fields.no_of_cells)).map(([, v]) => v);
    const temps = entries
      .filter(([k, v]) => /^cell_temperature_\d{2}$/.test(k) && (fields.no_of_temperature_sensors === undefined || Number(k.slice(-2)) <= fields.no_of_temperature_sensors) && !sentinels.includes(v))
      .map(([, v]) => v);
    const flags = entries.filter(([k]) => (CAN_ALERT_FLAGS as readonly string[]).includes(k));
    if (cells.length === 0 && temps.length === 0 && flags.length === 0) return undefined;
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
    return out;
  }

  it('agrees on random CAN records: any subset of cells, sensors, flags and counts', () => {
    const names = [
      ...Array.from({ length: 16 }, (_, i) => `cell_voltage_${String(i + 1).padStart(2, '0')}`),
      ...Array.from({ length: 6 }, (_, i) => `cell_temperature_${String(i + 1).padStart(2, '0')}`),
      ...CAN_ALERT_FLAGS.slice(0, 4),
      'no_of_cells', 'no_of_temperature_sensors', 'soc', 'current',
    ];
    const value = fc.oneof(fc.constantFrom(0, -40, 215, 1, 3.3), fc.double({ noNaN: true, noDefaultInfinity: true, min: -100, max: 300 }), fc.integer({ min: 0, max: 20 }));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...names), value, { maxKeys: names.length }), (fields) => {
        expect(packHealth(fields, [-40, 215])).toEqual(reference(fields, [-40, 215]));
      }),
      { numRuns: 2_000 },
    );
  });
});
