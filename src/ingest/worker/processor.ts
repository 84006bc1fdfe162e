import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { decodeJob, jobRows } from '../queue/codec.js';
import { THIS_RELEASE, unreadable, type Reads, type Unreadable } from '../queue/formats.js';
import { quarantineEntry, type NewQuarantineEntry } from '../queue/quarantine.js';
import { asPushRecord, pickedValues, writtenRecordOf, type FieldPick, type WrittenRecord, type TelemetryRecord } from '../../telemetry/record.js';
import { flattenRecords, type FlattenOptions } from '../flatten/flatten.js';
import { readRows, recordsOfRows, type ReadPoints } from '../flatten/points.js';
import { Lines } from '../write/lines.js';
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
  flatten: FlattenOptions;
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
    const rows = jobRows(job.data);
    // A job of an older release holds records, flattened here; a v3 job's points were flattened by the receiver.
    const batch: ReadPoints & { dropped?: number } = rows ? readRows(rows, opts.pick) : pointsOf(decodeJob(job.data), opts.flatten, opts.pick);
    const d = (job.data as { d?: unknown }).d;
    const droppedFields = batch.dropped ?? (typeof d === 'number' ? d : 0);
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
      const records = rows ? recordsOfRows(rows) : decodeJob(job.data);
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

/** The points of an older job's records, as a v3 job's rows would give them. */
function pointsOf(records: readonly TelemetryRecord[], flatten: FlattenOptions, pick?: FieldPick): ReadPoints & { dropped: number } {
  const f = flattenRecords(records, flatten);
  const values = pick === undefined ? undefined : pickedValues(pick, records.length);
  return {
    lines: Lines.of(f.lines),
    sources: f.sources,
    measurements: f.lines.map((line) => line.slice(0, line.indexOf(','))),
    records: records.length,
    emptyRecords: f.emptyRecords,
    writtenRecords: records.map((r, i) => {
      const s = writtenRecordOf(r);
      if (pick !== undefined && values !== undefined) {
        s.values = values;
        s.at = i * pick.names.length;
        pick.names.forEach((name, j) => {
          if (Object.hasOwn(r.fields, name)) values[s.at! + j] = r.fields[name]!;
        });
      }
      return s;
    }),
    dropped: f.droppedFields,
  };
}
