import type { Metrics } from '../../metrics/index.js';
import type { RefusedFieldAnswer, RejectedRecord } from '../../telemetry/envelope.js';
import { boundedJson } from '../../telemetry/json.js';
import { TYPES, typeOf, type RecordTypeInfo } from '../../telemetry/fields.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { PointRows, writeRecord } from '../flatten/points.js';
import type { Plausibility } from '../plausibility/judge.js';
import { partitionOf } from '../queue/keys.js';
import { quarantineEntry, type NewQuarantineEntry, type QuarantineOrigin } from '../queue/quarantine.js';
import { validateRecord, type ValidationResult, type ValidationRule } from '../validate/record.js';

/**
 * Rejected records of one push that get their own reason in the answer and their own quarantine
 * entry; beyond them the answer names each by index only, and the whole body is kept once. A push of
 * ten thousand bad records thus costs a bounded answer and a bounded quarantine.
 */
export const REJECTED_IN_DETAIL = 100;

/** The error of a rejected record beyond the first REJECTED_IN_DETAIL: short, since there may be thousands; the reasons are in the quarantine. */
const BEYOND_DETAIL = 'invalid';

/** What the sorter knows of the push it sorts. */
export interface PushFacts {
  readonly receivedAt: number;
  originOf(): QuarantineOrigin;
}

export interface SortOptions {
  plausibility?: Plausibility | undefined;
  flatten: FlattenOptions;
  quarantineRawLimit: number;
  /** Partitions the rows go to (QUEUE_PARTITIONS). */
  partitions: number;
}

/**
 * One push's records, each validated, then judged, then flattened into the rows of its vehicle's
 * partition: a record refused whole is listed in `rejected` and kept in the quarantine as sent; a
 * record with refused fields is queued without them, and kept whole in the quarantine too, so that a
 * replay (once the rule or the device is fixed) stores the rest identically and the refused fields
 * beside it. Past REJECTED_IN_DETAIL of either, the whole push is kept once instead (`finish`).
 *
 * Records come one at a time, in the push's order: parsed (`item`), or already validated, judged and
 * written by the receiver's scanner (`stored`, src/ingest/scan/).
 */
export class RecordSorter {
  readonly rows: PointRows[];
  readonly rejected: RejectedRecord[] = [];
  /** Refused fields in detail (those of the first REJECTED_IN_DETAIL records that had any). */
  readonly refusedFields: RefusedFieldAnswer[] = [];
  /** Refused fields in all, and the records they were in. */
  readonly fieldsRefused = { fields: 0, records: 0 };
  readonly held: NewQuarantineEntry[] = [];
  /** The rule each invalid record broke, for the metrics. */
  readonly invalid: ValidationRule[] = [];
  /** Plausibility refusals by rule and scope, for the metrics. */
  readonly implausible: Array<{ rule: string; scope: 'record' | 'field' }> = [];
  accepted = 0;
  /** Accepted records by type (TYPES' order). */
  readonly acceptedBy: number[] = TYPES.map(() => 0);
  /** Lateness of accepted records in seconds, by type (records stamped on receipt left out). */
  readonly late: number[][] = TYPES.map(() => []);

  constructor(
    private readonly push: PushFacts,
    private readonly opts: SortOptions,
    /** The push's size in bytes: its rows are about as long (a third of it for full CAN records). */
    bodyBytes = 0,
  ) {
    // A realtime push's rows fit in a slice of Node's buffer pool (under 4 KiB), not an allocation of their own.
    const capacity = Math.max(256, Math.ceil(bodyBytes / opts.partitions) + 64);
    this.rows = Array.from({ length: opts.partitions }, () => new PointRows(capacity));
  }

  /** The rows a record of `vehicleno` goes to. */
  rowsFor(vehicleno: string): PointRows {
    return this.rows[this.opts.partitions === 1 ? 0 : partitionOf(vehicleno, this.opts.partitions)]!;
  }

  /** A record the scanner validated, judged and wrote. */
  stored(type: RecordTypeInfo, time: number): void {
    this.accepted++;
    this.acceptedBy[type.index]!++;
    if (time !== this.push.receivedAt) this.late[type.index]!.push(Math.max(0, this.push.receivedAt - time) / 1000);
  }

