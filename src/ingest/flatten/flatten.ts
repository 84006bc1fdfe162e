import type { TelemetryRecord } from '../../telemetry/record.js';
import { temperatureSensorNumber } from '../../telemetry/fields.js';
import { escapeTag, formatFloat } from '../../telemetry/lineProtocol.js';
import { PACK_MEASUREMENT, packHealth } from './packHealth.js';

/**
 * Record → one line of line protocol: measurement = the record's type (`gps` or `can`), tag
 * `vehicleno`, one float field per parameter the record carried, timestamp in milliseconds.
 * A pure function of the record, so a redelivered job rewrites identical points.
 */

export interface FlattenOptions {
  /** Temperature readings equal to one of these are an unused sensor, not a temperature. */
  temperatureSentinels: readonly number[];
  /** Also write each CAN record's pack-health point (`can_pack`, packHealth.ts); PACK_HEALTH. */
  packHealth?: boolean;
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
 *
 * The sensor number of a field name is looked up once per name (a few hundred names are in use)
 * rather than matched with a pattern for every value of every CAN record.
 */
const NOT_A_SENSOR = -1;
const sensorOf = new Map<string, number>();
const NAMES_KEPT = 10_000;

/** `cell_temperature_NN` → NN; anything else → -1. */
export function sensorNumber(field: string): number {
  let n = sensorOf.get(field);
  if (n === undefined) {
    n = temperatureSensorNumber(field) ?? NOT_A_SENSOR;
    if (sensorOf.size < NAMES_KEPT) sensorOf.set(field, n);
  }
  return n;
}

/** `compute(key)`, remembered in `cache` for up to NAMES_KEPT keys (then all forgotten at once): a fleet's plates. */
export function remembered(cache: Map<string, string>, key: string, compute: (key: string) => string): string {
  let v = cache.get(key);
  if (v === undefined) {
    v = compute(key);
    if (cache.size >= NAMES_KEPT) cache.clear();
    cache.set(key, v);
  }
  return v;
}

/** Escaped tag values by vehicle number: a fleet's few thousand plates are escaped once each. */
const escapedTags = new Map<string, string>();

export function tagOf(vehicleno: string): string {
  return remembered(escapedTags, vehicleno, escapeTag);
}

/**
 * The `key=value` parts of the line being built, joined once: a flat string, where appending to a
 * string would leave a rope of a node or two per field for the write's final join to walk (that
 * walk doubled the cost of flattening 69-field CAN records). Reused: flattening is synchronous.
 */
const parts: string[] = [];

/** Whether `name`'s reading is an unused temperature sensor's, in a CAN record reporting `sensors` of them. */
export function isUnusedSensor(name: string, value: number, sensors: number | undefined, sentinels: readonly number[]): boolean {
  return isUnusedSensorNumber(sensorNumber(name), value, sensors, sentinels);
}

/** The same rule by the field's sensor number (-1: not a temperature sensor), for callers that know it. */
export function isUnusedSensorNumber(n: number, value: number, sensors: number | undefined, sentinels: readonly number[]): boolean {
  return n !== NOT_A_SENSOR && ((sensors !== undefined && n > sensors) || sentinels.includes(value));
}

export function flattenRecord(record: TelemetryRecord, opts: FlattenOptions): Flattened {
  const values = record.fields;
  const can = record.type === 'can';
  const count = can ? values.no_of_temperature_sensors : undefined;
  const sentinels = opts.temperatureSentinels;
  let dropped: string[] | undefined;
  parts.length = 0;
  for (const key in values) {
    const value = values[key]!;
    if (can && isUnusedSensor(key, value, count, sentinels)) {
      (dropped ??= []).push(key);
      continue;
    }
    // Field keys were restricted at validation to letters, digits and _, so need no escaping.
    parts.push(`${key}=${formatFloat(value)}`);
  }
  if (parts.length === 0) return { line: undefined, dropped: dropped ?? [] };
  const line = `${record.type},vehicleno=${tagOf(record.vehicleno)} ${parts.join(',')} ${record.time}`;
  parts.length = 0;
  return { line, dropped: dropped ?? [] };
}

export interface FlattenBatch {
  lines: string[];
  /** `sources[i]` is the index in the input of the record `lines[i]` was made from (a record's `can_pack` point too). */
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
    const record = records[i]!;
    const f = flattenRecord(record, opts);
    droppedFields += f.dropped.length;
    if (f.line === undefined) emptyRecords++;
    else {
      lines.push(f.line);
      sources.push(i);
    }
    if (opts.packHealth && record.type === 'can') {
      const pack = packHealth(record.fields, opts.temperatureSentinels);
      if (pack) {
        lines.push(`${PACK_MEASUREMENT},vehicleno=${tagOf(record.vehicleno)} ${Object.entries(pack).map(([k, v]) => `${k}=${formatFloat(v)}`).join(',')} ${record.time}`);
        sources.push(i);
      }
    }
  }
  return { lines, sources, droppedFields, emptyRecords };
}
