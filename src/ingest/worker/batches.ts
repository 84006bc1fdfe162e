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
 * **In the order jobs were accepted** (with `order`): jobs are written side by side and their writes end
 * in any order (one slow or retried write, a freshly started service), but the vehicle events take a
 * vehicle's records in the order its jobs were accepted (the queue's job ids), wherever the jobs run: a
 * job's update waits while a job of its partition accepted before it is still being written (active in
 * the queue, in this process or another), at most `order.waitMs`; past that the later ones go, and the
 * earlier job's records, late by then, are corrected when it lands (events/corrections/). So an ordinary
 * slow write moves nothing, and only a job stuck past the bound costs a correction.
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
  /** Updates in the order jobs were accepted (above); none when unset. */
  order?: {
    /** The ids of the partition's jobs being processed now, by any worker (BullMQ's active list). */
    active(partition: number): Promise<readonly string[]>;
    /** EVENTS_ORDER_WAIT: how long a written job waits for those accepted before it. */
    waitMs: number;
    /** How often a waiting partition looks again (ms); 50 when unset. */
    pollMs?: number;
  };
}

interface Job {
  writtenRecords: readonly WrittenRecord[];
  /** Its place in the partition's queue (NaN: an id that is no number, which waits for nothing). */
  order: number;
  /** When it was handed on (Date.now()). */
  since: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A job id as its place in the queue: BullMQ numbers jobs as its queue takes them. */
const orderOf = (jobId: string | undefined): number => (jobId !== undefined && /^\d{1,15}$/.test(jobId) ? Number(jobId) : NaN);

/** Ids of jobs this process updated, kept a while per partition: a job stays in the active list a moment after. */
const DONE_KEPT = 4_096;

export class StateUpdateBatches {
  /** By partition: written jobs not yet in a batch, in the order they were handed on. */
  private readonly waiting = new Map<number, Job[]>();
  /** By partition: when its last update began (Date.now()). */
  private readonly began = new Map<number, number>();
  /** Partitions whose next look is set (a timer, or a turn queued), and of those, those polling. */
  private readonly kicked = new Set<number>();
  private readonly polling = new Set<number>();
  /** By partition: ids of jobs updated here. */
  private readonly done = new Map<number, Set<number>>();
  /** A partition's updates run one at a time. */
  private readonly turns = new SerialByKey<number>();

  constructor(
    /** The update: every written record of the batch's jobs, and how many jobs they are. */
    private readonly update: (partition: number, writtenRecords: readonly WrittenRecord[], jobs: number) => Promise<void>,
    private readonly opts: BatchOptions,
  ) {}

  /** Hands on one job's written records (`jobId`: its id in the partition's queue); resolves once its batch's update is done. */
  add(partition: number, writtenRecords: readonly WrittenRecord[], jobId?: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(partition) ?? [];
      this.waiting.set(partition, list);
      list.push({ writtenRecords, order: orderOf(jobId), since: Date.now(), resolve, reject });
      this.kick(partition);
    });
  }

  /**
   * The partition looks at its waiting jobs: at once when a batch is full, else once the linger since its
   * last update is over; while held up by a job accepted before (`delayMs`: polling), again at once when
   * a job comes (it may be the one).
   */
  private kick(partition: number, delayMs?: number): void {
    const list = this.waiting.get(partition) ?? [];
    const full = list.length >= this.opts.maxJobs || list.reduce((n, j) => n + j.writtenRecords.length, 0) >= this.opts.maxRecords;
    if (this.kicked.has(partition) && !full && !(delayMs === undefined && this.polling.has(partition))) return;
    this.kicked.add(partition);
    if (delayMs === undefined) this.polling.delete(partition);
    else this.polling.add(partition);
    const wait = delayMs ?? (full ? 0 : Math.max(0, (this.began.get(partition) ?? -Infinity) + this.opts.lingerMs - Date.now()));
    const go = () => {
      void this.turns.run(partition, async () => {
        this.kicked.delete(partition);
        await this.next(partition);
      });
    };
    if (wait > 0) setTimeout(go, wait);
    else go();
  }

  /** Takes the next batch: the waiting jobs nothing accepted before them still holds up, at most a batch's worth. */
  private async next(partition: number): Promise<void> {
    const list = this.waiting.get(partition) ?? [];
    if (list.length === 0) return;
    const ready = await this.ready(partition, list);
    if (ready.length === 0) {
      this.kick(partition, this.opts.order?.pollMs ?? 50);
      return;
    }
    const batch: Job[] = [];
    let records = 0;
    for (const j of ready) {
      if (batch.length >= this.opts.maxJobs || (batch.length > 0 && records + j.writtenRecords.length > this.opts.maxRecords)) break;
      batch.push(j);
      records += j.writtenRecords.length;
    }
    const taken = new Set(batch);
    this.waiting.set(partition, list.filter((j) => !taken.has(j)));
    await this.run(partition, batch);
    if ((this.waiting.get(partition) ?? []).length > 0) this.kick(partition);
  }

  /** The waiting jobs free to go, in the order they were accepted. */
  private async ready(partition: number, list: readonly Job[]): Promise<Job[]> {
    const order = this.opts.order;
    // Jobs without a place in the queue keep the order they were handed on, before the rest.
    const rank = (j: Job) => (j.order === j.order ? j.order : -1);
    const byOrder = [...list].sort((a, b) => rank(a) - rank(b));
    if (order === undefined) return byOrder;
    const mine = new Set(list.map((j) => j.order));
    const done = this.done.get(partition);
    let first = Infinity;
    for (const id of await order.active(partition)) {
      const o = orderOf(id);
      if (o === o && o < first && !mine.has(o) && !done?.has(o)) first = o;
    }
    const free = byOrder.filter((j) => !(j.order >= first));
    if (free.length > 0) return free;
    // Held up past the bound: the later ones go; the earlier job's records correct what they change when it lands.
    return Date.now() - Math.min(...list.map((j) => j.since)) >= order.waitMs ? byOrder : [];
  }

  /** Never rejects: each job is told its own outcome. */
  private async run(partition: number, jobs: readonly Job[]): Promise<void> {
    this.began.set(partition, Date.now());
    try {
      await this.update(partition, jobs.length === 1 ? jobs[0]!.writtenRecords : jobs.flatMap((j) => j.writtenRecords), jobs.length);
      for (const j of jobs) this.settled(partition, j);
    } catch (err) {
      if (jobs.length === 1) {
        this.settled(partition, jobs[0]!);
        return jobs[0]!.reject(err);
      }
      for (const j of jobs) {
        try {
          await this.update(partition, j.writtenRecords, 1);
          this.settled(partition, j);
          j.resolve();
        } catch (e) {
          this.settled(partition, j);
          j.reject(e);
        }
      }
      return;
    }
    for (const j of jobs) j.resolve();
  }

  private settled(partition: number, j: Job): void {
    if (j.order !== j.order) return;
    const done = this.done.get(partition) ?? new Set<number>();
    this.done.set(partition, done);
    done.add(j.order);
    if (done.size > DONE_KEPT) for (const o of done) if (done.delete(o) && done.size <= DONE_KEPT / 2) break;
  }
}
