import { UnrecoverableError, type Job } from 'bullmq';
import { decodeJob } from '../queue/codec.js';
import { flattenRecords, type FlattenOptions } from '../flatten/flatten.js';
import { WriteError, type PointSink } from '../write/sink.js';

export interface ProcessResult {
  records: number;
  points: number;
  droppedFields: number;
}

export interface ProcessorOptions {
  sink: PointSink;
  flatten: FlattenOptions;
  retrySpanMs: number;
  now?: () => number;
}

/**
 * One job: decode its records, flatten them to points and write them all. The job completes
 * only when the sink confirmed every point; a throw hands it back to BullMQ for a retry.
 */
export function createProcessor(opts: ProcessorOptions): (job: Job) => Promise<ProcessResult> {
  const now = opts.now ?? Date.now;
  return async (job) => {
    const records = decodeJob(job.data);
    const batch = flattenRecords(records, opts.flatten);
    try {
      await opts.sink.write(batch.lines);
    } catch (err) {
      if (err instanceof WriteError && !err.retryable) {
        // The store refuses the data itself; retrying cannot change that. Keep it as a dead letter.
        throw new UnrecoverableError(err.message);
      }
      if (now() - job.timestamp > opts.retrySpanMs) {
        throw new UnrecoverableError(`retry span of ${opts.retrySpanMs} ms exhausted; last error: ${(err as Error).message}`);
      }
      throw err;
    }
    return { records: records.length, points: batch.lines.length, droppedFields: batch.droppedFields };
  };
}
