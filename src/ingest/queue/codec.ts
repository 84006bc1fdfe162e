import { deflateRawSync, inflateRawSync, constants as zlib } from 'node:zlib';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { FIELD_DICTIONARY } from '../../telemetry/fields.js';
import { recordsOfRows, type PointRows } from '../flatten/points.js';

/**
 * The payload of one job: a chunk of validated records. Versioned so workers of a newer release can
 * still read jobs queued by an older one during a rolling upgrade, and so an operator's replay of an old
 * dead letter still decodes. Each version's keys and layout: src/formats/README.md ("Job payloads"); the
 * golden payloads every version is read from: src/formats/testdata/payloads.json.
 *
 * v1 is the records as they are (about 1.7 kB per CAN record of all 69 fields); v2 their columns (about
 * 1/15 of that: Redis holds every queued record until a worker writes it, so a payload's size is what a
 * backlog costs); v3 the receiver's rows, which a worker copies into its request without decoding a record.
 */
export interface JobPayloadV1 {
  v: 1;
  records: TelemetryRecord[];
}
export interface JobPayloadV2 {
  v: 2;
  /** Number of records (so a dead-letter listing need not decode). */
  n: number;
  /** The dictionary size its numbered names stay below (names from it on go as strings); DICTIONARY_WITHOUT_K when absent. */
  k?: number;
  /** The columnar array, as JSON (small jobs, where deflate gains little). */
  c?: Columnar;
  /** The columnar array as JSON, raw-deflated, base64. */
  z?: string;
}
/**
 * v3: the records' points, already flattened by the receiver, as rows (src/ingest/flatten/points.ts):
 * `{v: 3, n, d, k, t}` with the rows as text, or `{v: 3, n, d, k, z}` raw-deflated and base64-encoded.
 * A worker copies their bytes into its request; nothing is decoded into records. `d`: fields left out
 * as unused sensors. `k`: the dictionary size the rows' masks stay below (names from it on are extras,
 * `;name=value`); a worker whose dictionary is smaller leaves the job for one that reads it (formats.ts).
 */
export interface JobPayloadV3 {
  v: 3;
  n: number;
  d: number;
  /** DICTIONARY_WITHOUT_K when absent (jobs of the release that made v3). */
  k?: number;
  t?: string;
  z?: string;
  /** The receiver's seal (queue/seal.ts): absent on jobs of releases before it, and on any job a receiver did not write. */
  s?: string;
}
export type JobPayload = JobPayloadV1 | JobPayloadV2 | JobPayloadV3;

type Name = number | string;
type Special = [number, number, string];
type Columnar = [
  vehiclenos: string[],
  types: string[],
  names: Name[],
  vehicle: number[],
  counts: number[],
  fieldIdx: number[],
  times: number[],
  columns: number[][],
  specials: Special[],
];

/** Field names a v2 payload may refer to by number (the frozen dictionary of `telemetry/fields.ts`). */
export const V2_NAMES: readonly string[] = FIELD_DICTIONARY;
const V2_INDEX = new Map(V2_NAMES.map((n, i) => [n, i]));

/**
 * The dictionary of a v2 or v3 job without `k`: FIELD_DICTIONARY's size from v2 until `k` was added
 * (the spec's 69 CAN names with `time`, and the 5 GPS names). Fixed forever: those jobs say no more.
 */
export const DICTIONARY_WITHOUT_K = 74;

/** The payload version of a job, and the dictionary size its numbered names stay below (0 for v1, which names every field). */
export interface PayloadFormat {
  v: number;
  k: number;
}

/** What a payload says of its own format, or undefined when it is not a payload (no integer `v`). */
export function payloadFormat(data: unknown): PayloadFormat | undefined {
  const p = data as { v?: unknown; k?: unknown } | null;
  if (!p || typeof p !== 'object' || !Number.isInteger(p.v)) return undefined;
  const v = p.v as number;
  if (v === 1) return { v, k: 0 };
  return { v, k: Number.isInteger(p.k) ? (p.k as number) : DICTIONARY_WITHOUT_K };
}

/**
 * Below about this much JSON a job is stored as it is: small jobs (realtime pushes grouped over a few
 * milliseconds) are few records, where BullMQ's own per-job keys outweigh the payload and a fresh
 * zlib stream per job would cost more CPU than the records themselves.
 */
const DEFLATE_FROM = 16_384;
/** The fastest deflate: on these payloads within 15 % of level 9's size at 1/5 to 1/20 of its time. */
const DEFLATE = { level: 1, strategy: zlib.Z_DEFAULT_STRATEGY };

function special(v: number): string | undefined {
  if (v === 0) return Object.is(v, -0) ? '-0' : undefined;
  return Number.isFinite(v) ? undefined : String(v);
}

function fromSpecial(code: string): number {
  switch (code) {
    case '-0': return -0;
    case 'NaN': return NaN;
    case 'Infinity': return Infinity;
    case '-Infinity': return -Infinity;
    default: throw new Error(`job payload v2: unknown special value ${JSON.stringify(code)}`);
  }
}

