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

/** What the fleet's last-seen state learns from a stored record: whose, when, and where for a gps one. */
export interface Sighting {
  vehicleno: string;
  type: RecordType;
  time: number;
  lat?: number;
  lng?: number;
}

export function sightingOf(r: TelemetryRecord): Sighting {
  const s: Sighting = { vehicleno: r.vehicleno, type: r.type, time: r.time };
  if (r.type === 'gps' && r.fields.lat !== undefined && r.fields.lng !== undefined) {
    s.lat = r.fields.lat;
    s.lng = r.fields.lng;
  }
  return s;
}

export const RECORD_TYPES = ['gps', 'can'] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

/** Longest `vehicleno` accepted: it becomes an InfluxDB tag value. */
export const VEHICLENO_MAX = 128;

/** A record in the shape it was pushed, so a replay validates it again like any push. */
export function asPushRecord(r: TelemetryRecord): { vehicleno: string; type: RecordType; data: Record<string, number> } {
  return { vehicleno: r.vehicleno, type: r.type, data: { ...r.fields, time: r.time } };
}
