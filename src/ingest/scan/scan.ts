import { isUtf8 } from 'node:buffer';
import { FIELD_DICTIONARY } from '../../telemetry/fields.js';
import { formatFloat } from '../../telemetry/lineProtocol.js';
import { EPOCH_MS_MAX, SECONDS_THRESHOLD } from '../../telemetry/numbers.js';
import type { PushShape } from '../../telemetry/push.js';
import { VEHICLENO_MAX, type RecordType } from '../../telemetry/record.js';
import { isUnusedSensorNumber, sensorNumber, type FlattenOptions } from '../flatten/flatten.js';
import { PackHealth, packKind } from '../flatten/packHealth.js';
import { MASK_GROUPS, putMask, ROW_CAN, ROW_GPS, writePack, type PointRows } from '../flatten/points.js';
import type { Plausibility } from '../plausibility/judge.js';
import { withinRule, type RangeRule } from '../plausibility/rules.js';
import { partitionOf } from '../queue/keys.js';
import { GPS_CORE } from '../validate/record.js';

/**
 * The receiver's one pass over a push's bytes: for each record that is plainly valid and plausible
 * (three keys; a plate of printable ASCII; every value a JSON number or null; every field name one of
 * the spec's), it validates, judges and writes the record's row (src/ingest/flatten/points.ts) as it
 * reads, copying each value's own text when that is the text line protocol would be given. No string
 * or object is made for such a record. Any other record, valid or not, is parsed on its own
 * (`JSON.parse` of its bytes) and handed to the general path (`item`), in its place in the push; a
 * body that is not UTF-8, not JSON, or not a push of the route's shape is left whole to the general
 * path, which words the answer. `scan.fuzz.test.ts` holds the two paths to the same rows, answers
 * and quarantine on random and hostile pushes.
 */