const hasOwn = Object.prototype.hasOwnProperty;

/** `dictionary`: names numbered from it on go as strings, for workers whose dictionary ends there. */
export function encodeColumnar(records: readonly TelemetryRecord[], dictionary = V2_NAMES.length): Columnar {
  const vehiclenos: string[] = [];
  const vehicleIndex = new Map<string, number>();
  const types: string[] = [];
  const names: Name[] = [];
  const nameIndex = new Map<string, number>();
  const vehicle: number[] = new Array<number>(records.length);
  const counts: number[] = new Array<number>(records.length);
  const typeOf: number[] = new Array<number>(records.length);
  const fieldIdx: number[] = [];
  const columns: number[][] = [];
  const specials: Special[] = [];
  const times: number[] = new Array<number>(records.length + 1);

  let delta = true;
  for (const r of records) {
    // Within ±2^52 every difference and every running sum is an exact integer.
    if (!Number.isInteger(r.time) || Math.abs(r.time) > 2 ** 52 || Object.is(r.time, -0)) {
      delta = false;
      break;
    }
  }
  times[0] = delta ? 1 : 0;

  let prev = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    let v = vehicleIndex.get(r.vehicleno);
    if (v === undefined) {
      v = vehiclenos.push(r.vehicleno) - 1;
      vehicleIndex.set(r.vehicleno, v);
    }
    vehicle[i] = v;
    let t = types.indexOf(r.type);
    if (t < 0) t = types.push(r.type) - 1;
    typeOf[i] = t;

    if (delta) {
      times[i + 1] = r.time - prev;
      prev = r.time;
    } else {
      const s = special(r.time);
      times[i + 1] = s === undefined ? r.time : 0;
      if (s !== undefined) specials.push([-1, i, s]);
    }

    // The record's fields in its own key order (for-in gives Object.keys' order; inherited keys,
    // which Object.keys leaves out, are skipped): each name's index, and its value in its column.
    const fields = r.fields;
    let n = 0;
    for (const name in fields) {
      if (!hasOwn.call(fields, name)) continue;
      let f = nameIndex.get(name);
      if (f === undefined) {
        const number = V2_INDEX.get(name);
        f = names.push(number !== undefined && number < dictionary ? number : name) - 1;
        nameIndex.set(name, f);
        columns.push([]);
      }
      fieldIdx.push(f);
      n++;
      const value = fields[name]!;
      const col = columns[f]!;
      if (value === 0 || !Number.isFinite(value)) {
        const s = special(value);
        if (s !== undefined) {
          specials.push([f, col.length, s]);
          col.push(0);
          continue;
        }
      }
      col.push(value);
    }
    counts[i] = n;
  }
  const nt = Math.max(2, types.length);
  for (let i = 0; i < records.length; i++) counts[i] = counts[i]! * nt + typeOf[i]!;
  return [vehiclenos, types, names, vehicle, counts, fieldIdx, times, columns, specials];
}

export function decodeColumnar(c: Columnar, n?: number): TelemetryRecord[] {
  if (!Array.isArray(c) || c.length !== 9) throw new Error('job payload v2: malformed');
  const [vehiclenos, types, names, vehicle, counts, fieldIdx, times, columns, specials] = c;
  const count = vehicle.length;
  if (n !== undefined && n !== count) throw new Error(`job payload v2: says ${n} records, holds ${count}`);
  const nt = Math.max(2, types.length);
  const fieldNames = names.map((x) => (typeof x === 'number' ? V2_NAMES[x] : x));
  if (fieldNames.some((x) => x === undefined)) throw new Error('job payload v2: unknown field name number');

  // Specials are put back into copies of their columns before the records are built.
  const cols = specials.length === 0 ? columns : columns.map((col) => col.slice());
  const t = times.slice(1);
  for (const [f, pos, code] of specials) {
    if (f === -1) t[pos] = fromSpecial(code);
    else cols[f]![pos] = fromSpecial(code);
  }
  if (times[0] === 1) {
    let acc = 0;
    for (let i = 0; i < t.length; i++) {
      acc += t[i]!;
      t[i] = acc;
    }
  }

  // Fields objects without a prototype are plain hash tables to V8. Ordinary objects get a hidden
  // class per subset of CAN parameters, and real traffic has thousands of subsets: built key by key
  // they decoded a third slower, as clones of per-shape templates ten times slower (docs/benchmarks/history.md).
  const at = new Array<number>(cols.length).fill(0);
  const out = new Array<TelemetryRecord>(count);
  let next = 0;
  for (let i = 0; i < count; i++) {
    const tc = counts[i]!;
    const type = types[tc % nt];
    const fieldCount = Math.floor(tc / nt);
    const vno = vehiclenos[vehicle[i]!];
    if (type === undefined || vno === undefined || next + fieldCount > fieldIdx.length) throw new Error(`job payload v2: record ${i} is malformed`);
    const fields = Object.create(null) as Record<string, number>;
    for (let k = 0; k < fieldCount; k++) {
      const f = fieldIdx[next++]!;
      const col = cols[f];
      if (col === undefined) throw new Error(`job payload v2: record ${i} is malformed`);
      fields[fieldNames[f]!] = col[at[f]!++]!;
    }
    out[i] = { vehicleno: vno, type: type as TelemetryRecord['type'], time: t[i]!, fields };
  }
  if (next !== fieldIdx.length) throw new Error('job payload v2: malformed');
  return out;
}

