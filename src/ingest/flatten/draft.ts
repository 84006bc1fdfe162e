import { formatFloat } from '../../telemetry/lineProtocol.js';
import { SLOTS } from './names.js';

/**
 * One record's point before it is a row: what the general path (`writeRecord`, from a validated
 * record) and the receiver's scanner (src/ingest/scan/, from the push's bytes) both fill, field by
 * field in the record's order, and the one row writer (`writeRow`, points.ts) writes. A value's text is
 * a range of bytes, in the push itself (`src`: the scanner copies a number's own text when it is the
 * text line protocol is given) or in the draft's `scratch` (any text `formatFloat` wrote).
 * Reused record after record: writing is synchronous.
 */
export class RowDraft {
  /** The bytes ranges point into when not in scratch: the push being scanned (empty on the general path). */
  src: Uint8Array = EMPTY;
  scratch = Buffer.allocUnsafe(4096);
  scratchLen = 0;
  /** Fields in the record's order. */
  n = 0;
  /** The name's slot (names.ts): its wire id when below the dictionary's size. */
  readonly slot = new Int32Array(SLOTS);
  readonly value = new Float64Array(SLOTS);
  readonly from = new Int32Array(SLOTS);
  readonly to = new Int32Array(SLOTS);
  /** 1 when the value's text is in scratch. */
  readonly inScratch = new Uint8Array(SLOTS);
  /** `seen[slot] === stamp`: the record has that name, at position `at[slot]`. */
  private readonly seen = new Int32Array(SLOTS);
  readonly at = new Int32Array(SLOTS);
  private stamp = 0;
  /** The timestamp's text, and the tag's (the plate's UTF-8 bytes, unescaped). */
  timeFrom = 0;
  timeTo = 0;
  timeInScratch = false;
  tagFrom = 0;
  tagTo = 0;
  tagInScratch = false;

  /** A new record, whose ranges point into `src` or scratch. */
  begin(src: Uint8Array): void {
    this.src = src;
    this.n = 0;
    this.scratchLen = 0;
    if (++this.stamp === STAMP_MAX) {
      this.seen.fill(0);
      this.stamp = 1;
    }
  }

  /** Whether the record has the name in `slot`. */
  has(slot: number): boolean {
    return this.seen[slot] === this.stamp;
  }

  /** The value of the name in `slot`, or undefined. */
  valueOf(slot: number): number | undefined {
    return this.seen[slot] === this.stamp ? this.value[this.at[slot]!] : undefined;
  }

  /** Marks `slot` as the record's field `k`; false when the record already has it (a duplicate key). */
  mark(slot: number, k: number): boolean {
    if (this.seen[slot] === this.stamp) return false;
    this.seen[slot] = this.stamp;
    this.at[slot] = k;
    return true;
  }

  /** A field whose text `formatFloat` writes into scratch (the general path; the scanner for a value it cannot copy). */
  push(slot: number, value: number): void {
    const k = this.n++;
    this.mark(slot, k);
    this.slot[k] = slot;
    this.value[k] = value;
    this.from[k] = this.scratchLen;
    this.to[k] = this.text(formatFloat(value));
    this.inScratch[k] = 1;
  }

  /** Writes ASCII `s` into scratch; returns its end. */
  text(s: string): number {
    const need = this.scratchLen + s.length;
    if (need > this.scratch.length) {
      const next = Buffer.allocUnsafe(Math.max(2 * this.scratch.length, need));
      this.scratch.copy(next, 0, 0, this.scratchLen);
      this.scratch = next;
    }
    this.scratchLen += this.scratch.write(s, this.scratchLen, 'latin1');
    return this.scratchLen;
  }

  /** The record's time as text in scratch (the general path; a stamped or respelled time). */
  timeText(time: number): void {
    this.timeFrom = this.scratchLen;
    this.timeTo = this.text(String(time));
    this.timeInScratch = true;
  }

  /** The plate, as UTF-8 bytes in scratch (the general path). */
  plate(vehicleno: string): void {
    const need = this.scratchLen + 3 * vehicleno.length;
    if (need > this.scratch.length) {
      const next = Buffer.allocUnsafe(Math.max(2 * this.scratch.length, need));
      this.scratch.copy(next, 0, 0, this.scratchLen);
      this.scratch = next;
    }
    this.tagFrom = this.scratchLen;
    this.scratchLen += this.scratch.write(vehicleno, this.scratchLen, 'utf8');
    this.tagTo = this.scratchLen;
    this.tagInScratch = true;
  }

  /** Leaves field `k` out of the point (a flatten rule's unused sensor): the writer skips a negative slot. */
  drop(k: number): void {
    this.slot[k] = -1;
  }
}

const EMPTY = new Uint8Array(0);
const STAMP_MAX = 2 ** 30;
