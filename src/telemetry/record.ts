import { TIME, typeOf, WIRE_ID } from './fields.js';

/**
 * The record: what a valid push record becomes, and the shape every ingest stage works on
 * (validate makes it, queue stores it, flatten serializes it, the dead letter shows it).
 */

/**
 * `time` is always set (CAN records without one are stamped by the receiver), `fields` holds only
 * the parameters the record carried, every value a finite number. `fields` may have no prototype
 * (validateRecord and decodeJob make it so, for speed): use `Object.hasOwn`, not its methods.
 */
export interface TelemetryRecord {
  vehicleno: string;
  type: RecordType;
  time: number;
  fields: Record<string, number>;
}

/**
 * A record a worker wrote (InfluxDB confirmed its point), as the fleet's last-seen state and the vehicle
 * events read it back from the job's rows: whose, when, where for a gps one, and the values a reader picked.
 */
export interface WrittenRecord {
  vehicleno: string;
  type: RecordType;
  time: number;
  lat?: number;
  lng?: number;
  /**
   * With a FieldPick (what the vehicle events read, src/ingest/events): the picked fields' values at
   * `values[at + slot]`, NaN where the record did not carry one. Shared by a job's written records.
   */
  values?: Float64Array;
  at?: number;
}

/** Fields a reader of written records wants: `slots[wire id]` is the field's slot + 1 (0: not picked). */
export interface FieldPick {
  readonly names: readonly string[];
  readonly slots: Uint8Array;
}

/** The pick of `names`, slot i for names[i] (every one a schema field). */
export function fieldPick(names: readonly string[]): FieldPick {
  if (names.length > 255) throw new Error('a field pick holds at most 255 names');
  const slots = new Uint8Array(WIRE_ID.size);
  names.forEach((name, i) => {
    const id = WIRE_ID.get(name);
    if (id === undefined) throw new Error(`a field pick names ${name}, which the schema does not declare`);
    slots[id] = i + 1;
  });
  return { names, slots };
}

/** Room for `records` written records' picked values, every one absent. */
export function pickedValues(pick: FieldPick, records: number): Float64Array {
  return new Float64Array(pick.names.length * records).fill(NaN);
}

export function writtenRecordOf(r: TelemetryRecord): WrittenRecord {
  const s: WrittenRecord = { vehicleno: r.vehicleno, type: r.type, time: r.time };
  const at = typeOf(r.type).spec.position;
  if (at !== undefined && r.fields[at.lat] !== undefined && r.fields[at.lng] !== undefined) {
    s.lat = r.fields[at.lat];
    s.lng = r.fields[at.lng];
  }
  return s;
}

/** A record type's name: one of TYPE_NAMES (src/telemetry/fields.ts); types are data, not a union. */
export type RecordType = string;

/** Longest `vehicleno` accepted: it becomes an InfluxDB tag value. */
export const VEHICLENO_MAX = 128;
/** Parameters one record may carry besides its required ones and time: the spec names 69; more is a sender's bug or an attack. */
export const MAX_PARAMETERS = 256;
/** Nesting a record may have before its reason says only that (a valid one nests 2 levels). */
export const MAX_NESTING = 32;

/** A record in the shape it was pushed, so a replay validates it again like any push. */
export function asPushRecord(r: TelemetryRecord): { vehicleno: string; type: RecordType; data: Record<string, number> } {
  return { vehicleno: r.vehicleno, type: r.type, data: { ...r.fields, [TIME.name]: r.time } };
}
