import { UnrecoverableError, type Job } from 'bullmq';
import { decodeJob } from '../queue/codec.js';
import { quarantineEntry, type NewQuarantineEntry } from '../queue/quarantine.js';
import { asPushRecord, type TelemetryRecord } from '../../telemetry/record.js';
import { flattenRecords, type FlattenOptions } from '../flatten/flatten.js';
import { WriteError, type PointSink } from '../write/sink.js';

export interface ProcessResult {
  records: number;
  points: number;
  droppedFields: number;
  /** Points the store refused, moved to the quarantine with its error. */
  refused: number;
}

export interface ProcessorOptions {
  sink: PointSink;
  flatten: FlattenOptions;
  /** Lines per write request. */
  batchLines: number;
  retrySpanMs: number;
  /** Where points the store refuses go, with the store's error; resolves once stored. */
  quarantine: (entries: NewQuarantineEntry[]) => Promise<void>;
  now?: () => number;
}

/**
 * Writes `lines`, and when the store refuses data in them (400, 422: a field-type conflict
 * made by another writer, a line it cannot parse) halves the batch until the refused lines
 * stand alone. Points are idempotent, so rewriting the halves that had landed changes
 * nothing. Returns the refused lines' indices with the store's error; anything retryable throws.
 */
async function writeIsolating(sink: PointSink, lines: string[], offset: number, refused: Array<{ at: number; error: string }>): Promise<void> {
  try {
    await sink.write(lines);
  } catch (err) {
    if (!(err instanceof WriteError) || err.retryable) throw err;
    if (lines.length === 1) {
      refused.push({ at: offset, error: err.message });
      return;
    }
    const half = Math.ceil(lines.length / 2);
    await writeIsolating(sink, lines.slice(0, half), offset, refused);
    await writeIsolating(sink, lines.slice(half), offset + half, refused);
  }
}

/**
 * One job: decode its records, flatten them to points and write them all. The job completes
 * only when the store confirmed every point, or refused some for good and those are in the
 * quarantine; a throw hands it back to BullMQ for a retry.
 */
export function createProcessor(opts: ProcessorOptions): (job: Job) => Promise<ProcessResult> {
  const now = opts.now ?? Date.now;
  return async (job) => {
    const records = decodeJob(job.data);
    const batch = flattenRecords(records, opts.flatten);
    const refused: Array<{ at: number; error: string }> = [];
    try {
      for (let i = 0; i < batch.lines.length; i += opts.batchLines) {
        await writeIsolating(opts.sink, batch.lines.slice(i, i + opts.batchLines), i, refused);
      }
    } catch (err) {
      if (now() - job.timestamp > opts.retrySpanMs) {
        throw new UnrecoverableError(`retry span of ${opts.retrySpanMs} ms exhausted; last error: ${(err as Error).message}`);
      }
      throw err;
    }
    if (refused.length > 0) {
      const at = now();
      await opts.quarantine(
        refused.map(({ at: line, error }) => {
          const index = batch.sources[line]!;
          const origin = { deliveryId: `job:${job.id}`, receivedAt: at, route: 'write', stage: 'write' } as const;
          return quarantineEntry(origin, index, `InfluxDB refused the point: ${error}`, JSON.stringify(asPushRecord(records[index]!)));
        }),
      );
    }
    return { records: records.length, points: batch.lines.length - refused.length, droppedFields: batch.droppedFields, refused: refused.length };
  };
}
