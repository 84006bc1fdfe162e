import { alarmsOf, dictionaryOf, type RecordTypeSpec } from '../../telemetry/fields.js';
import { RECORD_TYPES } from '../../telemetry/vehicleData.js';
import { fieldPick, pickedValues, type FieldPick } from '../../telemetry/record.js';
import { PACK_VALUES, packSourcesOf, packValuesInto, type PackSources, type PackValueAt } from './packValues.js';

/**
 * What derivation reads of a record, from the schema (src/telemetry/vehicleData.ts): the named fields
 * below, each type's position, and every alarm. A worker picks their values out of a job's rows
 * (`DERIVE_PICK`) into one array for the job; each record type is its own stream (`streams.ts`), and
 * keeps of a record only the fields its type declares (`StreamPlan`).
 */

/**
 * The most values a stream's record keeps besides its alarms (StreamRecord's v0…v14): the CAN stream's
 * nine named fields and its six pack values (`PACK_VALUES`). Not part of any stored format: a stored
 * pending record names each value by its wire id, and a reader leaves out those it does not know.
 */
export const MAX_VALUES = 15;

/**
 * The record fields the detectors compute from, each under the name of its place in a stream's record
 * (`StreamPlan`, `socAt` …): declared here once; the schema must declare each (checked below), and each
 * detector's declaration names those it reads (`fields`, kinds.test.ts checks them against its module).
 * A record's position (each type's own lat/lng) and its alarms come from the schema.
 */
export const NAMED_FIELDS = {
  ignitionAt: 'ignstatus',
  speedAt: 'speed',
  socAt: 'soc',
  voltageAt: 'battery_voltage',
  currentAt: 'current',
  loadAt: 'load_status',
  /** The pack's identity (battery_swapped): its BMS's id, and its first battery's. */
  bmsIdAt: 'bms_id',
  batteryIdAt: 'bat_id_1',
  /** What the BMS says of the pack's health (charging's capacity estimate is compared with rated × soh). */
  sohAt: 'soh',
  /** The pack's rated capacity (Ah): what a current is a C-rate of (cRate.ts), what the BMS's soh is a share of (charging.ts). */
  capacityAt: 'battery_capacity',
  /** The BMS's count of the pack's charge cycles (pack_life: the cycles a stint saw). */
  cyclesAt: 'charge_cycle',
} as const;
/** A named field by its place (`socAt`), a pack value's (`hottestAt`, packValues.ts), or a type's position (`latAt`, `lngAt`). */
export type FieldAt = keyof typeof NAMED_FIELDS | PackValueAt | 'latAt' | 'lngAt';

export const IGNITION = NAMED_FIELDS.ignitionAt;
export const SPEED = NAMED_FIELDS.speedAt;
export const SOC = NAMED_FIELDS.socAt;
export const VOLTAGE = NAMED_FIELDS.voltageAt;
export const CURRENT = NAMED_FIELDS.currentAt;
export const LOAD = NAMED_FIELDS.loadAt;
export const BMS_ID = NAMED_FIELDS.bmsIdAt;
export const BATTERY_ID = NAMED_FIELDS.batteryIdAt;
export const SOH = NAMED_FIELDS.sohAt;
export const CAPACITY = NAMED_FIELDS.capacityAt;
const NAMED: ReadonlyArray<readonly [keyof typeof NAMED_FIELDS, string]> = Object.entries(NAMED_FIELDS) as Array<[keyof typeof NAMED_FIELDS, string]>;

/** What derivation reads of a schema: its fields (a job's picked values come in these slots) and each type's stream. */
export interface DeriveSchema {
  fields: readonly string[];
  /** By type name, and by stream id. */
  streams: ReadonlyMap<string, StreamPlan>;
  byStreamId: ReadonlyMap<number, StreamPlan>;
  /** The stream of the track (a position and the ignition), and the stream of the soc. */
  track: StreamPlan;
  soc: StreamPlan;
}

