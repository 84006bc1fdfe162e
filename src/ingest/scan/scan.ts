import { isUtf8 } from 'node:buffer';
import { TIME, TYPES, WIRE_ID, type RecordTypeInfo } from '../../telemetry/fields.js';
import { FIELD_NAME_MAX, fieldNameByte, formatFloat } from '../../telemetry/lineProtocol.js';
import { plainPlate, plainPlateByte } from '../../telemetry/plate.js';
import type { PushShape } from '../../telemetry/push.js';
import { MAX_PARAMETERS } from '../../telemetry/record.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { RowDraft } from '../flatten/draft.js';
import { FNV_OFFSET, FNV_PRIME, NAMES } from '../flatten/names.js';
import { finishRecord, type PointRows } from '../flatten/points.js';
import { isNoFix, type Plausibility } from '../plausibility/judge.js';
import { withinRule, type RangeRule } from '../plausibility/rules.js';
import { partitionOf } from '../queue/keys.js';
import { enoughParameters, recordTime, withinBounds } from '../validate/record.js';

/**
 * The receiver's one pass over a push's bytes. For each record that is plainly valid and plausible
 * (three keys; a plate of printable ASCII; every value a JSON number or null; every field name a
 * plain one, of the schema or not), it reads the record into a draft (`readRecord`, the byte state
 * machine), checks it by the rules the general path calls (`plainChecks`: validate/ and plausibility/),
 * and writes its rows by the writer the general path calls (`finishRecord`, flatten/), copying each
 * value's own text when that is the text line protocol would be given. No string or object is made
 * for such a record. Any other record, valid or not, is parsed on its own (`JSON.parse` of its bytes)
 * and handed to the general path (`item`), in its place in the push; a body that is not UTF-8, not
 * JSON, or not a push of the route's shape is left whole to the general path, which words the answer.
 * `scan.fuzz.test.ts` holds the two paths to the same rows, answers and quarantine on random and
 * hostile pushes.
 */

/** Where the scanner puts what it reads; the receiver's RecordSorter. */
export interface ScanSink {
  readonly rows: readonly PointRows[];
  /** A record the scanner validated, judged and wrote: record `i`, of `plate` when `wantsPlates`. */
  stored(type: RecordTypeInfo, time: number, i?: number, plate?: string): void;
  /** Whether `stored` is to be told each record's plate (the vehicles' admission, fleet/admission.ts). */
  readonly wantsPlates?: boolean;
  /** Record `i`, parsed, for the general path, with its own text. */
  item(i: number, item: unknown, text: string): void;
}

export interface ScanOptions {
  plausibility?: Plausibility | undefined;
  flatten: FlattenOptions;
  receivedAt: number;
}

export interface Scanned {
  bulk: boolean;
  /** Records in the push. */
  count: number;
}

const QUOTE = 34, COMMA = 44, COLON = 58, LBRACE = 123, RBRACE = 125, LBRACKET = 91, RBRACKET = 93;
const BACKSLASH = 92, MINUS = 45, PLUS = 43, DOT = 46, ZERO = 48, NINE = 57, SPACE = 32;
const LOWER_E = 101, UPPER_E = 69;

/** Returned by the record reader when a record is not plainly valid: the general path decides. */
const NOT_PLAIN = -2;
/** Not JSON: the whole body goes to the general path. */
const NOT_JSON = -1;

const isWs = (c: number | undefined): boolean => c === 32 || c === 10 || c === 13 || c === 9;

function ws(b: Uint8Array, p: number): number {
  while (isWs(b[p])) p++;
  return p;
}

const KEY_VEHICLENO = Buffer.from('vehicleno');
const KEY_TYPE = Buffer.from('type');
const KEY_DATA = Buffer.from('data');
const KEY_BULK = Buffer.from('bulkData');
const TYPE_BYTES = TYPES.map((t) => Buffer.from(t.name, 'latin1'));
const TIME_SLOT = NAMES.slotOf(TIME.name);
/** Per type, the slots of its position's fields (-1: it has none). */
const POSITION = TYPES.map((t) => (t.spec.position ? [WIRE_ID.get(t.spec.position.lat)!, WIRE_ID.get(t.spec.position.lng)!] : [-1, -1]));

function bytesEqual(b: Uint8Array, from: number, to: number, want: Uint8Array): boolean {
  if (to - from !== want.length) return false;
  for (let k = 0; k < want.length; k++) if (b[from + k] !== want[k]) return false;
  return true;
}

// ---- one record's state: reused, the scan is synchronous --------------------------------------

