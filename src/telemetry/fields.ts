import { RECORD_TYPES, TIME, type FieldSpec, type RecordTypeSpec } from './vehicleData.js';

/**
 * The record's schema (vehicleData.ts) as the pipeline looks it up: types by name and by row letter,
 * each type's fields by name, and the row dictionary (names by wire id). Computed once, and checked:
 * a schema that gives one name two ids, or leaves an id unused, does not load.
 */

export type { FieldSpec, RangeSpec, RecordTypeSpec } from './vehicleData.js';
export { TIME, VEHICLE_TAG } from './vehicleData.js';

/** A record type as the pipeline uses it: its spec, its index (for per-type counters) and lookups. */
export interface RecordTypeInfo {
  readonly spec: RecordTypeSpec;
  readonly name: string;
  readonly index: number;
  /** The row letter as a byte. */
  readonly row: number;
  /** Its fields by name (time not among them). */
  readonly fields: ReadonlyMap<string, FieldSpec>;
  /** The required fields, in the schema's order: validated first, and written first. */
  readonly required: readonly FieldSpec[];
  /** Names a record of this type reads apart from its dynamic parameters (the required ones and time). */
  readonly reserved: ReadonlySet<string>;
}

function info(spec: RecordTypeSpec, index: number): RecordTypeInfo {
  if (!/^[a-z]$/.test(spec.row)) throw new Error(`record type ${spec.name}: its row letter must be one of a-z`);
  const fields = new Map(spec.fields.map((f) => [f.name, f]));
  const required = spec.fields.filter((f) => f.required);
  return {
    spec,
    name: spec.name,
    index,
    row: spec.row.charCodeAt(0),
    fields,
    required,
    reserved: new Set([...required.map((f) => f.name), TIME.name]),
  };
}

export const TYPES: readonly RecordTypeInfo[] = RECORD_TYPES.map(info);
export const TYPE_NAMES: readonly string[] = TYPES.map((t) => t.name);
const BY_NAME = new Map(TYPES.map((t) => [t.name, t]));
/** By row letter (a byte): an array, since a worker looks one up for every row it reads. */
const BY_ROW: Array<RecordTypeInfo | undefined> = new Array<RecordTypeInfo | undefined>(256).fill(undefined);
for (const t of TYPES) BY_ROW[t.row] = t;
if (BY_NAME.size !== TYPES.length || new Set(TYPES.map((t) => t.row)).size !== TYPES.length) throw new Error('record types: a name or a row letter is used twice');

/** The type named `name`; undefined for a name no type has. */
export function typeNamed(name: string): RecordTypeInfo | undefined {
  return BY_NAME.get(name);
}

/** The type of a record already validated (its name is one of TYPE_NAMES). */
export function typeOf(name: string): RecordTypeInfo {
  const t = BY_NAME.get(name);
  if (t === undefined) throw new Error(`unknown record type ${JSON.stringify(name)}`);
  return t;
}

/** The type whose rows start with byte `row`, or undefined. */
export function typeOfRow(row: number): RecordTypeInfo | undefined {
  return BY_ROW[row];
}

/** The names of a type's fields, in the schema's order. */
export function fieldNames(type: string): string[] {
  return typeOf(type).spec.fields.map((f) => f.name);
}

/**
 * The row dictionary: field names by wire id, over every type (job payloads v2 and v3 refer to names
 * by it; see src/ingest/queue/codec.ts). Grows only at its end.
 */
export const FIELD_DICTIONARY: readonly string[] = dictionaryOf(RECORD_TYPES);

/** The row dictionary of some record types; throws where their wire ids contradict each other or leave a gap. */
export function dictionaryOf(types: readonly RecordTypeSpec[]): readonly string[] {
  const names: string[] = [];
  for (const f of [TIME, ...types.flatMap((t) => t.fields)]) {
    const had = names[f.id];
    if (had !== undefined && had !== f.name) throw new Error(`wire id ${f.id} is both ${had} and ${f.name}`);
    names[f.id] = f.name;
  }
  const ids = new Map<string, number>();
  names.forEach((n, i) => {
    if (ids.has(n)) throw new Error(`field ${n} has two wire ids, ${ids.get(n)} and ${i}`);
    ids.set(n, i);
  });
  for (let i = 0; i < names.length; i++) if (names[i] === undefined) throw new Error(`wire id ${i} is unused: ids run from 0 without a gap`);
  return Object.freeze(names);
}

/** A name's wire id, or undefined for a name outside the dictionary. */
export const WIRE_ID: ReadonlyMap<string, number> = new Map(FIELD_DICTIONARY.map((n, i) => [n, i]));

/** An alarm flag and its frozen bit (vehicleData.ts, `alarmBit`). */
export interface AlarmInfo {
  readonly name: string;
  readonly bit: number;
  /** A safety alarm (vehicleData.ts, `safety`): told at once, whatever ALARM_MIN_DURATION. */
  readonly safety: boolean;
}

/** The alarms of some record types; throws where bits repeat, or pass the 30 a stored mask holds. */
export function alarmsOf(types: readonly RecordTypeSpec[]): readonly AlarmInfo[] {
  const alarms = types.flatMap((t) => t.fields.flatMap((f) => (f.alarmBit === undefined ? [] : [{ name: f.name, bit: f.alarmBit, safety: f.safety === true }])));
  const bits = new Set(alarms.map((a) => a.bit));
  if (bits.size !== alarms.length) throw new Error('alarms: two alarms share a bit');
  for (const a of alarms) if (!Number.isInteger(a.bit) || a.bit < 0 || a.bit >= 30) throw new Error(`alarm ${a.name}: its bit must be 0–29`);
  return alarms;
}

/** Every alarm flag, in the schema's order, with its bit. */
export const ALARMS: readonly AlarmInfo[] = alarmsOf(RECORD_TYPES);
/** The alarm flags of every type, in the schema's order. */
export const ALARM_FIELDS: readonly string[] = ALARMS.map((a) => a.name);
if (new Set(RECORD_TYPES.map((t) => t.streamId)).size !== RECORD_TYPES.length) throw new Error('record types: a stream id is used twice');