/** The derivation's view of some record types (the service's: RECORD_TYPES; a test's fixture schema may add to them). */
export function deriveSchemaOf(types: readonly RecordTypeSpec[]): DeriveSchema {
  const alarms = alarmsOf(types);
  // The pack's cell voltages and temperatures (and their counts) are picked, but a record keeps only the values computed of them.
  const packFields = types.flatMap((t) => packSourcesOf(t.fields.map((f) => f.name)).names);
  const fields = [
    ...new Set([...types.flatMap((t) => (t.position ? [t.position.lat, t.position.lng] : [])), ...NAMED.map(([, name]) => name), ...alarms.map((a) => a.name), ...packFields]),
  ];
  const picked = new Set(packFields);
  const dictionary = dictionaryOf(types);
  const wireId = new Map(dictionary.map((n, i) => [n, i]));
  const slot = new Map(fields.map((name, i) => [name, i]));
  const plans = types.map((t): StreamPlan => {
    const declared = new Set(t.fields.map((f) => f.name));
    const alarmNames = new Set(alarms.map((a) => a.name));
    const sources = packSourcesOf(t.fields.map((f) => f.name));
    const pack = sources.names.length > 0 ? sources.slotsIn(fields) : undefined;
    const own = [...fields.filter((name) => declared.has(name) && !alarmNames.has(name) && !picked.has(name)), ...(pack ? PACK_VALUES.map((v) => v.name) : [])];
    const at = (name: string | undefined): number => (name === undefined ? -1 : own.indexOf(name));
    const typeAlarms = alarms.filter((a) => declared.has(a.name)).map((a) => ({ name: a.name, slot: slot.get(a.name)!, wireId: wireId.get(a.name)!, bit: a.bit, safety: a.safety }));
    return {
      name: t.name,
      streamId: t.streamId,
      fields: own,
      wireIds: own.map((f) => wireId.get(f) ?? PACK_VALUES.find((v) => v.name === f)!.wireId),
      // A pack value is computed (`pack`), not read from a slot: -1.
      slots: own.map((f) => slot.get(f) ?? -1),
      read: own.length - (pack ? PACK_VALUES.length : 0),
      pack,
      latName: t.position?.lat,
      lngName: t.position?.lng,
      latAt: at(t.position?.lat),
      lngAt: at(t.position?.lng),
      ...(Object.fromEntries(NAMED.map(([place, name]) => [place, at(name)])) as Record<keyof typeof NAMED_FIELDS, number>),
      ...(Object.fromEntries(PACK_VALUES.map((v) => [v.place, at(v.name)])) as Record<PackValueAt, number>),
      alarms: typeAlarms,
      alarmSlots: Int32Array.from(typeAlarms, (a) => a.slot),
      alarmBits: Int32Array.from(typeAlarms, (a) => 1 << a.bit),
      safetyAlarms: typeAlarms.reduce((m, a) => (a.safety ? m | (1 << a.bit) : m), 0),
      // Charging (current, load) and the drain (soc) of a stream without a position read where the track stood and moved.
      waits: !t.position && (declared.has(CURRENT) || declared.has(LOAD) || declared.has(SOC)),
    };
  });
  for (const [, name] of NAMED) {
    if (!plans.some((p) => p.fields.includes(name))) throw new Error(`vehicle events: no record type declares ${name}`);
  }
  for (const p of plans) if (p.read > 9) throw new Error(`vehicle events: type ${p.name} has ${p.read} named values; recordOf reads 9`);
  for (const p of plans) if (p.fields.length > MAX_VALUES) throw new Error(`vehicle events: type ${p.name} has ${p.fields.length} values derivation reads besides alarms; a record keeps ${MAX_VALUES} (StreamRecord)`);
  // A trip is measured on its type's own fixes, so ignition must come with a position.
  for (const p of plans) if (p.ignitionAt >= 0 && p.latAt < 0) throw new Error(`vehicle events: type ${p.name} has ignition but no position`);
  if (new Set(plans.map((p) => p.streamId)).size !== plans.length) throw new Error('vehicle events: two types share a stream id');
  // One track (the stream with a position and the ignition) and one stream of the soc: what each reads of the other.
  const tracks = plans.filter((p) => p.latAt >= 0 && p.ignitionAt >= 0);
  const socs = plans.filter((p) => p.socAt >= 0 && p.latAt < 0);
  if (tracks.length !== 1 || socs.length !== 1) throw new Error('vehicle events: expected one type with a position and ignition, and one with the soc and no position');
  // What waits for the track is the soc stream's (the corrections' state keeps how far it went: one stream).
  if (plans.some((p) => p.waits && p !== socs[0])) throw new Error('vehicle events: only the soc stream may wait for the track');
  return { fields, streams: new Map(plans.map((p) => [p.name, p])), byStreamId: new Map(plans.map((p) => [p.streamId, p])), track: tracks[0]!, soc: socs[0]! };
}

