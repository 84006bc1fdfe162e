import { describe, expect, it } from 'vitest';
import { dictionaryOf, FIELD_DICTIONARY, fieldNames, TYPES, typeOfRow } from './fields.js';
import { CAN, GPS, RECORD_TYPES, type RecordTypeSpec } from './vehicleData.js';

/**
 * The wire ids and row letters are what one release's jobs say to the next: frozen. This is the
 * dictionary as payload v2 was made with it; a schema may add to its end, never change what is here.
 */
const FROZEN_V2 = [
  'lat', 'lng', 'alti', 'speed', 'ignstatus', 'time',
  'allow_charging', 'allow_discharging', 'battery_voltage', 'current', 'power', 'soc', 'soh',
  'battery_capacity', 'charge_cycle', 'chemistry', 'load_status', 'bms_id',
  ...Array.from({ length: 16 }, (_, i) => `bat_id_${i + 1}`),
  'no_of_cells', 'no_of_temperature_sensors',
  ...Array.from({ length: 16 }, (_, i) => `cell_voltage_${String(i + 1).padStart(2, '0')}`),
  ...Array.from({ length: 6 }, (_, i) => `cell_temperature_${String(i + 1).padStart(2, '0')}`),
  'alert', 'alert_board_over_temp', 'alert_board_under_temp', 'alert_cell_conn_broken',
  'alert_cell_diff_fault_battery_is_disbalanced', 'alert_cell_over_voltage_charged',
  'alert_cell_under_voltage_discharged', 'alert_over_current_charging', 'alert_over_current_cont_charging',
  'alert_over_current_discharging', 'alert_over_temp',
  'alert_pack_ov_fault_total_pack_voltage_is_higher_than_set_threshold',
  'alert_prl_fault_fault_in_battery_connected_in_parallel', 'alert_short_circuit', 'alert_thermal_runaway',
  'alert_under_temp',
];

describe('the record schema', () => {
  it('keeps every wire id and row letter a previous release wrote', () => {
    expect(FIELD_DICTIONARY.slice(0, FROZEN_V2.length)).toEqual(FROZEN_V2);
    expect(TYPES.map((t) => [t.name, t.spec.row, t.spec.measurement])).toEqual(expect.arrayContaining([['gps', 'g', 'gps'], ['can', 'c', 'can']]));
    expect(typeOfRow('g'.charCodeAt(0))?.name).toBe('gps');
  });

  it('names the spec\'s fields: five of a GPS record, all required, and 68 CAN parameters, none required', () => {
    expect(fieldNames('gps')).toEqual(['lat', 'lng', 'alti', 'speed', 'ignstatus']);
    expect(GPS.fields.every((f) => f.required)).toBe(true);
    expect(fieldNames('can')).toHaveLength(68);
    expect(CAN.fields.some((f) => f.required)).toBe(false);
    for (const t of RECORD_TYPES) for (const f of t.fields) expect(f.description, f.name).not.toBe('');
  });

  it('refuses a schema whose ids contradict each other or leave a gap', () => {
    const with_ = (fields: RecordTypeSpec['fields']): RecordTypeSpec[] => [GPS, { ...CAN, fields: [...CAN.fields, ...fields] }];
    const f = (id: number, name: string) => ({ id, name, json: 'number' as const, stored: 'float' as const, description: name });
    expect(dictionaryOf(with_([f(74, 'motor_temperature')]))).toHaveLength(75);
    expect(() => dictionaryOf(with_([f(11, 'motor_temperature')]))).toThrow(/wire id 11 is both soc and motor_temperature/);
    expect(() => dictionaryOf(with_([f(74, 'soc')]))).toThrow(/soc has two wire ids/);
    expect(() => dictionaryOf(with_([f(75, 'motor_temperature')]))).toThrow(/wire id 74 is unused/);
  });
});