  /** Record `i` of the push, parsed; `text`, when known, is what the quarantine keeps of it (as sent). */
  item(i: number, item: unknown, text?: string): void {
    const { receivedAt } = this.push;
    const r = validated(item, receivedAt);
    if (!r.ok) {
      this.invalid.push(r.rule);
      this.reject(i, item, text, r.error);
      return;
    }
    const record = r.record;
    const judged = this.opts.plausibility?.judge(record, receivedAt);
    if (judged !== undefined && !judged.ok) {
      this.implausible.push({ rule: judged.rule, scope: 'record' });
      this.reject(i, item, text, judged.error, judged.rule);
      return;
    }
    writeRecord(this.rowsFor(record.vehicleno), record, this.opts.flatten);
    this.stored(typeOf(record.type), record.time);
    if (judged === undefined || judged.refused.length === 0) return;
    for (const f of judged.refused) this.implausible.push({ rule: f.rule, scope: 'field' });
    this.fieldsRefused.fields += judged.refused.length;
    if (++this.fieldsRefused.records > REJECTED_IN_DETAIL) return;
    for (const f of judged.refused) this.refusedFields.push({ index: i, ...f });
    this.keep(i, item, text, `implausible field(s) not stored: ${judged.refused.map((f) => `data.${f.field}: ${f.error}`).join('; ')}`);
  }

  /** After the last record: past REJECTED_IN_DETAIL, the whole push kept once. */
  finish(text: () => string): void {
    const moreRejected = this.rejected.length - REJECTED_IN_DETAIL;
    const moreRefused = this.fieldsRefused.records - REJECTED_IN_DETAIL;
    if (moreRejected <= 0 && moreRefused <= 0) return;
    const why = [
      moreRejected > 0 ? `${moreRejected} more rejected record(s), from index ${this.rejected[REJECTED_IN_DETAIL]!.index}` : '',
      moreRefused > 0 ? `${moreRefused} more record(s) with implausible fields` : '',
    ].filter(Boolean);
    this.held.push(quarantineEntry(this.push.originOf(), -1, `${why.join('; ')}; the whole push is kept here`, text(), this.opts.quarantineRawLimit));
  }

  /** The metrics of what was sorted. */
  count(m: Metrics, received: number): void {
    m.recordsReceived.inc(received);
    for (const t of TYPES) {
      const n = this.acceptedBy[t.index]!;
      if (n > 0) m.recordsAccepted.inc({ type: t.name }, n);
      const late = this.late[t.index]!;
      if (late.length === 0) continue;
      const h = m.lateness.labels({ type: t.name });
      for (const s of late) h.observe(s);
    }
    for (const rule of this.invalid) m.recordsRejected.inc({ reason: rule });
    for (const x of this.implausible) m.implausible.inc(x);
  }

  /**
   * A record kept for replay: its own text when known, so a value JSON cannot carry as parsed (1e400)
   * is kept as sent; else its JSON, at bounded cost.
   */
  private keep(i: number, item: unknown, text: string | undefined, reason: string): void {
    const origin = this.push.originOf();
    if (text !== undefined) {
      this.held.push(quarantineEntry(origin, i, reason, text, this.opts.quarantineRawLimit));
      return;
    }
    const { text: raw, truncated } = boundedJson(item, this.opts.quarantineRawLimit);
    this.held.push({ ...quarantineEntry(origin, i, reason, raw), truncated });
  }

  private reject(i: number, item: unknown, text: string | undefined, error: string, rule?: string): void {
    if (this.rejected.length >= REJECTED_IN_DETAIL) {
      this.rejected.push({ index: i, error: BEYOND_DETAIL, ...(rule ? { rule } : {}) });
      return;
    }
    this.rejected.push({ index: i, error, ...(rule ? { rule } : {}) });
    this.keep(i, item, text, error);
  }
}

/** A record's verdict; whatever goes wrong while judging it is that record's fault, never a 5xx. */
function validated(item: unknown, receivedAt: number): ValidationResult {
  try {
    return validateRecord(item, receivedAt);
  } catch (err) {
    return { ok: false, rule: 'other', error: `could not be validated: ${err instanceof Error ? err.message : String(err)}` };
  }
}
