import { asPushRecord, type TelemetryRecord } from '../../telemetry/record.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import type { Plausibility } from '../plausibility/judge.js';
import type { NewQuarantineEntry } from '../queue/quarantine.js';
import { RecordSorter } from '../receive/sort.js';

/** What a worker checks a job no receiver sealed with: the receiver's own rules. */
export interface UnsealedChecks {
  plausibility?: Plausibility | undefined;
  flatten: FlattenOptions;
  quarantineRawLimit: number;
}

export interface CheckedJob {
  /** The rows of the records that passed, as a receiver would have written them. */
  rows: Buffer;
  /** Records refused whole, or stored without refused fields: kept in the quarantine (stage `write`, route `queue`). */
  held: NewQuarantineEntry[];
  /** Records refused whole. */
  rejected: number;
  /** Fields left out as unused sensors (FlattenOptions), as a receiver counts them. */
  dropped: number;
}

/**
 * A job no receiver sealed (queue/seal.ts): an older release's, one put on the queue by hand or edited. (`telematics-deadletter replay` seals what it queues: it checked the records with the rules it was given.)
 * Its records go through the receiver's own sorter (receive/sort.ts) as pushed records, judged at the
 * job's enqueue time: what a push of them would have been refused is refused here, said why and kept for
 * replay, and only what passes is written.
 */
export function checkUnsealed(records: readonly unknown[], job: { id?: string | undefined; timestamp: number }, checks: UnsealedChecks): CheckedJob {
  const receivedAt = job.timestamp;
  const origin = { deliveryId: `job:${job.id ?? ''}`, sender: '', receivedAt, route: 'queue', stage: 'write' } as const;
  const sorter = new RecordSorter({ receivedAt, originOf: () => origin }, { ...checks, partitions: 1, partialRecords: true });
  const items = records.map(pushed);
  for (let i = 0; i < items.length; i++) sorter.item(i, items[i]);
  sorter.finish(() => JSON.stringify({ bulkData: items }));
  for (const e of sorter.held) e.reason = `in a job no receiver sealed: ${e.reason}`;
  const rows = sorter.rows[0]!;
  return { rows: rows.buf.subarray(0, rows.len), held: sorter.held, rejected: sorter.rejected.length, dropped: rows.dropped.reduce((a, b) => a + b, 0) };
}

/** A decoded record as a push carries it; whatever a hand-made v1 job holds instead is left for the validator to word. */
function pushed(r: unknown): unknown {
  const record = r as Partial<TelemetryRecord> | null;
  return record !== null && typeof record === 'object' && typeof record.fields === 'object' && record.fields !== null ? asPushRecord(record as TelemetryRecord) : r;
}