const draft = new RowDraft();
let recordType: RecordTypeInfo | undefined;
/** The record's `time`: absent, null, or a number (its value, where its text is, and whether that text is String's). */
const ABSENT = 0, NULL = 1, NUMBER = 2;
let timeState = ABSENT;
let timeValue = 0;
let timePlain = false;
let timeFrom = 0;
let timeTo = 0;

/**
 * A number's value; whether its text is String's (`numPlain`, which a timestamp needs); and whether
 * its text may stand for the value in line protocol (`numSame`): a plain decimal of up to 17
 * significant digits, which every reader parses to the very double `Number` gives (correctly rounded,
 * as JSON and line protocol parsers are), so a float32 reading sent at full precision is copied rather
 * than printed again (String of such a double is most of its cost).
 */
let numValue = 0;
let numPlain = false;
let numSame = false;

/**
 * The JSON number at `p`: its end, or NOT_JSON. Sets numValue, numPlain and numSame. Up to 15
 * significant digits without an exponent, the value is the digits over a power of ten (one correctly
 * rounded division of exact doubles, so the double `Number` would give), and the text is `String`'s own
 * when it has no redundant zero and is not -0 or below 1e-6 (where `String` switches to exponents).
 * With 16 or 17 digits the value is `Number`'s, and the text is kept on the same terms.
 */
function readNumber(b: Buffer, p: number): number {
  const start = p;
  let neg = false;
  if (b[p] === MINUS) {
    neg = true;
    p++;
  }
  let c = b[p];
  if (c === undefined || c < ZERO || c > NINE) return NOT_JSON;
  let mantissa = 0;
  let sig = 0;
  let frac = 0;
  let simple = true;
  if (c === ZERO) {
    p++;
    c = b[p];
    if (c !== undefined && c >= ZERO && c <= NINE) return NOT_JSON;
  } else {
    while (c !== undefined && c >= ZERO && c <= NINE) {
      mantissa = mantissa * 10 + (c - ZERO);
      sig++;
      c = b[++p];
    }
  }
  if (c === DOT) {
    c = b[++p];
    if (c === undefined || c < ZERO || c > NINE) return NOT_JSON;
    while (c !== undefined && c >= ZERO && c <= NINE) {
      if (sig > 0 || c !== ZERO) {
        mantissa = mantissa * 10 + (c - ZERO);
        sig++;
      }
      frac++;
      c = b[++p];
    }
    // A trailing zero is not String's text.
    if (b[p - 1] === ZERO) simple = false;
  }
  if (c === LOWER_E || c === UPPER_E) {
    simple = false;
    c = b[++p];
    if (c === PLUS || c === MINUS) c = b[++p];
    if (c === undefined || c < ZERO || c > NINE) return NOT_JSON;
    while (c !== undefined && c >= ZERO && c <= NINE) c = b[++p];
  }
  if (simple && sig <= 15 && frac <= 22) {
    const v = mantissa / POW10[frac]!;
    numValue = neg ? -v : v;
    numPlain = numSame = !(v === 0 && neg) && (v === 0 || v >= 1e-6);
  } else {
    numValue = Number(b.toString('latin1', start, p));
    numPlain = false;
    // 16 or 17 digits (never 0 or -0): a reading at full precision.
    numSame = simple && sig <= 17 && frac <= 22 && Math.abs(numValue) >= 1e-6;
  }
  return p;
}
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/** End of the JSON string at `p` (a quote), or NOT_JSON. */
function skipString(b: Uint8Array, p: number): number {
  p++;
  for (;;) {
    const c = b[p];
    if (c === undefined || c < 0x20) return NOT_JSON;
    if (c === QUOTE) return p + 1;
    if (c === BACKSLASH) {
      const e = b[p + 1];
      if (e === 0x75) {
        for (let k = 2; k < 6; k++) if (!isHex(b[p + k])) return NOT_JSON;
        p += 6;
        continue;
      }
      if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) return NOT_JSON;
      p += 2;
      continue;
    }
    p++;
  }
}
const isHex = (c: number | undefined): boolean => c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));

const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

