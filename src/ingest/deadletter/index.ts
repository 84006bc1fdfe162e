import { Queue, type Job } from 'bullmq';
import type { RedisClient } from '../../redis/connect.js';
import { decodeJob, jobRecordCount } from '../queue/codec.js';
import type { PartitionedProducer } from '../queue/producer.js';
import type { RedisKeys } from '../queue/keys.js';
import { Quarantine, type QuarantineEntry } from '../queue/quarantine.js';
import { validateRecord } from '../validate/record.js';
import type { Plausibility } from '../plausibility/judge.js';
import { splitPush } from '../../telemetry/push.js';
import type { TelemetryRecord } from '../../telemetry/record.js';

/**
 * What an operator does with what did not land: quarantined records (refused by the receiver's
 * validation or by InfluxDB) and failed jobs (retry span exhausted). Replay is idempotent: a
 * replayed record writes the same point however often, and an item is removed only after its
 * records are queued again.
 */

export type ItemId = string;
/**
 * Quarantine entries are named by their stream id (`1763700000000-0`), failed jobs as `job:<id>` with
 * one partition (as before partitions existed) and `job:<partition>:<id>` with several.
 */
export const isJobId = (id: ItemId): boolean => id.startsWith('job:');

/** The partition and BullMQ id of `job:…`, or undefined when it names none of `partitions` partitions. */
export function parseJobId(id: ItemId, partitions: number): { partition: number; jobId: string } | undefined {
  const rest = id.slice('job:'.length);
  const colon = rest.indexOf(':');
  if (colon < 0) return partitions === 1 && rest ? { partition: 0, jobId: rest } : undefined;
  const partition = Number(rest.slice(0, colon));
  const jobId = rest.slice(colon + 1);
  return Number.isInteger(partition) && partition >= 0 && partition < partitions && jobId ? { partition, jobId } : undefined;
}

export interface DeadLetterItem {
  id: ItemId;
  source: 'quarantine' | 'failed-job';
  /** receive / write / derive for quarantine entries; `job` for failed jobs. */
  stage: 'receive' | 'write' | 'derive' | 'job';
  at: number;
  reason: string;
  records: number;
  /** The push's delivery id, for quarantine entries. */
  deliveryId?: string;
}

export interface ListFilter {
  source?: 'quarantine' | 'failed' | 'all';
  limit?: number;
  stage?: DeadLetterItem['stage'];
  deliveryId?: string;
  vehicle?: string;
  /** Epoch ms, inclusive. */
  since?: number;
  until?: number;
}

const inTime = (at: number, f: ListFilter) => (f.since === undefined || at >= f.since) && (f.until === undefined || at <= f.until);

function quarantineMatches(e: QuarantineEntry, f: ListFilter): boolean {
  if (f.stage !== undefined && e.stage !== f.stage) return false;
  if (f.deliveryId !== undefined && e.deliveryId !== f.deliveryId) return false;
  if (!inTime(e.receivedAt, f)) return false;
  // The plate as the entry holds it: a record's JSON (raw stays a JSON text, maybe cut).
  return f.vehicle === undefined || e.raw.includes(`"vehicleno":${JSON.stringify(f.vehicle)}`);
}

function safeRecords(j: Job): TelemetryRecord[] {
  try {
    return decodeJob(j.data);
  } catch {
    return [];
  }
}

export interface ReplayOutcome {
  id: ItemId;
  ok: boolean;
  detail: string;
}

export class DeadLetters {
  readonly quarantine: Quarantine;
  /** The push queues, a partition each. */
  readonly queues: readonly Queue[];

  /** The deployment's events outboxes, where a derived point's replay goes. */
  private readonly outboxes: readonly string[];

  constructor(
    private readonly redis: RedisClient,
    keys: RedisKeys,
    private readonly producer: Pick<PartitionedProducer, 'enqueue'>,
    bull: { skipVersionCheck?: boolean } = {},
    /** The rules as the tool's settings give them (PLAUSIBLE_RANGES, TIME_MAX_*): widen one to replay what it refused. */
    private readonly plausibility?: Plausibility,
  ) {
    this.quarantine = new Quarantine(redis, keys);
    this.outboxes = keys.partitions.map((_, i) => keys.eventsOutbox(i));
    this.queues = keys.partitions.map((name) => {
      const q = new Queue(name, { connection: redis, ...bull });
      // Errors surface on the awaited calls; without a listener BullMQ prints each connection error.
      q.on('error', () => {});
      return q;
    });
  }

