/** Push records exactly as the spec shapes them (§2.4–2.6). */
import type { GpsData } from './fleet.js';

export type { GpsData };

/** `time` is always present; every other parameter only when the vehicle "received" it. */
export type CanData = { time: number } & Record<string, number>;

export interface GpsRecord {
  vehicleno: string;
  type: 'gps';
  data: GpsData;
}

export interface CanRecord {
  vehicleno: string;
  type: 'can';
  data: CanData;
}

export type PushRecord = GpsRecord | CanRecord;
export type RecordType = PushRecord['type'];

/** Body of a bulk delivery. */
export interface BulkPayload {
  bulkData: unknown[];
}
