import { pickedValues, type FieldPick, type WrittenRecord, type TelemetryRecord } from '../../telemetry/record.js';
import { FIELD_DICTIONARY, TYPES, typeOf, typeOfRow, VEHICLE_TAG, WIRE_ID, type RecordTypeInfo } from '../../telemetry/fields.js';
import { formatFloat, TAG_ESCAPED } from '../../telemetry/lineProtocol.js';
import { decimalAt } from '../../telemetry/numbers.js';
import { flattenDraft, remembered, type FlattenOptions } from './flatten.js';
import { RowDraft } from './draft.js';
import { DICTIONARY_SIZE, NAMES } from './names.js';
import { PACK_MEASUREMENT, PACK_NAMES, PACK_NAMES_BY_MASK, PackHealth } from './packHealth.js';
import { Lines } from '../write/lines.js';

/**
 * Points as a job carries them (payload v3, queue/codec.ts): each record already flattened by the
 * receiver, its field values as the text line protocol writes, so a worker copies bytes into its
 * request and never decodes a record. One row a line; the rows' layout is src/formats/README.md ("v3's
 * rows").
 *
 * The order of fields in a line is the dictionary's, not the sender's: InfluxDB stores fields by name.
 * `writeRow` writes the rows, from a record's draft (draft.ts) that the general path (`writeRecord`) and
 * the receiver's scanner (src/ingest/scan/) fill; `readRows` reads them.
 */

export const MASK_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';
const MASK_CODE = new Uint8Array(MASK_DIGITS.length);
const MASK_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < MASK_DIGITS.length; i++) {
  MASK_CODE[i] = MASK_DIGITS.charCodeAt(i);
  MASK_VALUE[MASK_DIGITS.charCodeAt(i)] = i;
}

const NL = 10, SPACE = 32, COMMA = 44, COLON = 58, SEMI = 59, EQUALS = 61, BACKSLASH = 92;
/** The row of a record's pack-health point; record types have other letters. */
export const ROW_PACK = 112; // p
if (typeOfRow(ROW_PACK) !== undefined) throw new Error('a record type may not have the row letter p (pack health)');

/** The rows of some records, as bytes, with where each record's rows end. */
export class PointRows {
  buf: Buffer;
  len = 0;
  /** Offset after each record's rows (its point and its can_pack point). */
  readonly ends: number[] = [];
  /** Fields left out of each record as unused temperature sensors. */
  readonly dropped: number[] = [];

  constructor(capacity = 4096) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  get records(): number {
    return this.ends.length;
  }

  /** Room for `n` more bytes. */
  reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  byte(c: number): void {
    this.reserve(1);
    this.buf[this.len++] = c;
  }

  /** A string of one-byte characters (numbers, names, ASCII tags). */
  latin1(s: string): void {
    this.reserve(s.length);
    this.len += this.buf.write(s, this.len, 'latin1');
  }

  endRecord(dropped: number): void {
    this.ends.push(this.len);
    this.dropped.push(dropped);
  }

  /** Bytes from the start of record `from` to the end of record `to - 1`. */
  span(from: number, to: number): [number, number] {
    return [from === 0 ? 0 : this.ends[from - 1]!, to === 0 ? 0 : this.ends[to - 1]!];
  }
}

export const MASK_GROUPS = Math.ceil(FIELD_DICTIONARY.length / 6);

/** A mask's characters into `buf` at `w` (room for `groups` bytes), trailing zero groups left out; returns the end. */
export function putMask(buf: Uint8Array, w: number, bits: ArrayLike<number>, groups: number): number {
  let last = groups - 1;
  while (last >= 0 && bits[last] === 0) last--;
  for (let g = 0; g <= last; g++) buf[w++] = MASK_CODE[bits[g]!]!;
  return w;
}

// Reused: writing a record is synchronous.
const bits = new Uint8Array(MASK_GROUPS);
const pack = new PackHealth();
const packValues = new Float64Array(PACK_NAMES.length);
const draft = new RowDraft();

/**
 * A valid, judged record's rows (the general path): its draft, filled from the record, then the
 * writer both paths share.
 */
export function writeRecord(rows: PointRows, r: TelemetryRecord, opts: FlattenOptions): void {
  const d = draft;
  d.begin(EMPTY);
  NAMES.beginRecord();
  const fields = r.fields;
  for (const name in fields) d.push(NAMES.slotOf(name), fields[name]!);
  d.timeText(r.time);
  d.plate(r.vehicleno);
  finishRecord(rows, typeOf(r.type), d, opts);
}

