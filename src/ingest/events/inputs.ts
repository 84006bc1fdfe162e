import { alarmsOf, dictionaryOf, type RecordTypeSpec } from '../../telemetry/fields.js';
import { RECORD_TYPES } from '../../telemetry/vehicleData.js';
import { fieldPick, pickedValues, type FieldPick } from '../../telemetry/record.js';

/**
 * What derivation reads of a record, from the schema (src/telemetry/vehicleData.ts): the named fields
 * below, each type's position, and every alarm. A worker picks their values out of a job's rows
 * (`DERIVE_PICK`) into one array for the job; each record type is its own stream (`streams.ts`), and
 * keeps of a record only the fields its type declares (`StreamPlan`).
 */

// The fields the detectors compute from. Named here once; the schema must declare each (checked below).
export const IGNITION = 'ignstatus';
export const SPEED = 'speed';
export const SOC = 'soc';
export const VOLTAGE = 'battery_voltage';
export const CURRENT = 'current';
export const LOAD = 'load_status';

/** What derivation reads of a schema: its fields (a job's picked values come in these slots) and each type's stream. */
export interface DeriveSchema {
  fields: readonly string[];
  /** By type name, and by stream id. */
  streams: ReadonlyMap<string, StreamPlan>;
  byStreamId: ReadonlyMap<number, StreamPlan>;
}

/** The derivation's view of some record types (the service's: RECORD_TYPES; a test's fixture schema may add to them). */
export function deriveSchemaOf(types: readonly RecordTypeSpec[]): DeriveSchema {
  const alarms = alarmsOf(types);
  const fields = [
    ...new Set([...types.flatMap((t) => (t.position ? [t.position.lat, t.position.lng] : [])), IGNITION, SPEED, SOC, VOLTAGE, CURRENT, LOAD, ...alarms.map((a) => a.name)]),
  ];
  const dictionary = dictionaryOf(types);
  const wireId = new Map(dictionary.map((n, i) => [n, i]));
  const slot = new Map(fields.map((name, i) => [name, i]));
  const plans = types.map((t): StreamPlan => {
    const declared = new Set(t.fields.map((f) => f.name));
    const alarmNames = new Set(alarms.map((a) => a.name));
    const own = fields.filter((name) => declared.has(name) && !alarmNames.has(name));
    const at = (name: string | undefined): number => (name === undefined ? -1 : own.indexOf(name));
    const typeAlarms = alarms.filter((a) => declared.has(a.name)).map((a) => ({ name: a.name, slot: slot.get(a.name)!, wireId: wireId.get(a.name)!, bit: a.bit }));
    return {
      name: t.name,
      streamId: t.streamId,
      fields: own,
      wireIds: own.map((f) => wireId.get(f)!),
      slots: own.map((f) => slot.get(f)!),
      latName: t.position?.lat,
      lngName: t.position?.lng,
      lat: at(t.position?.lat),
      lng: at(t.position?.lng),
      ignition: at(IGNITION),
      speed: at(SPEED),
      soc: at(SOC),
      voltage: at(VOLTAGE),
      current: at(CURRENT),
      load: at(LOAD),
      alarms: typeAlarms,
      blank: own.map(() => NaN),
    };
  });
  for (const name of [IGNITION, SPEED, SOC, VOLTAGE, CURRENT, LOAD]) {
    if (!plans.some((p) => p.fields.includes(name))) throw new Error(`vehicle events: no record type declares ${name}`);
  }
  // A trip is measured on its type's own fixes, so ignition must come with a position.
  for (const p of plans) if (p.ignition >= 0 && p.lat < 0) throw new Error(`vehicle events: type ${p.name} has ignition but no position`);
  if (new Set(plans.map((p) => p.streamId)).size !== plans.length) throw new Error('vehicle events: two types share a stream id');
  return { fields, streams: new Map(plans.map((p) => [p.name, p])), byStreamId: new Map(plans.map((p) => [p.streamId, p])) };
}

/** The service's schema as derivation reads it. */
export const DERIVE_SCHEMA: DeriveSchema = deriveSchemaOf(RECORD_TYPES);
/** Every field name derivation reads: a job's picked values come in these slots. */
export const DERIVE_FIELDS: readonly string[] = DERIVE_SCHEMA.fields;
/** What a worker reads of each record for derivation (its sightings' values). */
export const DERIVE_PICK: FieldPick = fieldPick(DERIVE_FIELDS);

