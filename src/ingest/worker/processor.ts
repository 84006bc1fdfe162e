import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { decodeJob, jobRows, type JobPayloadV3 } from '../queue/codec.js';
import type { JobSeal } from '../queue/seal.js';
import { checkUnsealed, type CheckedJob, type UnsealedChecks } from './unsealed.js';
import { THIS_RELEASE, unreadable, type Reads, type Unreadable } from '../queue/formats.js';
import { quarantineEntry, type NewQuarantineEntry } from '../queue/quarantine.js';
import { asPushRecord, type FieldPick, type WrittenRecord } from '../../telemetry/record.js';
import { readRows, recordsOfRows, type ReadPoints } from '../flatten/points.js';
import { PartialWriteError, type PointSink, type RefusedLine } from '../write/sink.js';

export interface ProcessResult {
  records: number;
  points: number;
  droppedFields: number;
  /** Points the store refused, moved to the quarantine with its error. */
  refused: number;
  /** Points written, by measurement. */
  pointsBy: Record<string, number>;
}

export interface ProcessorOptions {
  sink: PointSink;
  retrySpanMs: number;
  /** Where points the store refuses go, with the store's error; resolves once stored. */
  quarantine: (entries: NewQuarantineEntry[]) => Promise<void>;
  /** Told the job's records (and its id in the queue) once the store holds them (the fleet's last-seen state and the vehicle events, worker/batches.ts); a throw retries the job. */
  written?: (records: readonly WrittenRecord[], jobId: string | undefined) => Promise<void>;
  /** The fields `written` is told the values of in each written record (the vehicle events' inputs); none when unset. */
  pick?: FieldPick;
  /** The job formats this worker reads (queue/formats.ts); this release's when unset. */
  reads?: Reads;
  /** Told of each job left for a worker that reads it. */
  deferred?: (why: Unreadable) => void;
  /** The deployment's job seal: a sealed job's rows are copied as they are, any other job is checked record by record (`unsealed`). */
  seal?: Pick<JobSeal, 'sealed'>;
  /** How a job without the seal is checked: the receiver's rules (worker/unsealed.ts). */
  unsealed: UnsealedChecks;
  /** Told of each job checked record by record, with what it refused. */
  checked?: (job: Job, outcome: CheckedJob) => void;
  now?: () => number;
}

/**
 * How long a job this worker cannot read waits before it is offered again: short, so that a worker
 * that reads it takes it soon; jittered, so that several such jobs do not return together.
 */
const DEFER_MS = 1_000;
const deferDelay = () => Math.round(DEFER_MS * (0.75 + Math.random() / 2));

/**
 * One job: decode its records, flatten them to points and write them all. The job completes
 * only when the store confirmed every point, or refused some for good and those are in the
 * quarantine; a throw hands it back to BullMQ for a retry.
 *
 * A job of a format this worker does not read (a newer release wrote it) is not an error of the job:
 * it goes back to the delayed set for a moment, for a worker that reads it, without spending an
 * attempt (BullMQ's `moveToDelayed` skips the attempt count; a DelayedError is neither a failure nor a
 * completion), so it can never become a dead letter for a release mix.
 */
export function createProcessor(opts: ProcessorOptions): (job: Job, token?: string) => Promise<ProcessResult> {
  const now = opts.now ?? Date.now;
  const reads = opts.reads ?? THIS_RELEASE;
  return async (job, token) => {
    const cannot = unreadable(job.data, reads);
    if (cannot) {
      if (token === undefined) throw new Error(`${cannot.message} (no lock token to defer it with)`);
      opts.deferred?.(cannot);
      await job.moveToDelayed(now() + deferDelay(), token);
      throw new DelayedError(cannot.message);
    }
    // A sealed job's rows were written by a receiver from records it validated and judged: copied as they
    // are. Any other job (an older release's, one put on the queue by hand) is checked record
    // by record as a push would be, and only what passes is written.
    let rows = jobRows(job.data);
    let droppedFields: number;
    if (rows && opts.seal && (await opts.seal.sealed(job.data as JobPayloadV3))) {
      const d = (job.data as { d?: unknown }).d;
      droppedFields = typeof d === 'number' ? d : 0;
    } else {
      const checked = checkUnsealed(rows ? recordsOfRows(rows) : decodeJob(job.data), job, opts.unsealed);
      if (checked.held.length > 0) await opts.quarantine(checked.held);
      opts.checked?.(job, checked);
      rows = checked.rows;
      droppedFields = checked.dropped;
    }
    const batch: ReadPoints = readRows(rows, opts.pick);
    let refused: readonly RefusedLine[] = [];
    try {
      await opts.sink.write(batch.lines);
    } catch (err) {
      if (err instanceof PartialWriteError) refused = err.refused;
      else {
        if (now() - job.timestamp > opts.retrySpanMs) {
          throw new UnrecoverableError(`retry span of ${opts.retrySpanMs} ms exhausted; last error: ${(err as Error).message}`);
        }
        throw err;
      }
    }
    if (refused.length > 0) {
      const at = now();
      // Only now are records rebuilt from the rows: a refused point is kept as its record, for replay.
      const records = recordsOfRows(rows);
      await opts.quarantine(
        refused.map(({ line, error }) => {
          const index = batch.sources[line]!;
          const origin = { deliveryId: `job:${job.id}`, sender: '', receivedAt: at, route: 'write', stage: 'write' } as const;
          return quarantineEntry(origin, index, `InfluxDB refused the point: ${error}`, JSON.stringify(asPushRecord(records[index]!)));
        }),
      );
    }
    await opts.written?.(batch.writtenRecords, job.id);
    const pointsBy: Record<string, number> = {};
    const refusedAt = new Set(refused.map((r) => r.line));
    for (let i = 0; i < batch.lines.length; i++) {
      if (refusedAt.has(i)) continue;
      const measurement = batch.measurements[i]!;
      pointsBy[measurement] = (pointsBy[measurement] ?? 0) + 1;
    }
    return { records: batch.records, points: batch.lines.length - refused.length, droppedFields, refused: refused.length, pointsBy };
  };
}
