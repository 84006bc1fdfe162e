import type { TelemetryRecord } from '../validate/record.js';
import { temperatureSensorNumber } from '../validate/fields.js';
import { escapeTag, formatFloat } from './lineProtocol.js';

/**
 * Record → one line of line protocol: measurement = the record's type (`gps` or `can`), tag
 * `vehicleno`, one float field per parameter the record carried, timestamp in milliseconds.
 * A pure function of the record, so a redelivered job rewrites identical points.
 */

export interface FlattenOptions {
  /** Temperature readings equal to one of these are an unused sensor, not a temperature. */
  temperatureSentinels: readonly number[];
}

export interface Flattened {
  /** Undefined when nothing was left to write (every field was an unused-sensor reading). */
  line: string | undefined;
  /** Fields left out as unused temperature sensors. */
  dropped: string[];
}

/**
 * Unused temperature sensors: a `cell_temperature_NN` reading is left out when NN is beyond the
 * record's `no_of_temperature_sensors`, or when its value is one of the configured sentinels.
 */
function isUnusedSensor(field: string, value: number, record: TelemetryRecord, sentinels: readonly number[]): boolean {
  const n = temperatureSensorNumber(field);
  if (n === undefined) return false;
  const count = record.fields.no_of_temperature_sensors;
  if (count !== undefined && n > count) return true;
  return sentinels.includes(value);
}

export function flattenRecord(record: TelemetryRecord, opts: FlattenOptions): Flattened {
  let fields = '';
  const dropped: string[] = [];
  for (const key in record.fields) {
    const value = record.fields[key]!;
    if (record.type === 'can' && isUnusedSensor(key, value, record, opts.temperatureSentinels)) {
      dropped.push(key);
      continue;
    }
    // Field keys were restricted at validation to letters, digits and _, so need no escaping.
    fields += `${fields ? ',' : ''}${key}=${formatFloat(value)}`;
  }
  if (!fields) return { line: undefined, dropped };
  return { line: `${record.type},vehicleno=${escapeTag(record.vehicleno)} ${fields} ${record.time}`, dropped };
}

export interface FlattenBatch {
  lines: string[];
  /** `sources[i]` is the index in the input of the record `lines[i]` was made from. */
  sources: number[];
  droppedFields: number;
  emptyRecords: number;
}

export function flattenRecords(records: readonly TelemetryRecord[], opts: FlattenOptions): FlattenBatch {
  const lines: string[] = [];
  const sources: number[] = [];
  let droppedFields = 0;
  let emptyRecords = 0;
  for (let i = 0; i < records.length; i++) {
    const f = flattenRecord(records[i]!, opts);
    droppedFields += f.dropped.length;
    if (f.line === undefined) emptyRecords++;
    else {
      lines.push(f.line);
      sources.push(i);
    }
  }
  return { lines, sources, droppedFields, emptyRecords };
}
