import { describe, expect, it } from 'vitest';
import { fieldNames } from '../../../telemetry/fields.js';
import { inputOf, recordOf, STREAMS, valueAt } from '../inputs.js';
import { fieldsOf } from './records.js';

/** A correction reads a vehicle's records back from InfluxDB (records.ts): it must ask for what InfluxDB holds. */
describe('the records a correction reads back', () => {
  it('asks InfluxDB for fields its measurements hold, the pack values’ sources among them, and gets the pack values again', () => {
    for (const plan of STREAMS.values()) {
      const held = new Set(fieldNames(plan.name));
      for (const f of fieldsOf(plan)) expect(held.has(f), `${plan.name}: ${f}`).toBe(true);
    }
    const can = STREAMS.get('can')!;
    expect(fieldsOf(can)).toEqual(expect.arrayContaining(['cell_temperature_01', 'cell_temperature_06', 'no_of_temperature_sensors', 'cell_voltage_01', 'cell_voltage_16', 'no_of_cells', 'soc', 'alert_over_temp']));
    // A record as it arrived, and as a correction reads it back (only the fields it asks for): the same values.
    const sent = { soc: 71, current: -12.5, battery_capacity: 80, no_of_temperature_sensors: 4, cell_temperature_01: 31, cell_temperature_02: 36.5, cell_temperature_03: 30, cell_temperature_04: 30.5, cell_temperature_05: -40, alert_over_temp: 0, no_of_cells: 3, cell_voltage_01: 3.3, cell_voltage_02: 3.31, cell_voltage_03: 3.36, cell_voltage_04: 3.9 };
    const readBack = Object.fromEntries(Object.entries(sent).filter(([k]) => fieldsOf(can).includes(k)));
    const a = recordOf(inputOf('can', 1_000, sent), can)!;
    const b = recordOf(inputOf('can', 1_000, readBack), can)!;
    for (let i = 0; i < can.fields.length; i++) expect(valueAt(b, i), can.fields[i]).toBe(valueAt(a, i));
    expect(valueAt(b, can.hottestAt)).toBe(36.5);
    // Cell 4 is beyond no_of_cells: of the three, cell 3 is furthest from their median (3.31 V).
    expect([valueAt(b, can.cellApartAt), valueAt(b, can.cellApartNumberAt)]).toEqual([3.36 - 3.31, 3]);
    expect([b.alarmMask, b.alarmValues]).toEqual([a.alarmMask, a.alarmValues]);
  });
});