/** Where the scanner puts what it reads; the receiver's RecordSorter. */
export interface ScanSink {
  readonly rows: readonly PointRows[];
  /** A record the scanner validated, judged and wrote. */
  stored(type: RecordType, time: number): void;
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

// ---- field names: the dictionary, looked up by a hash of their bytes --------------------------

const DICT_BYTES = FIELD_DICTIONARY.map((n) => Buffer.from(n, 'latin1'));
const AMBIGUOUS = -3;
const byHash = new Map<number, number>();
for (let i = 0; i < DICT_BYTES.length; i++) {
  const h = fnv(DICT_BYTES[i]!, 0, DICT_BYTES[i]!.length);
  byHash.set(h, byHash.has(h) ? AMBIGUOUS : i);
}
function fnv(b: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

/** The dictionary index of the name in bytes `from`..`to` whose hash is `h`, or -1. */
function nameIndex(b: Uint8Array, from: number, to: number, h: number): number {
  const i = byHash.get(h);
  if (i === undefined || i < 0) return -1;
  const name = DICT_BYTES[i]!;
  if (name.length !== to - from) return -1;
  for (let k = 0; k < name.length; k++) if (name[k] !== b[from + k]) return -1;
  return i;
}

const TIME = FIELD_DICTIONARY.indexOf('time');
const NO_OF_SENSORS = FIELD_DICTIONARY.indexOf('no_of_temperature_sensors');
const NO_OF_CELLS = FIELD_DICTIONARY.indexOf('no_of_cells');
const PACK_KIND = FIELD_DICTIONARY.map(packKind);
const pack = new PackHealth();
const SENSOR = FIELD_DICTIONARY.map(sensorNumber);
const CORE = GPS_CORE.map((r) => ({ index: FIELD_DICTIONARY.indexOf(r.key), min: r.min, max: r.max }));
const KEY_VEHICLENO = Buffer.from('vehicleno');
const KEY_TYPE = Buffer.from('type');
const KEY_DATA = Buffer.from('data');
const KEY_BULK = Buffer.from('bulkData');

function bytesEqual(b: Uint8Array, from: number, to: number, want: Uint8Array): boolean {
  if (to - from !== want.length) return false;
  for (let k = 0; k < want.length; k++) if (b[from + k] !== want[k]) return false;
  return true;
}

// ---- one record's scratch: reused, the scan is synchronous -----------------------------------

const MAX_FIELDS = FIELD_DICTIONARY.length;
/** `seenAt[f] === stamp`: name f is in this record (a second one is the general path's); `numberAt`: with a number, at `slot[f]`. */
const seenAt = new Int32Array(MAX_FIELDS);
const numberAt = new Int32Array(MAX_FIELDS);
const slot = new Int32Array(MAX_FIELDS);
let stamp = 0;
const STAMP_MAX = 2 ** 30;
const order = new Int32Array(MAX_FIELDS);
const values = new Float64Array(MAX_FIELDS);
const from = new Int32Array(MAX_FIELDS);
const to = new Int32Array(MAX_FIELDS);
const texts: Array<string | undefined> = new Array<string | undefined>(MAX_FIELDS).fill(undefined);
const bits = new Uint8Array(MASK_GROUPS);

/** A number's value, and whether its text is what line protocol would be given (formatFloat's). */
let numValue = 0;
let numPlain = false;

/**
 * The JSON number at `p`: its end, or NOT_JSON. Sets numValue and numPlain. Up to 15 significant
 * digits without an exponent, the value is the digits over a power of ten (one correctly rounded
 * division of exact doubles, so the double `Number` would give), and the text is `String`'s own when it
 * has no redundant zero and is not -0 or below 1e-6 (where `String` switches to exponents).
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
    numPlain = !(v === 0 && neg) && (v === 0 || v >= 1e-6);
  } else {
    numValue = Number(b.toString('latin1', start, p));
    numPlain = false;
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

/** The range rules of the dictionary's names for one Plausibility, by type. */
let rulesFor: Plausibility | undefined;
let rules: Record<RecordType, Array<RangeRule | null>> = { gps: [], can: [] };
function rulesOf(p: Plausibility): Record<RecordType, Array<RangeRule | null>> {
  if (rulesFor !== p) {
    rulesFor = p;
    rules = { gps: FIELD_DICTIONARY.map((n) => p.ruleOf('gps', n)), can: FIELD_DICTIONARY.map((n) => p.ruleOf('can', n)) };
  }
  return rules;
}

/**
 * Record `at` (an object), written to `sink` when plainly valid and plausible: returns its end.
 * NOT_PLAIN when the general path must judge it; NOT_JSON when the bytes are not JSON.
 */
function plainRecord(b: Buffer, at: number, sink: ScanSink, opts: ScanOptions): number {
  let p = ws(b, at + 1);
  let plateFrom = -1, plateTo = -1;
  let type: RecordType | undefined;
  let dataSeen = false;
  let n = 0;
  let timeAt = -1;
  if (++stamp === STAMP_MAX) {
    seenAt.fill(0);
    numberAt.fill(0);
    stamp = 1;
  }
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
      if (plateFrom >= 0 || b[p] !== QUOTE) return NOT_PLAIN;
      plateFrom = p + 1;
      let blank = true;
      q = plateFrom;
      for (;;) {
        const c = b[q];
        if (c === QUOTE) break;
        // Escapes, control characters (DEL too), anything beyond ASCII: the general path.
        if (c === undefined || c < 0x20 || c >= 0x7f || c === BACKSLASH) return NOT_PLAIN;
        if (c !== SPACE) blank = false;
        q++;
      }
      plateTo = q;
      if (blank || plateTo === plateFrom || plateTo - plateFrom > VEHICLENO_MAX) return NOT_PLAIN;
      p = q + 1;
    } else if (bytesEqual(b, keyFrom, keyTo, KEY_TYPE)) {
      if (type !== undefined || b[p] !== QUOTE) return NOT_PLAIN;
      if (b[p + 4] !== QUOTE) return NOT_PLAIN;
      if (b[p + 1] === 0x67 && b[p + 2] === 0x70 && b[p + 3] === 0x73) type = 'gps';
      else if (b[p + 1] === 0x63 && b[p + 2] === 0x61 && b[p + 3] === 0x6e) type = 'can';
      else return NOT_PLAIN;
      p += 5;
    } else if (bytesEqual(b, keyFrom, keyTo, KEY_DATA)) {
      if (dataSeen || b[p] !== LBRACE) return NOT_PLAIN;
      dataSeen = true;
      p = ws(b, p + 1);
      if (b[p] !== RBRACE) {
        for (;;) {
          if (b[p] !== QUOTE) return NOT_JSON;
          const nameFrom = p + 1;
          q = nameFrom;
          // The name's hash as it is read (fnv's).
          let h = 0x811c9dc5;
          let c = b[q];
          while (c !== QUOTE && c !== BACKSLASH && c !== undefined) {
            h = Math.imul(h ^ c, 0x01000193);
            c = b[++q];
          }
          if (c !== QUOTE) return NOT_PLAIN;
          const f = nameIndex(b, nameFrom, q, h >>> 0);
          if (f < 0 || seenAt[f] === stamp) return NOT_PLAIN;
          seenAt[f] = stamp;
          p = ws(b, q + 1);
          if (b[p] !== COLON) return NOT_JSON;
          p = ws(b, p + 1);
          c = b[p];
          if (c === 0x6e) {
            // null: a parameter not received, left out; a null time is a CAN record's stamp (gps: general path).
            if (b[p + 1] !== 0x75 || b[p + 2] !== 0x6c || b[p + 3] !== 0x6c) return NOT_JSON;
            p += 4;
            if (f === TIME) timeAt = -2;
          } else {
            if (c !== MINUS && (c === undefined || c < ZERO || c > NINE)) return NOT_PLAIN;
            const e = readNumber(b, p);
            if (e < 0) return NOT_JSON;
            if (!Number.isFinite(numValue)) return NOT_PLAIN;
            if (f === TIME) timeAt = n;
            numberAt[f] = stamp;
            slot[f] = n;
            order[n] = f;
            values[n] = numValue;
            from[n] = p;
            to[n] = e;
            texts[n] = numPlain ? undefined : formatFloat(numValue);
            n++;
            p = e;
          }
          const next = nextMember(b, p);
          if (next === CLOSED) break;
          if (next < 0) return NOT_JSON;
          p = next;
        }
        p = closedAt;
      }
      p++;
    } else return NOT_PLAIN;
    const next = nextMember(b, p);
    if (next === CLOSED) break;
    if (next < 0) return NOT_JSON;
    p = next;
  }
  const end = closedAt + 1;
  if (plateFrom < 0 || type === undefined || !dataSeen) return NOT_PLAIN;
  const gps = type === 'gps';