/** End of the JSON value at `p` (any depth, without recursion), or NOT_JSON. */
export function skipValue(b: Buffer, p: number): number {
  const stack: boolean[] = []; // true: object
  for (;;) {
    p = ws(b, p);
    const c = b[p];
    if (c === LBRACE || c === LBRACKET) {
      const object = c === LBRACE;
      p = ws(b, p + 1);
      if (b[p] === (object ? RBRACE : RBRACKET)) p++;
      else {
        stack.push(object);
        if (object && (p = member(b, p)) < 0) return NOT_JSON;
        continue;
      }
    } else if (c === QUOTE) {
      if ((p = skipString(b, p)) < 0) return NOT_JSON;
    } else if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) {
      if ((p = readNumber(b, p)) < 0) return NOT_JSON;
    } else {
      const lit = LITERALS.find((l) => l[0] === c);
      if (!lit || !bytesEqual(b, p, p + lit.length, lit)) return NOT_JSON;
      p += lit.length;
    }
    // After a value: close what it ends, or go on to the next.
    for (;;) {
      if (stack.length === 0) return p;
      p = ws(b, p);
      const object = stack[stack.length - 1]!;
      if (b[p] === COMMA) {
        p = ws(b, p + 1);
        if (object && (p = member(b, p)) < 0) return NOT_JSON;
        break;
      }
      if (b[p] !== (object ? RBRACE : RBRACKET)) return NOT_JSON;
      stack.pop();
      p++;
    }
  }
}

/** `"key" :` at `p`; returns where its value starts, or NOT_JSON. */
function member(b: Uint8Array, p: number): number {
  if (b[p] !== QUOTE || (p = skipString(b, p)) < 0) return NOT_JSON;
  p = ws(b, p);
  return b[p] === COLON ? p + 1 : NOT_JSON;
}

/** `nextMember` found the object's closing brace, at `closedAt`. */
const CLOSED = -4;
let closedAt = 0;

/** After an object's member at `p`: where the next member starts, CLOSED, or NOT_JSON. */
function nextMember(b: Buffer, p: number): number {
  p = ws(b, p);
  if (b[p] === COMMA) return ws(b, p + 1);
  if (b[p] !== RBRACE) return NOT_JSON;
  closedAt = p;
  return CLOSED;
}

// ---- one record --------------------------------------------------------------------------------

/** The range rules by slot, per type, of one Plausibility and one generation of the name table. */
let rulesFor: Plausibility | undefined;
let rulesGeneration = -1;
let rules: Array<Array<RangeRule | null | undefined>> = [];

function ruleOf(p: Plausibility, type: RecordTypeInfo, slot: number): RangeRule | null {
  if (rulesFor !== p || rulesGeneration !== NAMES.generation) {
    rulesFor = p;
    rulesGeneration = NAMES.generation;
    rules = TYPES.map(() => []);
  }
  const byType = rules[type.index]!;
  let r = byType[slot];
  if (r === undefined) {
    r = p.ruleOf(type.name, NAMES.names[slot]!);
    if (!r?.recheck) byType[slot] = r;
  }
  return r;
}

/**
 * Reads record `at` (an object) into the draft and the record's state: the byte state machine. Returns
 * its end; NOT_PLAIN when the general path must judge it; NOT_JSON when the bytes are not JSON.
 */
function readRecord(b: Buffer, at: number): number {
  const d = draft;
  d.begin(b);
  NAMES.beginRecord();
  recordType = undefined;
  timeState = ABSENT;
  let p = ws(b, at + 1);
  let plate = false;
  let dataSeen = false;
  if (b[p] === RBRACE) return NOT_PLAIN;
  for (;;) {
    if (b[p] !== QUOTE) return NOT_JSON;
    const keyFrom = p + 1;
    let q = keyFrom;
    while (b[q] !== QUOTE && b[q] !== BACKSLASH && b[q] !== undefined) q++;
    if (b[q] !== QUOTE) return NOT_PLAIN;
    const keyTo = q;
    p = ws(b, q + 1);
    if (b[p] !== COLON) return NOT_JSON;
    p = ws(b, p + 1);
    if (bytesEqual(b, keyFrom, keyTo, KEY_VEHICLENO)) {
      if (plate || b[p] !== QUOTE) return NOT_PLAIN;
      plate = true;
      d.tagFrom = q = p + 1;
      let blank = true;
      for (let c = b[q]; c !== QUOTE; c = b[++q]) {
        // Escapes, control characters, anything beyond ASCII: the general path.
        if (c === undefined || !plainPlateByte(c)) return NOT_PLAIN;
        if (c !== SPACE) blank = false;
      }
      d.tagTo = q;
      d.tagInScratch = false;
      if (!plainPlate(q - d.tagFrom, blank)) return NOT_PLAIN;
      p = q + 1;
    } else if (bytesEqual(b, keyFrom, keyTo, KEY_TYPE)) {
      if (recordType !== undefined || b[p] !== QUOTE) return NOT_PLAIN;
      q = p + 1;
      while (b[q] !== QUOTE && b[q] !== BACKSLASH && b[q] !== undefined) q++;
      if (b[q] !== QUOTE) return NOT_PLAIN;
      for (let t = 0; t < TYPE_BYTES.length; t++) if (bytesEqual(b, p + 1, q, TYPE_BYTES[t]!)) recordType = TYPES[t];
      if (recordType === undefined) return NOT_PLAIN;
      p = q + 1;
    } else if (bytesEqual(b, keyFrom, keyTo, KEY_DATA)) {
      if (dataSeen || b[p] !== LBRACE) return NOT_PLAIN;
      dataSeen = true;
      p = readData(b, ws(b, p + 1));
      if (p < 0) return p;
    } else return NOT_PLAIN;
    const next = nextMember(b, p);
    if (next === CLOSED) break;
    if (next < 0) return NOT_JSON;
    p = next;
  }
  if (!plate || recordType === undefined || !dataSeen) return NOT_PLAIN;
  return closedAt + 1;
}

