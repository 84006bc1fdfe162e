import type { TelemetryRecord } from '../../telemetry/record.js';
import { typeOf, VEHICLE_TAG, type RecordTypeInfo } from '../../telemetry/fields.js';
import { escapeTag, formatFloat } from '../../telemetry/lineProtocol.js';
import type { RowDraft } from './draft.js';
import { NAMES } from './names.js';
import { NO_OF_CELLS, NO_OF_TEMPERATURE_SENSORS, PACK_MEASUREMENT, packHealth, type PackHealth } from './packHealth.js';

/**
 * Record → points: measurement = the record type's (src/telemetry/vehicleData.ts), tag `vehicleno`,
 * one float field per parameter the record carried, timestamp in milliseconds; then the type's
 * flatten rule (`plain`, or `battery`: unused temperature sensors left out, a pack-health point).
 * A pure function of the record, so a redelivered job rewrites identical points.
 */

export interface FlattenOptions {
  /** Temperature readings equal to one of these are an unused sensor, not a temperature. */
  temperatureSentinels: readonly number[];
  /** Also write each CAN record's pack-health point (`can_pack`, packHealth.ts); PACK_HEALTH. */
  packHealth?: boolean;
  /**
   * Wire ids below this go in a row's mask; the rest are written by name (`;name=value`), which every
   * reader of payload v3 reads: the largest dictionary every live worker reads (queue/formats). All when unset.
   */
  dictionary?: number;
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
const NOT_A_SENSOR = -1;
const NAMES_KEPT = 10_000;

const SLOT_CELLS = NAMES.slotOf(NO_OF_CELLS);
const SLOT_SENSORS = NAMES.slotOf(NO_OF_TEMPERATURE_SENSORS);

/**
 * The type's flatten rule on one record's draft, for both paths: leaves out what is not stored
 * (returns how many fields), and fills `pack` with the record's pack health when the rule makes that
 * point (PACK_HEALTH); `pack` is cleared otherwise.
 */
export function flattenDraft(type: RecordTypeInfo, d: RowDraft, opts: FlattenOptions, pack: PackHealth): number {
  pack.clear();
  if (type.spec.flatten === 'plain') return 0;
  const sensors = d.valueOf(SLOT_SENSORS);
  const sentinels = opts.temperatureSentinels;
  // Pack health sums in the record's order, over every field (it applies the sensor rule itself).
  if (opts.packHealth) {
    pack.start(d.valueOf(SLOT_CELLS), sensors, sentinels);
    for (let k = 0; k < d.n; k++) pack.add(NAMES.pack[d.slot[k]!]!, d.value[k]!);
  }
  let dropped = 0;
  for (let k = 0; k < d.n; k++) {
    if (!isUnusedSensorNumber(NAMES.sensor[d.slot[k]!]!, d.value[k]!, sensors, sentinels)) continue;
    d.drop(k);
    dropped++;
  }
  return dropped;
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

/** Whether a reading of sensor number `n` (-1: not a temperature sensor) is an unused sensor's, in a record reporting `sensors` of them. */
export function isUnusedSensorNumber(n: number, value: number, sensors: number | undefined, sentinels: readonly number[]): boolean {
  return n !== NOT_A_SENSOR && ((sensors !== undefined && n > sensors) || sentinels.includes(value));
}

/**
 * One record as a line, fields in the record's order: the worker's path for jobs of releases before
 * payload v3, which carry records, not rows. The same rules as `flattenDraft`.
 */
export function flattenRecord(record: TelemetryRecord, opts: FlattenOptions): Flattened {
  const values = record.fields;
  const type = typeOf(record.type);
  const battery = type.spec.flatten === 'battery';
  const count = battery ? values[NO_OF_TEMPERATURE_SENSORS] : undefined;
  const sentinels = opts.temperatureSentinels;
  let dropped: string[] | undefined;
  parts.length = 0;
  NAMES.beginRecord();
  for (const key in values) {
    const value = values[key]!;
    if (battery && isUnusedSensorNumber(NAMES.sensor[NAMES.slotOf(key)]!, value, count, sentinels)) {
      (dropped ??= []).push(key);
      continue;
    }
    // Field keys were restricted at validation to letters, digits and _, so need no escaping.
    parts.push(`${key}=${formatFloat(value)}`);
  }
  if (parts.length === 0) return { line: undefined, dropped: dropped ?? [] };
  const line = `${type.spec.measurement},${VEHICLE_TAG}=${tagOf(record.vehicleno)} ${parts.join(',')} ${record.time}`;
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
    if (opts.packHealth && typeOf(record.type).spec.flatten === 'battery') {
      const pack = packHealth(record.fields, opts.temperatureSentinels);
      if (pack) {
        lines.push(`${PACK_MEASUREMENT},${VEHICLE_TAG}=${tagOf(record.vehicleno)} ${Object.entries(pack).map(([k, v]) => `${k}=${formatFloat(v)}`).join(',')} ${record.time}`);
        sources.push(i);
      }
    }
  }
  return { lines, sources, droppedFields, emptyRecords };
}