/** The service's schema as derivation reads it. */
export const DERIVE_SCHEMA: DeriveSchema = deriveSchemaOf(RECORD_TYPES);
/** No temperature reading means no sensor (a test's records; the service's are CAN_TEMP_SENTINELS, `DeriveOptions`). */
const NO_SENTINELS: readonly number[] = [];

/** Every field name derivation reads: a job's picked values come in these slots. */
export const DERIVE_FIELDS: readonly string[] = DERIVE_SCHEMA.fields;
/** What a worker reads of each record for derivation (its written records' values). */
export const DERIVE_PICK: FieldPick = fieldPick(DERIVE_FIELDS);

/**
 * One record as a worker hands it: its type, time, and the values of DERIVE_FIELDS it carried,
 * `values[at + slot]` for DERIVE_FIELDS[slot] (NaN where absent). A worker's written records read with
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
  safety: boolean;
}

/**
 * A record type as a stream: the fields of DERIVE_FIELDS it declares but its alarms, in that order (a
 * record of the stream keeps their values, `values[i]` for `fields[i]`), where each field a detector
 * reads sits there (-1: the type does not declare it), and its alarms (a record keeps those as bits).
 */
export interface StreamPlan extends Readonly<Record<keyof typeof NAMED_FIELDS | PackValueAt, number>> {
  name: string;
  /** Frozen (the schema's `streamId`): a stored state names its streams by it. */
  streamId: number;
  fields: readonly string[];
  /** Each field's wire id (how a stored pending record names its values). */
  wireIds: readonly number[];
  /** Each field's slot in an input's values (-1: a pack value, computed). */
  slots: readonly number[];
  /** How many of its values are read from an input's slots (the first; the rest are its pack values). */
  read: number;
  /** Where its pack's cell voltages and temperatures sit in an input's values, when it declares them: its pack values are computed of them (packValues.ts). */
  pack: PackSources | undefined;
  latName: string | undefined;
  lngName: string | undefined;
  /** Where the position's values sit in a record's values, as each of NAMED_FIELDS' (-1: the type has none): indices, not values. */
  latAt: number;
  lngAt: number;
  alarms: readonly AlarmSlot[];
  /** The alarms' slots and their bits (1 << alarmBit), apart: read for every record (`recordOf`). */
  alarmSlots: Int32Array;
  alarmBits: Int32Array;
  /** The bits of its safety alarms, emitted at once whatever ALARM_MIN_DURATION. */
  safetyAlarms: number;
  /**
   * Whether some of its detectors read the track's stream at its records' times (charging, the drain):
   * those take its records once the track has passed them (derive.ts, "waits").
   */
  waits: boolean;
}