/** The members of a record's `data` from `p` (after its brace): returns the end of the object, or NOT_PLAIN / NOT_JSON. */
function readData(b: Buffer, p: number): number {
  const d = draft;
  let keys = 0;
  if (b[p] === RBRACE) return p + 1;
  for (;;) {
    if (b[p] !== QUOTE) return NOT_JSON;
    const nameFrom = p + 1;
    let q = nameFrom;
    // The name's hash as it is read (names.ts's hashName).
    let h = FNV_OFFSET;
    let c = b[q];
    while (c !== QUOTE && c !== BACKSLASH && c !== undefined) {
      h = Math.imul(h ^ c, FNV_PRIME);
      c = b[++q];
    }
    if (c !== QUOTE) return NOT_PLAIN;
    // More parameters than a record may carry: the general path words it (and no name is added past the table's room).
    if (++keys > MAX_PARAMETERS) return NOT_PLAIN;
    let slot = NAMES.find(b, nameFrom, q, h >>> 0);
    if (slot < 0) {
      if (!plainFieldName(b, nameFrom, q)) return NOT_PLAIN;
      slot = NAMES.addBytes(b, nameFrom, q);
    }
    p = ws(b, q + 1);
    if (b[p] !== COLON) return NOT_JSON;
    p = ws(b, p + 1);
    c = b[p];
    const time = slot === TIME_SLOT;
    // A second `time`, or a second of any name: JSON.parse keeps the last, the general path decides.
    if (time ? timeState !== ABSENT : !d.mark(slot, -1)) return NOT_PLAIN;
    if (c === 0x6e) {
      // null: a parameter not received, left out; a null time is a stamped type's stamp (else the general path's).
      if (b[p + 1] !== 0x75 || b[p + 2] !== 0x6c || b[p + 3] !== 0x6c) return NOT_JSON;
      p += 4;
      if (time) timeState = NULL;
    } else {
      if (c !== MINUS && (c === undefined || c < ZERO || c > NINE)) return NOT_PLAIN;
      const e = readNumber(b, p);
      if (e < 0) return NOT_JSON;
      if (!Number.isFinite(numValue)) return NOT_PLAIN;
      if (time) {
        timeState = NUMBER;
        timeValue = numValue;
        timePlain = numPlain;
        timeFrom = p;
        timeTo = e;
      } else {
        const k = d.n++;
        d.at[slot] = k;
        d.slot[k] = slot;
        d.value[k] = numValue;
        if (numSame) {
          d.from[k] = p;
          d.to[k] = e;
          d.inScratch[k] = 0;
        } else {
          d.from[k] = d.scratchLen;
          d.to[k] = d.text(formatFloat(numValue));
          d.inScratch[k] = 1;
        }
      }
      p = e;
    }
    const next = nextMember(b, p);
    if (next === CLOSED) return closedAt + 1;
    if (next < 0) return NOT_JSON;
    p = next;
  }
}

/** Whether bytes `from`..`to` are a field name (lineProtocol.ts's rule, by byte). */
function plainFieldName(b: Uint8Array, from: number, to: number): boolean {
  if (to - from === 0 || to - from > FIELD_NAME_MAX) return false;
  for (let i = from; i < to; i++) if (!fieldNameByte(b[i]!, i === from)) return false;
  return true;
}

/**
 * The read record checked by the rules the general path calls (validate/, then plausibility/):
 * returns its time, or undefined when the general path must judge (and word) it.
 */