  // Validation: the record's time, and a gps record's core fields.
  let time: number;
  let timeText: string | undefined;
  if (timeAt >= 0) {
    const t = values[timeAt]!;
    if (!Number.isInteger(t) || t < SECONDS_THRESHOLD || t > EPOCH_MS_MAX) return NOT_PLAIN;
    time = t;
  } else if (gps) return NOT_PLAIN;
  else {
    time = opts.receivedAt;
    timeText = String(time);
  }
  const fields = n - (timeAt >= 0 ? 1 : 0);
  if (gps) {
    for (const r of CORE) {
      if (numberAt[r.index] !== stamp) return NOT_PLAIN;
      const v = values[slot[r.index]!]!;
      if (r.min !== undefined && r.max !== undefined && !(v >= r.min && v <= r.max)) return NOT_PLAIN;
    }
  } else if (fields === 0) return NOT_PLAIN;

  // Judgement: anything refused is the general path's to word and keep.
  const pl = opts.plausibility;
  if (pl) {
    if (pl.timeProblem(time, opts.receivedAt)) return NOT_PLAIN;
    const byIndex = rulesOf(pl)[type];
    for (let k = 0; k < n; k++) {
      const f = order[k]!;
      if (f === TIME) continue;
      const rule = byIndex[f];
      if (rule && !withinRule(values[k]!, rule)) return NOT_PLAIN;
    }
    if (gps && pl.opts.zeroPosition && values[slot[CORE[0]!.index]!] === 0 && values[slot[CORE[1]!.index]!] === 0) return NOT_PLAIN;
  }

