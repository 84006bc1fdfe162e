import type { Metrics } from '../../metrics/index.js';
import type { RefusedFieldAnswer, RejectedRecord } from '../../telemetry/envelope.js';
import { boundedJson } from '../../telemetry/json.js';
import { TYPES, typeOf, type RecordTypeInfo } from '../../telemetry/fields.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { PointRows, recordsOfRows, writeRecord } from '../flatten/points.js';
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

/** The rule a record of a vehicle refused by the admission (MAX_VEHICLES) broke: in answers, the quarantine and /metrics. */
export const VEHICLES_MAX = 'vehicles_max';

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
  /** Records as a job holds them, a refused required field already left out: every rule but presence (worker/unsealed.ts). */
  partialRecords?: boolean;
  /** Which vehicles are known (MAX_VEHICLES, fleet/admission.ts); every one when unset. */
  vehicles?: { isKnown(plate: string): boolean } | undefined;
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
  /** Accepted records of plates this process does not know yet, by plate: the receiver asks whether to admit them. */
  readonly unknownPlates = new Map<string, number[]>();
  readonly wantsPlates: boolean;

  constructor(
    private readonly push: PushFacts,
    private readonly opts: SortOptions,
    /** The push's size in bytes: its rows are about as long (a third of it for full CAN records). */
    bodyBytes = 0,
  ) {
    // A realtime push's rows fit in a slice of Node's buffer pool (under 4 KiB), not an allocation of their own.
    const capacity = Math.max(256, Math.ceil(bodyBytes / opts.partitions) + 64);
    this.rows = Array.from({ length: opts.partitions }, () => new PointRows(capacity));
    this.wantsPlates = opts.vehicles !== undefined;
  }

  /** The rows a record of `vehicleno` goes to. */
  rowsFor(vehicleno: string): PointRows {
    return this.rows[this.opts.partitions === 1 ? 0 : partitionOf(vehicleno, this.opts.partitions)]!;
  }

  /** A record the scanner validated, judged and wrote: record `i`, of `plate` when `wantsPlates`. */
  stored(type: RecordTypeInfo, time: number, i?: number, plate?: string): void {
    if (plate !== undefined && !this.opts.vehicles!.isKnown(plate)) {
      const at = this.unknownPlates.get(plate);
      if (at) at.push(i!);
      else this.unknownPlates.set(plate, [i!]);
    }
    this.accepted++;
    this.acceptedBy[type.index]!++;
    if (time !== this.push.receivedAt) this.late[type.index]!.push(Math.max(0, this.push.receivedAt - time) / 1000);
  }

  /** Record `i` of the push, parsed; `text`, when known, is what the quarantine keeps of it (as sent). */
  item(i: number, item: unknown, text?: string): void {
    const { receivedAt } = this.push;
    const r = validated(item, receivedAt, this.opts.partialRecords === true);
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
    this.stored(typeOf(record.type), record.time, i, this.wantsPlates ? record.vehicleno : undefined);
    if (judged === undefined || judged.refused.length === 0) return;
    for (const f of judged.refused) this.implausible.push({ rule: f.rule, scope: 'field' });
    this.fieldsRefused.fields += judged.refused.length;
    if (++this.fieldsRefused.records > REJECTED_IN_DETAIL) return;
    for (const f of judged.refused) this.refusedFields.push({ index: i, ...f });
    this.keep(i, item, text, `implausible field(s) not stored: ${judged.refused.map((f) => `data.${f.field}: ${f.error}`).join('; ')}`);
  }

  /**
   * The records of `plates` refused after all (the vehicles' admission said no): taken out of the rows,
   * listed as rejected with `error` (rule `vehicles_max`), and the whole push kept once in the quarantine
   * (`text`), to replay once the bound is raised. Only pushes with refused plates pay for this.
   */
  refuseVehicles(plates: ReadonlySet<string>, error: string, text: () => string): void {
    for (let p = 0; p < this.rows.length; p++) {
      const rows = this.rows[p]!;
      const records = recordsOfRows(rows.buf.subarray(0, rows.len));
      if (!records.some((r) => plates.has(r.vehicleno))) continue;
      const kept = new PointRows(rows.len);
      for (const r of records) {
        if (!plates.has(r.vehicleno)) writeRecord(kept, r, this.opts.flatten);
        else {
          this.accepted--;
          this.acceptedBy[typeOf(r.type).index]!--;
        }
      }
      this.rows[p] = kept;
    }
    const indices = [...plates].flatMap((plate) => this.unknownPlates.get(plate) ?? []).sort((a, b) => a - b);
    for (const index of indices) this.rejected.push({ index, error: this.rejected.length < REJECTED_IN_DETAIL ? error : BEYOND_DETAIL, rule: VEHICLES_MAX });
    this.rejected.sort((a, b) => a.index - b.index);
    this.held.push(quarantineEntry(this.push.originOf(), -1, `${indices.length} record(s) of ${plates.size} vehicle(s) refused: ${error}; the whole push is kept here`, text(), this.opts.quarantineRawLimit));
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
function validated(item: unknown, receivedAt: number, partial: boolean): ValidationResult {
  try {
    return validateRecord(item, receivedAt, partial);
  } catch (err) {
    return { ok: false, rule: 'other', error: `could not be validated: ${err instanceof Error ? err.message : String(err)}` };
  }
}
