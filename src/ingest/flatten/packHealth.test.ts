import { describe, expect, it } from 'vitest';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { flattenRecords } from './flatten.js';
import { packHealth } from './packHealth.js';

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