  /** Items oldest first, filtered; at most `limit` of each source. */
  async list(opts: ListFilter = {}): Promise<DeadLetterItem[]> {
    const limit = opts.limit ?? 100;
    const out: DeadLetterItem[] = [];
    if (opts.source !== 'failed' && opts.stage !== 'job') {
      let after: string | undefined;
      let taken = 0;
      // Pages of the stream until `limit` entries pass the filter (a filter may skip many).
      for (;;) {
        const page = await this.quarantine.list({ count: 500, ...(after ? { after } : {}) });
        for (const e of page) {
          if (taken < limit && quarantineMatches(e, opts)) {
            out.push({ id: e.id, source: 'quarantine', stage: e.stage, at: e.receivedAt, reason: e.reason, records: 1, deliveryId: e.deliveryId });
            taken++;
          }
        }
        if (page.length < 500 || taken >= limit) break;
        after = page[page.length - 1]!.id;
      }
    }
    if (opts.source !== 'quarantine' && (opts.stage === undefined || opts.stage === 'job') && opts.deliveryId === undefined) {
      // Every failed job only when a filter must look at each; else the oldest `limit` of each partition.
      const filtered = opts.vehicle !== undefined || opts.since !== undefined || opts.until !== undefined;
      const jobs: DeadLetterItem[] = [];
      for (let p = 0; p < this.queues.length; p++) {
        for (const j of await this.queues[p]!.getFailed(0, filtered ? -1 : limit - 1)) {
          const item = jobItem(j, p, this.queues.length);
          if (!inTime(item.at, opts)) continue;
          if (opts.vehicle !== undefined && !safeRecords(j).some((r) => r.vehicleno === opts.vehicle)) continue;
          jobs.push(item);
        }
      }
      out.push(...jobs.sort((a, b) => a.at - b.at).slice(0, limit));
    }
    return out;
  }

  async show(id: ItemId): Promise<{ item: DeadLetterItem; entry?: QuarantineEntry; records?: TelemetryRecord[] } | undefined> {
    if (isJobId(id)) {
      const job = await this.failedJob(id);
      return job ? { item: jobItem(job.job, job.partition, this.queues.length), records: decodeJob(job.job.data) } : undefined;
    }
    const entry = await this.quarantine.get(id);
    if (!entry) return undefined;
    return { item: { id, source: 'quarantine', stage: entry.stage, at: entry.receivedAt, reason: entry.reason, records: 1 }, entry };
  }

  /** Validates a quarantined record (or body) again and queues what now passes; retries a failed job. */
  async replay(id: ItemId): Promise<ReplayOutcome> {
    if (isJobId(id)) {
      const job = await this.failedJob(id);
      if (!job) return { id, ok: true, detail: 'no such failed job (already replayed or purged)' };
      await job.job.retry('failed');
      return { id, ok: true, detail: `job queued again with ${jobRecordCount(job.job.data)} record(s)` };
    }
    const entry = await this.quarantine.get(id);
    if (!entry) return { id, ok: true, detail: 'no such entry (already replayed or purged)' };
    if (entry.truncated) return { id, ok: false, detail: 'kept only in part (QUARANTINE_RAW_LIMIT); cannot be replayed' };
    if (entry.stage === 'derive') {
      // A derived point: its outbox entry goes back to the outbox it came from, whose dispatch writes it
      // again (and posts it to the webhook again, under its stable id).
      if (!this.outboxes.includes(entry.route)) return { id, ok: false, detail: `its outbox ${entry.route} is not one of this deployment's` };
      await this.redis.xadd(entry.route, '*', 'e', entry.raw);
      await this.quarantine.remove([id]);
      return { id, ok: true, detail: `derived point queued again in ${entry.route}` };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(entry.raw);
    } catch {
      return { id, ok: false, detail: 'still not JSON' };
    }
    const push = splitPush(parsed, 'any');
    if (!push.ok) return { id, ok: false, detail: `still not a push: ${push.problem}` };
    const records: TelemetryRecord[] = [];
    for (const item of push.items) {
      // The original receive time stamps CAN records without one, as it did the first time.
      const r = validateRecord(item, entry.receivedAt);
      if (!r.ok) return { id, ok: false, detail: `still invalid: ${r.error}` };
      // Judged by today's clock and rules; an entry with a field still refused stays, to replay once every field passes.
      const judged = this.plausibility?.judge(r.record, Date.now());
      if (judged && !judged.ok) return { id, ok: false, detail: `still implausible: ${judged.error}` };
      if (judged && judged.refused.length > 0) return { id, ok: false, detail: `still implausible: ${judged.refused.map((f) => `data.${f.field}: ${f.error}`).join('; ')}` };
      records.push(r.record);
    }
    await this.producer.enqueue(records);
    await this.quarantine.remove([id]);
    return { id, ok: true, detail: `${records.length} record(s) queued again` };
  }

  async purge(id: ItemId): Promise<boolean> {
    if (isJobId(id)) {
      const job = await this.failedJob(id);
      if (!job) return false;
      await job.job.remove();
      return true;
    }
    return (await this.quarantine.remove([id])) > 0;
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.map((q) => q.close()));
  }

  private async failedJob(id: ItemId): Promise<{ job: Job; partition: number } | undefined> {
    const ref = parseJobId(id, this.queues.length);
    if (!ref) return undefined;
    const job = await this.queues[ref.partition]!.getJob(ref.jobId);
    return job && (await job.isFailed()) ? { job, partition: ref.partition } : undefined;
  }
}

function jobItem(j: Job, partition: number, partitions: number): DeadLetterItem {
  let records = 0;
  try {
    records = jobRecordCount(j.data);
  } catch {
    // An unreadable payload is still listed; its reason will say why it failed.
  }
  return { id: partitions === 1 ? `job:${j.id}` : `job:${partition}:${j.id}`, source: 'failed-job', stage: 'job', at: j.finishedOn ?? j.timestamp, reason: j.failedReason, records };
}