/** A record's rows from its draft: the type's flatten rule, its point's row, its pack-health row. */
export function finishRecord(rows: PointRows, type: RecordTypeInfo, d: RowDraft, opts: FlattenOptions): void {
  const dropped = flattenDraft(type, d, opts, pack);
  writeRow(rows, type.row, d, opts.dictionary ?? DICTIONARY_SIZE);
  writePack(rows, pack);
  rows.endRecord(dropped);
}

/** Position in the draft of each dictionary value, by wire id (for the values' dictionary order). */
const atWire = new Int32Array(DICTIONARY_SIZE);

/**
 * A point's row from its draft: slots below `dictionary` by the mask, in wire-id order; the others by
 * name, in the record's order. Its exact length is reserved first, and the bytes written are held to it.
 */
export function writeRow(rows: PointRows, kind: number, d: RowDraft, dictionary: number): void {
  const src = d.src;
  const scratch = d.scratch;
  const limit = Math.min(dictionary, DICTIONARY_SIZE);
  bits.fill(0);
  let size = 1 + (d.timeTo - d.timeFrom) + 1 + 1 + 1 + 1; // kind, time, space, colon, space, newline
  let values = 0;
  for (let k = 0; k < d.n; k++) {
    const s = d.slot[k]!;
    if (s < 0) continue;
    const len = d.to[k]! - d.from[k]!;
    if (s < limit) {
      bits[(s / 6) | 0]! |= 1 << s % 6;
      atWire[s] = k;
      size += len + (values++ > 0 ? 1 : 0);
    } else size += 1 + NAMES.bytes[s]!.length + 1 + len; // ; or , then name=value
  }
  let groups = MASK_GROUPS;
  while (groups > 0 && bits[groups - 1] === 0) groups--;
  size += groups;
  const tag = d.tagInScratch ? scratch : src;
  for (let i = d.tagFrom; i < d.tagTo; i++) {
    const c = tag[i]!;
    size += c < 128 && TAG_ESCAPED[c] === 1 ? 2 : 1;
  }
  rows.reserve(size);
  const buf = rows.buf;
  const start = rows.len;
  let w = start;
  buf[w++] = kind;
  w = copy(d.timeInScratch ? scratch : src, d.timeFrom, d.timeTo, buf, w);
  buf[w++] = SPACE;
  w = putMask(buf, w, bits, groups);
  buf[w++] = COLON;
  let first = true;
  for (let g = 0; g < groups; g++) {
    const m = bits[g]!;
    if (m === 0) continue;
    for (let b = 0; b < 6; b++) {
      if ((m & (1 << b)) === 0) continue;
      const k = atWire[g * 6 + b]!;
      if (!first) buf[w++] = COMMA;
      first = false;
      w = copy(d.inScratch[k] === 1 ? scratch : src, d.from[k]!, d.to[k]!, buf, w);
    }
  }
  let extras = 0;
  for (let k = 0; k < d.n; k++) {
    const s = d.slot[k]!;
    if (s < limit) continue; // by the mask, or dropped (negative)
    buf[w++] = extras++ === 0 ? SEMI : COMMA;
    const name = NAMES.bytes[s]!;
    w = copy(name, 0, name.length, buf, w);
    buf[w++] = EQUALS;
    w = copy(d.inScratch[k] === 1 ? scratch : src, d.from[k]!, d.to[k]!, buf, w);
  }
  buf[w++] = SPACE;
  for (let i = d.tagFrom; i < d.tagTo; i++) {
    const c = tag[i]!;
    if (c < 128 && TAG_ESCAPED[c] === 1) buf[w++] = BACKSLASH;
    buf[w++] = c;
  }
  buf[w++] = NL;
  // A write past a Buffer's end is dropped silently: the length reserved is the length written, or this is a bug.
  if (w !== start + size) throw new Error(`row writer: wrote ${w - start} bytes of a row reserved at ${size}`);
  rows.len = w;
}

function copy(from: Uint8Array, a: number, b: number, to: Uint8Array, w: number): number {
  if (b - a < 32) {
    for (let i = a; i < b; i++) to[w++] = from[i]!;
    return w;
  }
  to.set(from.subarray(a, b), w);
  return w + (b - a);
}

/** The pack fields a `p` row's mask names (PACK_NAMES_BY_MASK); the rest follow `;` by name. */
const PACK_MASKED = (1 << PACK_NAMES_BY_MASK) - 1;

