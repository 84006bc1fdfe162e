/**
 * The field catalogue of the spec (sections 2.5 and 2.6). The CAN object is dynamic:
 * these are the parameters the spec names, but a record carries only those received,
 * and new numeric parameters are accepted too (see record.ts).
 */

export const GPS_FIELDS = ['lat', 'lng', 'alti', 'speed', 'ignstatus'] as const;
export type GpsField = (typeof GPS_FIELDS)[number];

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);
const two = (n: number): string => String(n).padStart(2, '0');

export const CAN_ALERT_FLAGS = [
  'alert_board_over_temp',
  'alert_board_under_temp',
  'alert_cell_conn_broken',
  'alert_cell_diff_fault_battery_is_disbalanced',
  'alert_cell_over_voltage_charged',
  'alert_cell_under_voltage_discharged',
  'alert_over_current_charging',
  'alert_over_current_cont_charging',
  'alert_over_current_discharging',
  'alert_over_temp',
  'alert_pack_ov_fault_total_pack_voltage_is_higher_than_set_threshold',
  'alert_prl_fault_fault_in_battery_connected_in_parallel',
  'alert_short_circuit',
  'alert_thermal_runaway',
  'alert_under_temp',
] as const;

export const CELL_TEMPERATURE_FIELDS: readonly string[] = range(1, 6).map((n) => `cell_temperature_${two(n)}`);

/** Every CAN parameter the spec names except `time` (68 fields; 69 with `time`). */
export const CAN_FIELDS: readonly string[] = [
  'allow_charging',
  'allow_discharging',
  'battery_voltage',
  'current',
  'power',
  'soc',
  'soh',
  'battery_capacity',
  'charge_cycle',
  'chemistry',
  'load_status',
  'bms_id',
  ...range(1, 16).map((n) => `bat_id_${n}`),
  'no_of_cells',
  'no_of_temperature_sensors',
  ...range(1, 16).map((n) => `cell_voltage_${two(n)}`),
  ...CELL_TEMPERATURE_FIELDS,
  'alert',
  ...CAN_ALERT_FLAGS,
];

/** `cell_temperature_03` → 3; anything else → undefined. */
export function temperatureSensorNumber(field: string): number | undefined {
  const m = /^cell_temperature_(\d{2})$/.exec(field);
  return m ? Number(m[1]) : undefined;
}

/**
 * Field names a job payload (v2 and v3, src/ingest/queue/codec.ts) may refer to by number: the
 * spec's, frozen here as they were when v2 was made. Never reorder or remove; new names need no entry (they travel as strings).
 */
export const FIELD_DICTIONARY: readonly string[] = Object.freeze([
  'lat', 'lng', 'alti', 'speed', 'ignstatus', 'time',
  'allow_charging', 'allow_discharging', 'battery_voltage', 'current', 'power', 'soc', 'soh',
  'battery_capacity', 'charge_cycle', 'chemistry', 'load_status', 'bms_id',
  'bat_id_1', 'bat_id_2', 'bat_id_3', 'bat_id_4', 'bat_id_5', 'bat_id_6', 'bat_id_7', 'bat_id_8',
  'bat_id_9', 'bat_id_10', 'bat_id_11', 'bat_id_12', 'bat_id_13', 'bat_id_14', 'bat_id_15', 'bat_id_16',
  'no_of_cells', 'no_of_temperature_sensors',
  'cell_voltage_01', 'cell_voltage_02', 'cell_voltage_03', 'cell_voltage_04', 'cell_voltage_05',
  'cell_voltage_06', 'cell_voltage_07', 'cell_voltage_08', 'cell_voltage_09', 'cell_voltage_10',
  'cell_voltage_11', 'cell_voltage_12', 'cell_voltage_13', 'cell_voltage_14', 'cell_voltage_15',
  'cell_voltage_16',
  'cell_temperature_01', 'cell_temperature_02', 'cell_temperature_03', 'cell_temperature_04',
  'cell_temperature_05', 'cell_temperature_06',
  'alert', 'alert_board_over_temp', 'alert_board_under_temp', 'alert_cell_conn_broken',
  'alert_cell_diff_fault_battery_is_disbalanced', 'alert_cell_over_voltage_charged',
  'alert_cell_under_voltage_discharged', 'alert_over_current_charging', 'alert_over_current_cont_charging',
  'alert_over_current_discharging', 'alert_over_temp',
  'alert_pack_ov_fault_total_pack_voltage_is_higher_than_set_threshold',
  'alert_prl_fault_fault_in_battery_connected_in_parallel', 'alert_short_circuit', 'alert_thermal_runaway',
  'alert_under_temp',
]);