function plainChecks(type: RecordTypeInfo, opts: ScanOptions): number | undefined {
  const d = draft;
  const time = recordTime(type, timeState === NUMBER ? timeValue : undefined, opts.receivedAt);
  if (time === undefined || (timeState === NULL && type.spec.time !== 'stamped')) return undefined;
  for (const f of type.required) {
    const v = d.valueOf(f.id);
    if (v === undefined || !withinBounds(f, v)) return undefined;
  }
  if (!enoughParameters(type, d.n - type.required.length)) return undefined;
  const pl = opts.plausibility;
  if (pl) {
    if (pl.timeProblem(time, opts.receivedAt)) return undefined;
    for (let k = 0; k < d.n; k++) {
      const rule = ruleOf(pl, type, d.slot[k]!);
      if (rule && !withinRule(d.value[k]!, rule)) return undefined;
    }
    const [lat, lng] = POSITION[type.index]!;
    if (pl.opts.zeroPosition && lat! >= 0 && isNoFix(d.valueOf(lat!), d.valueOf(lng!))) return undefined;
  }
  return time;
}

/**
 * Record `at`, written to `sink` when plainly valid and plausible: returns its end. NOT_PLAIN when the
 * general path must judge it; NOT_JSON when the bytes are not JSON. Nothing is written of a record
 * given up on: every check comes before its rows.
 */
function writePlainRecord(b: Buffer, at: number, i: number, sink: ScanSink, opts: ScanOptions): number {
  const end = readRecord(b, at);
  if (end < 0) return end;
  const type = recordType!;
  const time = plainChecks(type, opts);
  if (time === undefined) return NOT_PLAIN;
  const d = draft;
  if (timeState === NUMBER && timePlain) {
    d.timeFrom = timeFrom;
    d.timeTo = timeTo;
    d.timeInScratch = false;
  } else d.timeText(time);
  const plate = sink.rows.length > 1 || sink.wantsPlates ? b.toString('latin1', d.tagFrom, d.tagTo) : undefined;
  const rows = plate === undefined || sink.rows.length === 1 ? sink.rows[0]! : sink.rows[partitionOf(plate, sink.rows.length)]!;
  finishRecord(rows, type, d, opts.flatten);
  sink.stored(type, time, i, plate);
  return end;
}

/** Record `i` at `p`: written plainly, or parsed for the general path. Returns its end, or NOT_JSON. */
function record(b: Buffer, p: number, i: number, sink: ScanSink, opts: ScanOptions, general: boolean): number {
  if (b[p] === LBRACE) {
    // Nothing is written of a record given up on: every check comes before its row.
    const end = writePlainRecord(b, p, i, sink, opts);
    if (end >= 0) return end;
    if (end === NOT_JSON || !general) return NOT_JSON;
  } else if (!general) return NOT_JSON;
  const end = skipValue(b, p);
  if (end < 0) return NOT_JSON;
  const text = b.toString('utf8', p, end);
  let item: unknown;
  try {
    item = JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
  sink.item(i, item, text);
  return end;
}

/**
 * Scans a push body into `sink`; undefined when the general path must take the whole body (the
 * sink then holds a partial result, to be thrown away).
 */
export function scanPush(bytes: Uint8Array, shape: PushShape, sink: ScanSink, opts: ScanOptions): Scanned | undefined {
  if (!isUtf8(bytes)) return undefined;
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = ws(b, 0);
  if (b[p] !== LBRACE) return undefined;
  const q = ws(b, p + 1);
  if (b[q] === QUOTE && bytesEqual(b, q + 1, q + 1 + KEY_BULK.length, KEY_BULK) && b[q + 1 + KEY_BULK.length] === QUOTE) {
    if (shape === 'realtime') return undefined;
    p = ws(b, q + 2 + KEY_BULK.length);
    if (b[p] !== COLON) return undefined;
    p = ws(b, p + 1);
    if (b[p] !== LBRACKET) return undefined;
    p = ws(b, p + 1);
    let count = 0;
    if (b[p] === RBRACKET) p++;
    else {
      for (;;) {
        const end = record(b, p, count, sink, opts, true);
        if (end < 0) return undefined;
        count++;
        p = ws(b, end);
        if (b[p] === COMMA) {
          p = ws(b, p + 1);
          continue;
        }
        if (b[p] !== RBRACKET) return undefined;
        p++;
        break;
      }
    }
    // `{"bulkData":[…]}` and nothing else: another key (or a second bulkData) is the general path's.
    p = ws(b, p);
    if (b[p] !== RBRACE || ws(b, p + 1) !== b.length) return undefined;
    return { bulk: true, count };
  }
  if (shape === 'bulk') return undefined;
  // Realtime: one record, taken plainly or not at all (a record with a bulkData key is a bulk push to the general path).
  const end = record(b, p, 0, sink, opts, false);
  if (end < 0 || ws(b, end) !== b.length) return undefined;
  return { bulk: false, count: 1 };
}