/** Every type's stream, by type name, and by stream id. */
export const STREAMS: ReadonlyMap<string, StreamPlan> = DERIVE_SCHEMA.streams;
export const STREAM_BY_ID: ReadonlyMap<number, StreamPlan> = DERIVE_SCHEMA.byStreamId;
/** The track's stream id (what the waiting detectors wait for) and the soc's (what finished trips wait for). */
export const TRACK_STREAM: number = DERIVE_SCHEMA.track.streamId;
export const SOC_STREAM: number = DERIVE_SCHEMA.soc.streamId;

/**
 * A record of a stream: its time, its values (`v0`…: `StreamPlan.fields`, NaN where absent; read and set
 * with `valueAt` / `setValue`), and its alarms as bits (by `alarmBit`): those it carried, and of them those
 * at 1. A stream keeps its pending records as columns of doubles, not as these objects (`pending.ts`): a
 * record is read into one of these, which the reader keeps and reuses.
 */
export interface StreamRecord {
  /** Its stream's id. */
  stream: number;
  time: number;
  v0: number;
  v1: number;
  v2: number;
  v3: number;
  v4: number;
  v5: number;
  v6: number;
  v7: number;
  v8: number;
  v9: number;
  v10: number;
  v11: number;
  v12: number;
  v13: number;
  v14: number;
  alarmMask: number;
  alarmValues: number;
  /** A record of the same instant merged into it since it was stored (the store replaces it). */
  merged: boolean;
}

/** Value `i` of a record (NaN where absent). */
export function valueAt(r: StreamRecord, i: number): number {
  if (i < 6) return i === 0 ? r.v0 : i === 1 ? r.v1 : i === 2 ? r.v2 : i === 3 ? r.v3 : i === 4 ? r.v4 : i === 5 ? r.v5 : NaN;
  if (i < 11) return i === 6 ? r.v6 : i === 7 ? r.v7 : i === 8 ? r.v8 : i === 9 ? r.v9 : i === 10 ? r.v10 : NaN;
  return i === 11 ? r.v11 : i === 12 ? r.v12 : i === 13 ? r.v13 : i === 14 ? r.v14 : NaN;
}

/** A record's values in order into `out` (MAX_VALUES long); returns it. A loop over them reads this, not `valueAt` a value. */
export function valuesInto(r: StreamRecord, out: Float64Array): Float64Array {
  out[0] = r.v0;
  out[1] = r.v1;
  out[2] = r.v2;
  out[3] = r.v3;
  out[4] = r.v4;
  out[5] = r.v5;
  out[6] = r.v6;
  out[7] = r.v7;
  out[8] = r.v8;
  out[9] = r.v9;
  out[10] = r.v10;
  out[11] = r.v11;
  out[12] = r.v12;
  out[13] = r.v13;
  out[14] = r.v14;
  return out;
}

export function setValue(r: StreamRecord, i: number, x: number): void {
  if (i === 0) r.v0 = x;
  else if (i === 1) r.v1 = x;
  else if (i === 2) r.v2 = x;
  else if (i === 3) r.v3 = x;
  else if (i === 4) r.v4 = x;
  else if (i === 5) r.v5 = x;
  else if (i === 6) r.v6 = x;
  else if (i === 7) r.v7 = x;
  else if (i === 8) r.v8 = x;
  else if (i === 9) r.v9 = x;
  else if (i === 10) r.v10 = x;
  else if (i === 11) r.v11 = x;
  else if (i === 12) r.v12 = x;
  else if (i === 13) r.v13 = x;
  else if (i === 14) r.v14 = x;
  else throw new RangeError(`a stream's record keeps ${MAX_VALUES} values`);
}

/** A record of stream `streamId` at `time` with no value yet. */
export function emptyRecord(streamId: number, time: number): StreamRecord {
  // Fractions first, so each value is a double field from the start (a record reused keeps its boxes).
  const r = { stream: streamId, time: 0.5, v0: 0.5, v1: 0.5, v2: 0.5, v3: 0.5, v4: 0.5, v5: 0.5, v6: 0.5, v7: 0.5, v8: 0.5, v9: 0.5, v10: 0.5, v11: 0.5, v12: 0.5, v13: 0.5, v14: 0.5, alarmMask: 0, alarmValues: 0, merged: false };
  r.time = time;
  r.v0 = r.v1 = r.v2 = r.v3 = r.v4 = r.v5 = r.v6 = r.v7 = r.v8 = r.v9 = r.v10 = r.v11 = r.v12 = r.v13 = r.v14 = NaN;
  return r;
}

