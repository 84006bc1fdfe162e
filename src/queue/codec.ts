import type { TelemetryRecord } from '../validate/record.js';

/**
 * The payload of one job: a chunk of validated records. Versioned so workers of a newer
 * release can still read jobs queued by an older one during a rolling upgrade.
 */
export interface JobPayloadV1 {
  v: 1;
  records: TelemetryRecord[];
}
export type JobPayload = JobPayloadV1;

export function encodeJob(records: TelemetryRecord[]): JobPayload {
  return { v: 1, records };
}

export function decodeJob(data: unknown): TelemetryRecord[] {
  const p = data as Partial<JobPayload> | null;
  if (p && p.v === 1 && Array.isArray(p.records)) return p.records;
  throw new Error(`unknown job payload version ${JSON.stringify(p && (p as { v?: unknown }).v)}`);
}