/** A v2 job (what workers of a release that reads no v3 take); `dictionary` as for encodeColumnar. */
export function encodeJob(records: readonly TelemetryRecord[], dictionary = V2_NAMES.length, deflate = true): JobPayloadV2 {
  const c = encodeColumnar(records, dictionary);
  const k = Math.min(dictionary, V2_NAMES.length);
  // A small job goes as it is, judged by an estimate of its JSON (about 8 characters a value, 24 a
  // record) rather than by writing it out twice: BullMQ stringifies the job data itself.
  if (!deflate || c[5].length * 8 + records.length * 24 < DEFLATE_FROM) return { v: 2, n: records.length, k, c };
  return { v: 2, n: records.length, k, z: deflateRawSync(JSON.stringify(c), DEFLATE).toString('base64') };
}

/** Records `from`..`to` of some rows: what one job takes of a push (or of several). */
export interface RowsPart {
  rows: PointRows;
  from: number;
  to: number;
}

/** The records of `parts`, in order (a v2 or v1 job made of the receiver's rows). */
export function recordsOfParts(parts: readonly RowsPart[]): TelemetryRecord[] {
  const out: TelemetryRecord[] = [];
  for (const { rows, from, to } of parts) {
    const [a, b] = rows.span(from, to);
    for (const r of recordsOfRows(rows.buf.subarray(a, b))) out.push(r);
  }
  return out;
}

/**
 * A job of the rows of `parts`, in order; deflated when `deflate` and large enough to gain from it.
 * `k`: the dictionary size the rows' masks stay below (the largest their writers were given).
 */
export function encodePointsJob(parts: readonly RowsPart[], deflate = true, k = FIELD_DICTIONARY.length): JobPayloadV3 {
  let n = 0, d = 0, size = 0;
  for (const { rows, from, to } of parts) {
    n += to - from;
    for (let i = from; i < to; i++) d += rows.dropped[i]!;
    const [a, b] = rows.span(from, to);
    size += b - a;
  }
  let bytes: Buffer;
  if (parts.length === 1) {
    // One run (a bulk push's own job): its bytes as they lie.
    const [a, b] = parts[0]!.rows.span(parts[0]!.from, parts[0]!.to);
    bytes = parts[0]!.rows.buf.subarray(a, b);
  } else {
    bytes = Buffer.allocUnsafe(size);
    let at = 0;
    for (const { rows, from, to } of parts) {
      const [a, b] = rows.span(from, to);
      at += rows.buf.copy(bytes, at, a, b);
    }
  }
  return !deflate || size < DEFLATE_FROM ? { v: 3, n, d, k, t: bytes.toString('utf8') } : { v: 3, n, d, k, z: deflateRawSync(bytes, DEFLATE).toString('base64') };
}

/** The rows of a v3 payload, or undefined for an older version. */
export function jobRows(data: unknown): Buffer | undefined {
  const p = data as Partial<JobPayloadV3> | null;
  if (!p || p.v !== 3) return undefined;
  if (typeof p.z === 'string') return inflateRawSync(Buffer.from(p.z, 'base64'));
  if (typeof p.t === 'string') return Buffer.from(p.t, 'utf8');
  throw new Error('job payload v3: no rows');
}

/** The records of a job payload of any version this release knows (v3: as the rows hold them, flattened). */
export function decodeJob(data: unknown): TelemetryRecord[] {
  const p = data as { v?: unknown; records?: unknown; n?: number; c?: unknown; z?: unknown } | null;
  const rows = jobRows(data);
  if (rows) return recordsOfRows(rows);
  if (p && p.v === 1 && Array.isArray(p.records)) return p.records as TelemetryRecord[];
  if (p && p.v === 2) {
    if (typeof p.z === 'string') {
      const json = inflateRawSync(Buffer.from(p.z, 'base64')).toString('utf8');
      return decodeColumnar(JSON.parse(json) as Columnar, p.n);
    }
    if (Array.isArray(p.c)) return decodeColumnar(p.c as Columnar, p.n);
  }
  throw new Error(`unknown job payload version ${JSON.stringify(p && (p as { v?: unknown }).v)}`);
}

/** How many records a payload holds, without decoding them when it says so itself. */
export function jobRecordCount(data: unknown): number {
  const p = data as Partial<JobPayloadV2 | JobPayloadV3> | null;
  if (p && (p.v === 2 || p.v === 3) && typeof p.n === 'number') return p.n;
  return decodeJob(data).length;
}