/** The `p` row of a record's pack health (none when the record had none of its inputs). */
export function writePack(rows: PointRows, acc: PackHealth): void {
  const mask = acc.values(packValues);
  if (mask === 0) return;
  rows.byte(ROW_PACK);
  for (let rest = mask & PACK_MASKED; rest !== 0; rest >>= 6) rows.byte(MASK_CODE[rest & 63]!);
  rows.byte(COLON);
  let first = true;
  for (let i = 0; i < PACK_NAMES_BY_MASK; i++) {
    if ((mask & (1 << i)) === 0) continue;
    if (!first) rows.byte(COMMA);
    first = false;
    rows.latin1(formatFloat(packValues[i]!));
  }
  first = true;
  for (let i = PACK_NAMES_BY_MASK; i < PACK_NAMES.length; i++) {
    if ((mask & (1 << i)) === 0) continue;
    rows.byte(first ? SEMI : COMMA);
    first = false;
    rows.latin1(PACK_NAMES[i]!);
    rows.byte(EQUALS);
    rows.latin1(formatFloat(packValues[i]!));
  }
  rows.byte(NL);
}

/** Records as rows (the dead letter's replay, tests). */
export function rowsOf(records: readonly TelemetryRecord[], opts: FlattenOptions): PointRows {
  const rows = new PointRows();
  for (const r of records) writeRecord(rows, r, opts);
  return rows;
}

// ---- reading -------------------------------------------------------------------------------

const KEY_BYTES = FIELD_DICTIONARY.map((n) => Buffer.from(`${n}=`, 'latin1'));
const PACK_KEY_BYTES = PACK_NAMES.map((n) => Buffer.from(`${n}=`, 'latin1'));
/** By row letter: the line's start, and the wire ids of its type's position (-1: none) for the fleet's written records. */
const MEASUREMENT_BYTES: Buffer[] = [];
const POSITION: Array<[number, number]> = [];
for (const t of TYPES) {
  MEASUREMENT_BYTES[t.row] = Buffer.from(`${t.spec.measurement},${VEHICLE_TAG}=`, 'latin1');
  const at = t.spec.position;
  POSITION[t.row] = at ? [WIRE_ID.get(at.lat) ?? -1, WIRE_ID.get(at.lng) ?? -1] : [-1, -1];
}
MEASUREMENT_BYTES[ROW_PACK] = Buffer.from(`${PACK_MEASUREMENT},${VEHICLE_TAG}=`, 'latin1');

/** What a worker writes from a job's rows, and what it tells the fleet. */
export interface ReadPoints {
  lines: Lines;
  /** `sources[i]`: the record `lines[i]` was made from. */
  sources: number[];
  /** Points by measurement. */
  measurements: string[];
  records: number;
  emptyRecords: number;
  writtenRecords: WrittenRecord[];
}

/** Where one row's parts are, found by `parseRow`. */
interface Row {
  kind: number;
  timeFrom: number;
  timeTo: number;
  maskFrom: number;
  valuesFrom: number;
  /** End of the dictionary values (`;` or the space before the tag). */
  valuesTo: number;
  /** After `;`, to the space before the tag; empty when there are none. */
  extrasFrom: number;
  extrasTo: number;
  tagFrom: number;
  tagTo: number;
  /** After the row's newline. */
  next: number;
}

const row: Row = { kind: 0, timeFrom: 0, timeTo: 0, maskFrom: 0, valuesFrom: 0, valuesTo: 0, extrasFrom: 0, extrasTo: 0, tagFrom: 0, tagTo: 0, next: 0 };

function malformed(at: number): Error {
  return new Error(`job payload v3: malformed row at byte ${at}`);
}

function parseRow(b: Uint8Array, p: number, end: number): Row {
  const kind = b[p]!;
  row.kind = kind;
  let i = p + 1;
  if (kind === ROW_PACK) {
    row.timeFrom = row.timeTo = i;
  } else if (typeOfRow(kind) !== undefined) {
    row.timeFrom = i;
    while (i < end && b[i] !== SPACE) i++;
    row.timeTo = i++;
  } else throw malformed(p);
  row.maskFrom = i;
  while (i < end && b[i] !== COLON) i++;
  if (i >= end) throw malformed(p);
  row.valuesFrom = ++i;
  while (i < end && b[i] !== SEMI && b[i] !== SPACE && b[i] !== NL) i++;
  row.valuesTo = i;
  if (b[i] === SEMI) {
    row.extrasFrom = ++i;
    while (i < end && b[i] !== SPACE && b[i] !== NL) i++;
  } else row.extrasFrom = i;
  row.extrasTo = i;
  if (kind === ROW_PACK) {
    row.tagFrom = row.tagTo = i;
  } else {
    if (b[i] !== SPACE) throw malformed(p);
    row.tagFrom = ++i;
    while (i < end && b[i] !== NL) i++;
    row.tagTo = i;
  }
  if (b[i] !== NL) throw malformed(p);
  row.next = i + 1;
  return row;
}

