import type { WrittenRecord } from '../../telemetry/record.js';
import { SerialByKey } from './serialByKey.js';

/**
 * What a worker keeps per vehicle once a job's points are in InfluxDB (the fleet's last-seen state, the
 * vehicle events) is updated for several jobs of a partition at once: the jobs that come while the
 * partition's previous update runs, and for `lingerMs` after it began. Each vehicle's state is then
 * written once a batch rather than once a job, in one Redis script, so under load, when it matters, the
 * costs an update has per vehicle and per script are shared by more records; at light load a job waits
 * at most `lingerMs`. Only the jobs' completion waits: their points are already written.
 *
 * What is updated does not depend on the batching: the last-seen state keeps the newest time whatever
 * the order, and derivation is the same however records are batched (events/derive.ts). A batch that
 * fails is retried job by job, so only a job that cannot be handled fails (its update is one script,
 * so a failed batch changed nothing).
 */
export interface BatchOptions {
  /** How long after a partition's previous update began the next one gathers jobs (0: only while the previous one runs). */
  lingerMs: number;
  /** A batch starts at once with this many jobs: jobs waiting hold the worker's concurrency slots. */
  maxJobs: number;
  /** …or with this many records: it bounds one update's work (a Redis script's run). */
  maxRecords: number;
}

interface Job {
  writtenRecords: readonly WrittenRecord[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Batch {
  jobs: Job[];
  records: number;
  /** Lets the batch start: its linger is over, or it is full. */
  start: () => void;
}

export class StateUpdateBatches {
  /** By partition: the batch still taking jobs. */
  private readonly open = new Map<number, Batch>();
  /** By partition: when its last update began (Date.now()). */
  private readonly began = new Map<number, number>();
  /** A partition's updates run one at a time. */
  private readonly turns = new SerialByKey<number>();

  constructor(
    /** The update: every written record of the batch's jobs, and how many jobs they are. */
    private readonly update: (partition: number, writtenRecords: readonly WrittenRecord[], jobs: number) => Promise<void>,
    private readonly opts: BatchOptions,
  ) {}

  /** Hands on one job's written records; resolves once its batch's update is done. */
  add(partition: number, writtenRecords: readonly WrittenRecord[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const batch = this.open.get(partition) ?? this.openBatch(partition);
      batch.jobs.push({ writtenRecords, resolve, reject });
      batch.records += writtenRecords.length;
      if (batch.jobs.length >= this.opts.maxJobs || batch.records >= this.opts.maxRecords) {
        this.open.delete(partition);
        batch.start();
      }
    });
  }

  private openBatch(partition: number): Batch {
    let start = (): void => undefined;
    const ready = new Promise<void>((r) => (start = r));
    const batch: Batch = { jobs: [], records: 0, start };
    this.open.set(partition, batch);
    const wait = (this.began.get(partition) ?? -Infinity) + this.opts.lingerMs - Date.now();
    if (wait > 0) setTimeout(start, wait);
    else start();
    void this.turns.run(partition, async () => {
      await ready;
      await this.run(partition, batch);
    });
    return batch;
  }

  /** Never rejects: each job is told its own outcome. */
  private async run(partition: number, batch: Batch): Promise<void> {
    // Closed once it starts: a job that comes now goes to the next batch.
    if (this.open.get(partition) === batch) this.open.delete(partition);
    this.began.set(partition, Date.now());
    const { jobs } = batch;
    try {
      await this.update(partition, jobs.length === 1 ? jobs[0]!.writtenRecords : jobs.flatMap((j) => j.writtenRecords), jobs.length);
      for (const j of jobs) j.resolve();
    } catch (err) {
      if (jobs.length === 1) return jobs[0]!.reject(err);
      for (const j of jobs) {
        try {
          await this.update(partition, j.writtenRecords, 1);
          j.resolve();
        } catch (e) {
          j.reject(e);
        }
      }
    }
  }
}