/**
 * One record as a worker hands it: its type, time, and the values of DERIVE_FIELDS it carried,
 * `values[at + slot]` for DERIVE_FIELDS[slot] (NaN where absent). A worker's sightings read with
 * DERIVE_PICK are inputs as they are.
 */
export interface EventInput {
  type: string;
  time: number;
  values: ArrayLike<number>;
  at: number;
}

/** An input from named fields (those derivation does not read are left out). */
export function inputOf(type: string, time: number, fields: Readonly<Record<string, number>>): EventInput {
  const values = pickedValues(DERIVE_PICK, 1);
  DERIVE_FIELDS.forEach((name, i) => {
    if (Object.hasOwn(fields, name)) values[i] = fields[name]!;
  });
  return { type, time, values, at: 0 };
}

/** An alarm a type carries: its slot in an input's values, its wire id, and its frozen bit. */
export interface AlarmSlot {
  name: string;
  slot: number;
  wireId: number;
  bit: number;
}

/**
 * A record type as a stream: the fields of DERIVE_FIELDS it declares but its alarms, in that order (a
 * record of the stream keeps their values, `values[i]` for `fields[i]`), where each field a detector
 * reads sits there (-1: the type does not declare it), and its alarms (a record keeps those as bits).
 */
export interface StreamPlan {
  name: string;
  /** Frozen (the schema's `streamId`): a stored state names its streams by it. */
  streamId: number;
  fields: readonly string[];
  /** Each field's wire id (how a stored pending record names its values). */
  wireIds: readonly number[];
  /** Each field's slot in an input's values. */
  slots: readonly number[];
  latName: string | undefined;
  lngName: string | undefined;
  lat: number;
  lng: number;
  ignition: number;
  speed: number;
  soc: number;
  voltage: number;
  current: number;
  load: number;
  alarms: readonly AlarmSlot[];
  /** A record's values with none present (NaN each): copied for each record, an array of doubles from the start. */
  blank: readonly number[];
}

/** Every type's stream, by type name, and by stream id. */
export const STREAMS: ReadonlyMap<string, StreamPlan> = DERIVE_SCHEMA.streams;
export const STREAM_BY_ID: ReadonlyMap<number, StreamPlan> = DERIVE_SCHEMA.byStreamId;

/**
 * A record of a stream: its time, its values (`StreamPlan.fields`, NaN where absent), and its alarms as
 * bits (by `alarmBit`): those it carried, and of them those at 1.
 */
export interface StreamRecord {
  /** Its stream's id. */
  stream: number;
  time: number;
  values: number[];
  alarmMask: number;
  alarmValues: number;
  /** A record of the same instant merged into it since it was stored (the store replaces it). */
  merged: boolean;
}

/** The record of `input` in its stream, or undefined when it carries nothing derivation reads. */
export function recordOf(input: EventInput, plan: StreamPlan): StreamRecord | undefined {
  const src = input.values;
  const base = input.at;
  const slots = plan.slots;
  const values = plan.blank.slice();
  let any = false;
  for (let i = 0; i < slots.length; i++) {
    const x = src[base + slots[i]!]!;
    if (x === x) {
      values[i] = x;
      any = true;
    }
  }
  // A position is both coordinates or none.
  if (plan.lat >= 0 && (values[plan.lat] !== values[plan.lat] || values[plan.lng] !== values[plan.lng])) values[plan.lat] = values[plan.lng] = NaN;
  let alarmMask = 0;
  let alarmValues = 0;
  for (const a of plan.alarms) {
    const x = src[base + a.slot];
    if (x === 1) {
      alarmMask |= 1 << a.bit;
      alarmValues |= 1 << a.bit;
    } else if (x === 0) alarmMask |= 1 << a.bit;
  }
  return any || alarmMask !== 0 ? { stream: plan.streamId, time: input.time, values, alarmMask, alarmValues, merged: false } : undefined;
}

/** The value of field index `i` of a record, if it carries one. */
export function valueOf(r: StreamRecord, i: number): number | undefined {
  if (i < 0) return undefined;
  const x = r.values[i]!;
  return x === x ? x : undefined;
}