/** A record's pack values as computed (reused: derivation is never re-entered). */
const PACK_OUT = new Float64Array(PACK_VALUES.length);

/**
 * The record of `input` in its stream, written into `into` (a fresh one by default), or undefined when
 * it carries nothing derivation reads. `sentinels`: the temperature readings that mean no sensor
 * (CAN_TEMP_SENTINELS), for its pack values.
 */
export function recordOf(input: EventInput, plan: StreamPlan, into?: StreamRecord, sentinels: readonly number[] = NO_SENTINELS): StreamRecord | undefined {
  const src = input.values;
  const base = input.at;
  const slots = plan.slots;
  const n = plan.read;
  const v0 = n > 0 ? src[base + slots[0]!]! : NaN;
  const v1 = n > 1 ? src[base + slots[1]!]! : NaN;
  const v2 = n > 2 ? src[base + slots[2]!]! : NaN;
  const v3 = n > 3 ? src[base + slots[3]!]! : NaN;
  const v4 = n > 4 ? src[base + slots[4]!]! : NaN;
  const v5 = n > 5 ? src[base + slots[5]!]! : NaN;
  const v6 = n > 6 ? src[base + slots[6]!]! : NaN;
  const v7 = n > 7 ? src[base + slots[7]!]! : NaN;
  const v8 = n > 8 ? src[base + slots[8]!]! : NaN;
  const pack = plan.pack !== undefined && packValuesInto(plan.pack, src, base, sentinels, PACK_OUT);
  const any = v0 === v0 || v1 === v1 || v2 === v2 || v3 === v3 || v4 === v4 || v5 === v5 || v6 === v6 || v7 === v7 || v8 === v8 || pack;
  let alarmMask = 0;
  let alarmValues = 0;
  const alarmSlots = plan.alarmSlots;
  const alarmBits = plan.alarmBits;
  for (let j = 0; j < alarmSlots.length; j++) {
    const x = src[base + alarmSlots[j]!];
    if (x === 1) {
      alarmMask |= alarmBits[j]!;
      alarmValues |= alarmBits[j]!;
    } else if (x === 0) alarmMask |= alarmBits[j]!;
  }
  if (!any && alarmMask === 0) return undefined;
  const r = into ?? emptyRecord(plan.streamId, input.time);
  r.stream = plan.streamId;
  r.time = input.time;
  r.v0 = v0;
  r.v1 = v1;
  r.v2 = v2;
  r.v3 = v3;
  r.v4 = v4;
  r.v5 = v5;
  r.v6 = v6;
  r.v7 = v7;
  r.v8 = v8;
  r.v9 = r.v10 = r.v11 = r.v12 = r.v13 = r.v14 = NaN;
  if (pack) for (let j = 0; j < PACK_OUT.length; j++) setValue(r, n + j, PACK_OUT[j]!);
  r.alarmMask = alarmMask;
  r.alarmValues = alarmValues;
  r.merged = false;
  // A position is both coordinates or none.
  if (plan.latAt >= 0) {
    const lat = valueAt(r, plan.latAt);
    const lng = valueAt(r, plan.lngAt);
    if (lat !== lat || lng !== lng) {
      setValue(r, plan.latAt, NaN);
      setValue(r, plan.lngAt, NaN);
    }
  }
  return r;
}

/** The value of field index `i` of a record, if it carries one. */
export function valueOf(r: StreamRecord, i: number): number | undefined {
  if (i < 0) return undefined;
  const x = valueAt(r, i);
  return x === x ? x : undefined;
}
