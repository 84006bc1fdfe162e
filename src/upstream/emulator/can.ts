/**
 * The CAN object is dynamic (spec §2.6, rule 2): a record carries only the parameters "received".
 * This picks a varying subset of a vehicle's full CAN state, grouped the way a BMS reports (a pack
 * summary often, identities rarely), and sometimes reports unused temperature sensors with the
 * sentinel value.
 */
import { fieldNames } from '../../telemetry/fields.js';

/** The CAN parameters the schema names (src/telemetry/vehicleData.ts): the emulator sends these and no others. */
const CAN_FIELDS = fieldNames('can');
const CELL_TEMPERATURE_FIELDS = CAN_FIELDS.filter((f) => f.startsWith('cell_temperature_'));
import type { CanState } from './fleet.js';
import type { Rng } from './prng.js';
import type { CanData } from './records.js';

/** Value a BMS reports for a temperature sensor that is not fitted. */
export const UNUSED_SENSOR_SENTINEL = -40;

interface Group {
  /** Chance the group is in a record at all. */
  p: number;
  /** Chance each of its fields is, when the group is. */
  each: number;
  match: (field: string) => boolean;
}

const PACK = new Set(['battery_voltage', 'current', 'power', 'soc', 'soh', 'battery_capacity', 'charge_cycle', 'chemistry', 'load_status']);

const GROUPS: readonly Group[] = [
  { p: 0.9, each: 0.85, match: (f) => PACK.has(f) },
  { p: 0.5, each: 1, match: (f) => f === 'allow_charging' || f === 'allow_discharging' },
  { p: 0.15, each: 1, match: (f) => f === 'bms_id' || f.startsWith('bat_id_') },
  { p: 0.5, each: 1, match: (f) => f === 'no_of_cells' || f === 'no_of_temperature_sensors' },
  { p: 0.6, each: 0.95, match: (f) => f.startsWith('cell_voltage_') },
  { p: 0.6, each: 0.95, match: (f) => f.startsWith('cell_temperature_') },
  { p: 0.6, each: 1, match: (f) => f === 'alert' },
  { p: 0.3, each: 0.7, match: (f) => f.startsWith('alert_') },
];

export interface CanSubsetOptions {
  /** Chance that a record lists the unused temperature sensors with the sentinel. Default 0.3. */
  sentinelRatio?: number;
}

export function canRecordData(state: CanState, rng: Rng, opts: CanSubsetOptions = {}): CanData {
  const time = state.time;
  if (time === undefined) throw new Error('CAN state without time');
  const picked = new Set<string>();
  for (const group of GROUPS) {
    if (!rng.chance(group.p)) continue;
    for (const field of CAN_FIELDS) {
      if (group.match(field) && field in state && rng.chance(group.each)) picked.add(field);
    }
  }
  // An alert is what a receiver most needs to see: when one is raised, it is always sent.
  if (state.alert === 1) {
    for (const field of CAN_FIELDS) if (field.startsWith('alert') && state[field] === 1) picked.add(field);
    picked.add('alert');
  }
  const sensors = state.no_of_temperature_sensors ?? CELL_TEMPERATURE_FIELDS.length;
  const sentinel = sensors < CELL_TEMPERATURE_FIELDS.length && rng.chance(opts.sentinelRatio ?? 0.3);
  if (sentinel) picked.add('no_of_temperature_sensors');
  if (picked.size === 0) picked.add('soc');

  const data: CanData = { time };
  for (const field of CAN_FIELDS) {
    const value = state[field];
    if (picked.has(field) && value !== undefined) data[field] = value;
  }
  if (sentinel) {
    CELL_TEMPERATURE_FIELDS.slice(sensors).forEach((field) => {
      data[field] = UNUSED_SENSOR_SENTINEL;
    });
  }
  return data;
}