  // Flattening: unused temperature sensors left out, then the row.
  const rows = sink.rows.length === 1 ? sink.rows[0]! : sink.rows[partitionOf(b.toString('latin1', plateFrom, plateTo), sink.rows.length)]!;
  bits.fill(0);
  let droppedCount = 0;
  const sentinels = opts.flatten.temperatureSentinels;
  const sensors = !gps && numberAt[NO_OF_SENSORS] === stamp ? values[slot[NO_OF_SENSORS]!] : undefined;
  for (let k = 0; k < n; k++) {
    const f = order[k]!;
    if (f === TIME) continue;
    if (!gps && isUnusedSensorNumber(SENSOR[f]!, values[k]!, sensors, sentinels)) {
      droppedCount++;
      continue;
    }
    bits[(f / 6) | 0]! |= 1 << f % 6;
  }
  // The row is written with a local cursor: it is never longer than the record's own text, but for a
  // stamped time, the mask, escapes in the tag and a few characters per value that formatFloat lengthens.
  rows.reserve(end - at + 64 + 2 * (plateTo - plateFrom) + 4 * n);
  const buf = rows.buf;
  let w = rows.len;
  buf[w++] = gps ? ROW_GPS : ROW_CAN;
  if (timeText !== undefined) w = putText(buf, timeText, w);
  else if (texts[timeAt] !== undefined) w = putText(buf, texts[timeAt]!, w);
  else for (let i = from[timeAt]!; i < to[timeAt]!; i++) buf[w++] = b[i]!;
  buf[w++] = SPACE;
  w = putMask(buf, w, bits, MASK_GROUPS);
  buf[w++] = COLON;
  let first = true;
  for (let g = 0; g < MASK_GROUPS; g++) {
    const m = bits[g]!;
    if (m === 0) continue;
    for (let k = 0; k < 6; k++) {
      if ((m & (1 << k)) === 0) continue;
      const s = slot[g * 6 + k]!;
      if (!first) buf[w++] = COMMA;
      first = false;
      const text = texts[s];
      if (text !== undefined) w = putText(buf, text, w);
      else for (let i = from[s]!, e = to[s]!; i < e; i++) buf[w++] = b[i]!;
    }
  }
  buf[w++] = SPACE;
  // The tag: the plate with commas, equals signs and spaces escaped.
  for (let i = plateFrom; i < plateTo; i++) {
    const c = b[i]!;
    if (c === COMMA || c === 61 || c === SPACE) buf[w++] = BACKSLASH;
    buf[w++] = c;
  }
  buf[w++] = 10;
  rows.len = w;
  if (!gps && opts.flatten.packHealth) {
    // Pack health sums in the record's order, as for a record of the general path.
    pack.start(numberAt[NO_OF_CELLS] === stamp ? values[slot[NO_OF_CELLS]!] : undefined, sensors, sentinels);
    for (let k = 0; k < n; k++) pack.add(PACK_KIND[order[k]!]!, values[k]!);
    writePack(rows, pack);
  }
  rows.endRecord(droppedCount);
  sink.stored(type, time);
  return end;
}

/** A number's text (ASCII) into `buf` at `w`; returns the end. */
function putText(buf: Buffer, text: string, w: number): number {
  for (let i = 0; i < text.length; i++) buf[w++] = text.charCodeAt(i);
  return w;
}

/** Record `i` at `p`: written plainly, or parsed for the general path. Returns its end, or NOT_JSON. */
function record(b: Buffer, p: number, i: number, sink: ScanSink, opts: ScanOptions, general: boolean): number {
  if (b[p] === LBRACE) {
    // Nothing is written of a record given up on: every check comes before its row.
    const end = plainRecord(b, p, sink, opts);
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