/** The lines of the job being read are built here, as the request body's bytes. */
let scratch = Buffer.allocUnsafe(16_384);
let at = 0;
function put(src: Uint8Array, from: number, to: number, room = 0): void {
  const n = to - from;
  if (at + n + room > scratch.length) {
    const next = Buffer.allocUnsafe(Math.max(scratch.length * 2, at + n + room));
    scratch.copy(next, 0, 0, at);
    scratch = next;
  }
  if (n < 32) for (let i = from; i < to; i++) scratch[at++] = src[i]!;
  else {
    scratch.set(src.subarray(from, to), at);
    at += n;
  }
}
function putByte(c: number): void {
  if (at + 1 > scratch.length) put(new Uint8Array([c]), 0, 1);
  else scratch[at++] = c;
}

/** The fields of a row, `name=value,…`, put into the line; calls `each(i, from, to)` per dictionary value. */
function putFields(b: Uint8Array, r: Row, keys: readonly Buffer[], each?: (i: number, from: number, to: number) => void): number {
  // Room for the longest line this row can make: its values and extras, and every name of the dictionary.
  const room = r.extrasTo - r.valuesFrom + KEYS_LENGTH + 1;
  if (at + room > scratch.length) put(EMPTY, 0, 0, room);
  const out = scratch;
  let w = at;
  let v = r.valuesFrom;
  let count = 0;
  for (let m = r.maskFrom; b[m] !== COLON; m++) {
    const group = MASK_VALUE[b[m]!]!;
    if (group < 0) throw malformed(m);
    if (group === 0) continue;
    for (let k = 0; k < 6; k++) {
      if ((group & (1 << k)) === 0) continue;
      const i = (m - r.maskFrom) * 6 + k;
      const key = keys[i];
      if (key === undefined || v >= r.valuesTo + 1) throw malformed(m);
      if (count++ > 0) out[w++] = COMMA;
      for (let j = 0; j < key.length; j++) out[w++] = key[j]!;
      let e = v;
      for (let c = b[e]; e < r.valuesTo && c !== COMMA; c = b[++e]) out[w++] = c!;
      each?.(i, v, e);
      v = e + 1;
    }
  }
  if (v < r.valuesTo) throw malformed(v);
  at = w;
  if (r.extrasTo > r.extrasFrom) {
    if (count++ > 0) putByte(COMMA);
    put(b, r.extrasFrom, r.extrasTo);
  }
  return count;
}
const KEYS_LENGTH = [...KEY_BYTES, ...PACK_KEY_BYTES].reduce((n, k) => n + k.length + 1, 0);
const EMPTY = new Uint8Array(0);

let LAT = -1;
let LNG = -1;
const NO_POSITION: [number, number] = [-1, -1];

/** Plates by their escaped tag text, for the fleet's written records. */
const platesByTag = new Map<string, string>();

/** escapeTag undone: validation refuses the plates where this would be ambiguous (unrepresentableTag). */
export function unescapeTag(tag: string): string {
  return tag.includes('\\') ? tag.replace(/\\([,= ])/g, '$1') : tag;
}

/**
 * Every line of a job's rows, by copying bytes; with the records' written records for the fleet, and in
 * them the values of the fields `pick` names (what the vehicle events read).
 */
export function readRows(b: Buffer, pick?: FieldPick): ReadPoints {
  const out: ReadPoints = { lines: Lines.EMPTY, sources: [], measurements: [], records: 0, emptyRecords: 0, writtenRecords: [] };
  // A line is about four times its row (the names are spelled out); put() grows it when not.
  scratch = Buffer.allocUnsafe(Math.max(16_384, 4 * b.length));
  at = 0;
  const ends: number[] = [];
  const end = b.length;
  let p = 0;
  let record = -1;
  let tagFrom = 0, tagTo = 0, timeFrom = 0, timeTo = 0;
  let lat: [number, number] | undefined, lng: [number, number] | undefined;
  // Picked values: one array for the job, a record's slots from `base` (grown as records come).
  const slots = pick?.slots;
  const size = pick?.names.length ?? 0;
  let values = pick === undefined ? undefined : pickedValues(pick, 64);
  let base = 0;
  const position = (i: number, from: number, to: number) => {
    if (i === LAT) lat = [from, to];
    else if (i === LNG) lng = [from, to];
    if (slots !== undefined && slots[i]! > 0) values![base + slots[i]! - 1] = decimalAt(b, from, to);
  };
  while (p < end) {
    const r = parseRow(b, p, end);
    if (r.kind !== ROW_PACK) {
      record++;
      tagFrom = r.tagFrom;
      tagTo = r.tagTo;
      timeFrom = r.timeFrom;
      timeTo = r.timeTo;
    } else if (record < 0) throw malformed(p);
    const lineStart = at;
    const m = MEASUREMENT_BYTES[r.kind]!;
    put(m, 0, m.length);
    put(b, tagFrom, tagTo);
    putByte(SPACE);
    lat = lng = undefined;
    const type = typeOfRow(r.kind);
    if (values !== undefined && type !== undefined && base + size > values.length) {
      const more = pickedValues(pick!, (values.length / size) * 2);
      more.set(values);
      values = more;
    }
    const pos = POSITION[r.kind];
    const positioned = pos !== undefined && pos[0] >= 0;
    [LAT, LNG] = positioned ? pos : NO_POSITION;
    const fields = putFields(b, r, r.kind === ROW_PACK ? PACK_KEY_BYTES : KEY_BYTES, positioned || (values !== undefined && type !== undefined) ? position : undefined);
    if (type !== undefined) {
      const tag = b.toString('utf8', tagFrom, tagTo);
      const s: WrittenRecord = { vehicleno: remembered(platesByTag, tag, unescapeTag), type: type.name, time: Number(b.toString('latin1', timeFrom, timeTo)) };
      if (lat && lng) {
        s.lat = Number(b.toString('latin1', lat[0], lat[1]));
        s.lng = Number(b.toString('latin1', lng[0], lng[1]));
      }
      if (values !== undefined) {
        s.at = base;
        base += size;
      }
      out.writtenRecords.push(s);
    }
    if (fields === 0) {
      if (r.kind !== ROW_PACK) out.emptyRecords++;
      at = lineStart;
    } else {
      putByte(SPACE);
      put(b, timeFrom, timeTo);
      putByte(NL);
      ends.push(at);
      out.sources.push(record);
      out.measurements.push(type !== undefined ? type.spec.measurement : PACK_MEASUREMENT);
    }
    p = r.next;
  }
  out.records = record + 1;
  out.lines = Lines.from(scratch.subarray(0, at), ends);
  // Every written record's values: the array they share, final once no record will grow it.
  if (values !== undefined) for (const s of out.writtenRecords) s.values = values;
  return out;
}

/** The records some rows hold (tests, and what a receiver's sink is handed). */
export function recordsOf(rows: PointRows): TelemetryRecord[] {
  return recordsOfRows(rows.buf.subarray(0, rows.len));
}

/** The records of a job's rows, as pushed fields (the dead letter shows and replays them; a refused point is quarantined as its record). */
export function recordsOfRows(b: Buffer): TelemetryRecord[] {
  const out: TelemetryRecord[] = [];
  const end = b.length;
  let p = 0;
  while (p < end) {
    const r = parseRow(b, p, end);
    p = r.next;
    if (r.kind === ROW_PACK) continue;
    const fields = Object.create(null) as Record<string, number>;
    putFieldsInto(b, r, fields);
    const type = typeOfRow(r.kind)!.name;
    const tag = b.toString('utf8', r.tagFrom, r.tagTo);
    out.push({ vehicleno: unescapeTag(tag), type, time: Number(b.toString('latin1', r.timeFrom, r.timeTo)), fields });
  }
  return out;
}

function putFieldsInto(b: Buffer, r: Row, fields: Record<string, number>): void {
  let v = r.valuesFrom;
  for (let m = r.maskFrom; b[m] !== COLON; m++) {
    const group = MASK_VALUE[b[m]!]!;
    for (let k = 0; k < 6; k++) {
      if ((group & (1 << k)) === 0) continue;
      let e = v;
      while (e < r.valuesTo && b[e] !== COMMA) e++;
      fields[FIELD_DICTIONARY[(m - r.maskFrom) * 6 + k]!] = Number(b.toString('latin1', v, e));
      v = e + 1;
    }
  }
  if (r.extrasTo > r.extrasFrom) {
    for (const pair of b.toString('latin1', r.extrasFrom, r.extrasTo).split(',')) {
      const eq = pair.indexOf('=');
      fields[pair.slice(0, eq)] = Number(pair.slice(eq + 1));
    }
  }
}
