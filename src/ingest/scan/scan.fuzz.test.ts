import { isUtf8 } from 'node:buffer';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { pushRecordSchema } from '../../telemetry/schema.js';
import { readRows } from '../flatten/points.js';
import { formatFloat } from '../../telemetry/lineProtocol.js';
import { fieldNames, type RecordTypeInfo } from '../../telemetry/fields.js';
import { splitPush, type PushShape } from '../../telemetry/push.js';
import { Plausibility } from '../plausibility/judge.js';
import { rangeRules } from '../plausibility/rules.js';
import { RecordSorter, type PushFacts } from '../receive/sort.js';
import type { QuarantineOrigin } from '../queue/quarantine.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';
import { cases } from '../../../test/harness/short.js';
import { scanPush } from './scan.js';
const CAN_FIELDS = fieldNames('can');
const GPS_FIELDS = fieldNames('gps');

/*
 * The scanner against the general path it stands in for: JSON.parse of the whole body, splitPush,
 * then each record validated (validateRecord), judged (Plausibility) and flattened (writeRecord), as
 * receive/push.ts does when the scanner declines. On random pushes written as text, with every turn
 * of JSON and of the record rules that the scanner must either read as the general path does or hand
 * over (number spellings, escapes, duplicate keys, __proto__, nulls, strings and booleans for numbers,
 * nesting, invalid UTF-8, implausible values), both must give byte for byte the same rows, the same
 * answer (rejected records, refused fields, counts) and the same quarantine entries.
 */
const NOW = Date.UTC(2026, 10, 25, 12);
const ORIGIN: QuarantineOrigin = { deliveryId: 'd', sender: 's', receivedAt: NOW, route: '/push', stage: 'receive' };
const facts: PushFacts = { receivedAt: NOW, originOf: () => ORIGIN };
const decoder = new TextDecoder('utf-8', { fatal: true });

type Verdict = { refused: string } | { bulk: boolean; count: number; sorted: RecordSorter };

function generalPath(bytes: Uint8Array, shape: PushShape, sorter: RecordSorter): Verdict {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return { refused: 'invalid_text' };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { refused: 'invalid_json' };
  }
  const push = splitPush(body, shape);
  if (!push.ok) return { refused: 'invalid_shape' };
  if (!push.bulk) sorter.item(0, push.items[0], text.trim());
  else push.items.forEach((item, i) => sorter.item(i, item));
  sorter.finish(() => text);
  return { bulk: push.bulk, count: push.items.length, sorted: sorter };
}

/** What a sender and an operator see of a sorted push, and the rows' bytes. */
function seen(v: Verdict): unknown {
  if ('refused' in v) return v;
  const s = v.sorted;
  return {
    bulk: v.bulk,
    count: v.count,
    // The points each row holds, a value as the double it denotes: the scanner copies a full-precision
    // text the general path prints again (String's shortest form), and InfluxDB stores the same double.
    rows: s.rows.map((r) => pointsOf(r.buf.subarray(0, r.len))),
    records: s.rows.map((r) => r.ends.length),
    dropped: s.rows.map((r) => r.dropped),
    accepted: [s.accepted, s.acceptedBy],
    late: s.late,
    rejected: s.rejected,
    refusedFields: s.refusedFields,
    fieldsRefused: s.fieldsRefused,
    // The scanner keeps a bulk record's own text, the general path its JSON: the same record.
    held: s.held.map((h) => ({ ...h, raw: JSON.stringify(JSON.parse(h.raw)) })),
    invalid: s.invalid,
    implausible: s.implausible,
  };
}

/** A row buffer's lines, each field's value written as `formatFloat` writes the double its text denotes. */
function pointsOf(rows: Buffer): string[] {
  return readRows(rows).lines.texts().map((line) => {
    const [head, fields, time] = splitLine(line);
    const values = fields.split(',').map((f) => {
      const eq = f.lastIndexOf('=');
      return `${f.slice(0, eq)}=${formatFloat(Number(f.slice(eq + 1)))}`;
    });
    return `${head} ${values.join(',')} ${time}`;
  });
}

// ---- pushes as text ------------------------------------------------------------------------------

type Rnd = () => number;
const pick = <T,>(rnd: Rnd, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const sp = (rnd: Rnd): string => (rnd() < 0.85 ? '' : pick(rnd, [' ', '\n', '\t ', '\r\n  ']));

const NUMBER_TEXTS = [
  '0', '-0', '0.0', '-0.0', '1', '12', '12.5', '12.50', '3.412', '-17.25', '100', '1e5', '1E5', '1.5e-3', '2e+2', '1e400', '-1e400',
  '0.000001', '0.0000001', '0.00000123', '123456789012345', '1234567890123456', '12345678901234567890', '0.1234567890123456',
  '0.30000000000000004', '5e-324', '1.7976931348623157e308', '9007199254740993', '4.35', '-40', '85', '101', '150', '-5', '0.5',
  // The longest texts formatFloat writes, and spellings it writes shorter or longer than sent.
  '-1.7976931348623157e308', '-5e-324', '1e21', '-1e21', '1e-7', '-2.2250738585072014e-308', '123456789012345678901234567890', '-0.0000001234567890123',
];
/** Names outside the schema a device may send (CAN objects are dynamic), some a numbered series' rule still covers. */
const UNKNOWN_NAMES = ['motor_temp', 'x1', 'customParam', 'cell_voltage_17', 'cell_temperature_07', 'cell_temperature_99', 'Zz_9', `n${'a'.repeat(127)}`];
const BAD_VALUES = ['"12.5"', '" 7 "', '"x"', 'true', 'false', '[]', '{}', '[1,2]', '{"a":1}', '"1e400"', '""', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'];
const PLATES = [
  '"KA01AB1234"', '"MH12 XY 9876"', '"a,b=c d"', '" lead"', '"trail "', '"x"', `"${'y'.repeat(128)}"`, `"${'y'.repeat(129)}"`, '""', '"   "',
  '"Ünïcødé"', '"\\u004bA01"', '"a\\"b"', '"back\\\\slash"', '"end\\\\"', '"tab\\there"', '"del\u007f"', '"\\u0001ctl"', '7', 'null', '["KA01"]',
];
const PLAIN_PLATES = ['"KA01AB1234"', '"MH12 XY 9876"', '"a,b=c d"', '"KA02CD5678"', '"TN09=EF"', `"${',= '.repeat(42)}x"`];

function numberText(rnd: Rnd, name: string, hostile: boolean): string {
  if (!hostile || rnd() < 0.6) {
    // What a real device sends: values within the field's usual range.
    if (name === 'lat') return (rnd() * 40 - 10).toFixed(pick(rnd, [0, 2, 4, 6]));
    if (name === 'lng') return (rnd() * 100 - 20).toFixed(pick(rnd, [0, 3, 6]));
    if (name.startsWith('cell_voltage')) return (3 + rnd()).toFixed(pick(rnd, [1, 3, 4]));
    // A float32 reading widened to a double: as String prints it, and as C's %.17g does (not the shortest).
    if (name === 'battery_voltage' || name === 'current' || name === 'speed') return rnd() < 0.5 ? String(Math.fround(rnd() * 60)) : Math.fround(rnd() * 60).toPrecision(17);
    if (name.startsWith('cell_temperature')) return rnd() < 0.2 ? '-40' : (20 + rnd() * 20).toFixed(1);
    if (name.startsWith('alert') || name === 'ignstatus' || name.startsWith('allow')) return pick(rnd, ['0', '1']);
    if (name === 'no_of_temperature_sensors') return String(Math.floor(rnd() * 7));
    if (name === 'no_of_cells') return String(Math.floor(rnd() * 17));
    if (name === 'soc' || name === 'soh') return (rnd() * 100).toFixed(pick(rnd, [0, 1, 2]));
    return String(Math.round(rnd() * 3e4) / 100);
  }
  return pick(rnd, NUMBER_TEXTS);
}

function timeText(rnd: Rnd): string {
  const r = rnd();
  if (r < 0.7) return String(NOW - Math.floor(rnd() * 3_600_000));
  return pick(rnd, [
    'null', String(Math.floor(NOW / 1000)), `${NOW - 5}.0`, `${NOW}.5`, '1.7641e12', String(NOW + 3_600_000), String(NOW - 1024 * 7 * 86_400_000),
    '"' + String(NOW) + '"', '99999999999', '9200000000001', 'true', String(NOW - 100 * 86_400_000),
  ]);
}

function record(rnd: Rnd, hostile: boolean): string {
  const type = rnd() < 0.5 ? 'gps' : 'can';
  const names: string[] = [];
  // Now and then every field the schema names, with the longest values: the row writer's worst case.
  const full = rnd() < 0.05;
  if (type === 'gps') names.push(...GPS_FIELDS.filter(() => !hostile || rnd() < 0.95));
  else names.push(...CAN_FIELDS.filter(() => full || rnd() < 0.4));
  if (rnd() < 0.15) names.push(...UNKNOWN_NAMES.filter(() => rnd() < 0.3));
  if (hostile && rnd() < 0.2) names.push(pick(rnd, ['new_param', 'soc', 'lat', '__proto__', 'cell_temperature_07', '_x', '9x', 'time', 'So\\u0063']));
  if (rnd() < 0.1) names.splice(Math.floor(rnd() * names.length), 0, pick(rnd, CAN_FIELDS));
  const members = names.map((n) => {
    const value = full && type === 'can' ? pick(rnd, ['-1.7976931348623157e308', '-5e-324', '-1e21', '-2.2250738585072014e-308'])
      : hostile && rnd() < 0.05 ? pick(rnd, BAD_VALUES) : hostile && rnd() < 0.04 ? 'null' : numberText(rnd, n, hostile);
    return `${sp(rnd)}"${n}"${sp(rnd)}:${sp(rnd)}${value}`;
  });
  if (type === 'gps' || rnd() < 0.8) members.splice(Math.floor(rnd() * (members.length + 1)), 0, `"time":${sp(rnd)}${hostile && rnd() < 0.3 ? timeText(rnd) : String(NOW - Math.floor(rnd() * 3_600_000))}`);
  const parts = [
    `"vehicleno":${sp(rnd)}${hostile && rnd() < 0.3 ? pick(rnd, PLATES) : pick(rnd, PLAIN_PLATES)}`,
    `"type":${sp(rnd)}${hostile && rnd() < 0.05 ? pick(rnd, ['"GPS"', '"x"', '1', 'null']) : `"${type}"`}`,
    `"data":${sp(rnd)}${hostile && rnd() < 0.03 ? pick(rnd, ['[]', 'null', '"x"']) : `{${members.join(',')}${sp(rnd)}}`}`,
  ];
  if (hostile && rnd() < 0.05) parts.splice(Math.floor(rnd() * 3), 1);
  if (hostile && rnd() < 0.05) parts.push(pick(rnd, ['"extra":1', '"vehicleno":"DUP1"', '"__proto__":{"x":1}', '"bulkData":[]', '"type":"can"']));
  for (let i = parts.length - 1; i > 0; i--) {
    if (rnd() < 0.3) {
      const j = Math.floor(rnd() * (i + 1));
      [parts[i], parts[j]] = [parts[j]!, parts[i]!];
    }
  }
  return `{${sp(rnd)}${parts.join(`,${sp(rnd)}`)}${sp(rnd)}}`;
}

function push(rnd: Rnd, hostile: boolean): { text: string; shape: PushShape } {
  const shape = pick(rnd, ['any', 'any', 'bulk', 'realtime'] as const);
  if (rnd() < 0.3) return { text: record(rnd, hostile), shape };
  const items = Array.from({ length: Math.floor(rnd() * 30) }, () => (hostile && rnd() < 0.03 ? pick(rnd, ['1', '"x"', 'null', '[]', '[{"a":1}]']) : record(rnd, hostile)));
  let text = `{${sp(rnd)}"bulkData"${sp(rnd)}:${sp(rnd)}[${items.join(`,${sp(rnd)}`)}]${sp(rnd)}}`;
  if (hostile && rnd() < 0.15) {
    text = pick(rnd, [
      () => text.replace(/}$/, ',"other":1}'),
      () => text.replace(/^\{/, '{"x":[1],'),
      () => text.replace(/]\s*}$/, ',]}'),
      () => text.slice(0, Math.floor(rnd() * text.length)),
      () => `\ufeff${text}`,
      () => `${text} x`,
      () => text.replace(/"bulkData"/, '"bulkData":5,"bulkData"'),
      () => text.replace(/:\s*(\d)/, ': 0$1'),
      () => text.replace(/\d\.\d/, '1.'),
    ])();
  }
  return { text, shape };
}

function bytesOf(rnd: Rnd, text: string, hostile: boolean): Uint8Array {
  const b = Buffer.from(text, 'utf8');
  if (!hostile || rnd() > 0.03 || b.length === 0) return b;
  // Invalid UTF-8 somewhere: a lone continuation byte, a truncated sequence, an overlong form.
  const at = Math.floor(rnd() * b.length);
  const bad = pick(rnd, [[0x80], [0xc3], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xff]]);
  return Buffer.concat([b.subarray(0, at), Buffer.from(bad), b.subarray(at)]);
}

// ---- an independent reading, for the bodies the scanner declines ------------------------------

/*
 * Node's own UTF-8 check and JSON.parse, the shape by hand, each record's verdict by the published
 * JSON Schema (Ajv), and its point built plainly from the parsed record: none of the receiver's code
 * but the schema's data. What a schema cannot say exactly (schema.test.ts's RECEIVER_ONLY: numeric
 * strings in exponent notation or past 15 digits) leaves that record's verdict unread ("?").
 */
const ajv = new Ajv2020({ strict: true, strictTypes: false, strictNumbers: false, allowUnionTypes: true, allowMatchingProperties: true });
const schemaSays = ajv.compile(pushRecordSchema);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const MEASUREMENT: Record<string, string> = { gps: 'gps', can: 'can' };

interface Reading {
  refused?: string;
  verdicts?: string[];
  /** Each stored point as `measurement,tag time` and its fields sorted. */
  points?: string[];
}

function doubtful(v: unknown): boolean {
  if (typeof v === 'string' && /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(v)) return /[eE]/.test(v) || v.replace(/[^0-9]/g, '').replace(/^0+/, '').length > 15;
  if (Array.isArray(v)) return v.some(doubtful);
  return isObject(v) && Object.values(v).some(doubtful);
}

function plainNumber(v: unknown): number | undefined {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '') return Number(v);
  return undefined;
}

function independentReading(bytes: Uint8Array, shape: PushShape): Reading {
  if (!isUtf8(bytes)) return { refused: 'invalid_text' };
  let body: unknown;
  try {
    // A byte order mark is read past (RFC 8259 lets a parser ignore one), as the receiver's decoder does.
    body = JSON.parse(Buffer.from(bytes).toString('utf8').replace(/^\ufeff/, ''));
  } catch {
    return { refused: 'invalid_json' };
  }
  const bulk = isObject(body) && Object.prototype.hasOwnProperty.call(body, 'bulkData');
  if (!isObject(body) || (bulk && !Array.isArray(body.bulkData)) || (shape === 'bulk' && !bulk) || (shape === 'realtime' && bulk)) return { refused: 'invalid_shape' };
  const items = bulk ? (body.bulkData as unknown[]) : [body];
  const verdicts: string[] = [];
  const points: string[] = [];
  for (const item of items) {
    const ok = schemaSays(item);
    verdicts.push(doubtful(item) ? '?' : ok ? 'stored' : 'rejected');
    if (!ok || doubtful(item) || !isObject(item) || !isObject(item.data)) continue;
    const data = item.data;
    const sensors = plainNumber(data.no_of_temperature_sensors);
    const fields: string[] = [];
    for (const [k, v] of Object.entries(data)) {
      const x = plainNumber(v);
      if (k === 'time' || k === '__proto__' || x === undefined) continue;
      const sensor = /^cell_temperature_(\d{2})$/.exec(k);
      if (item.type === 'can' && sensor && sensors !== undefined && Number(sensor[1]) > sensors) continue;
      fields.push(`${k}=${Object.is(x, -0) ? 0 : x}`);
    }
    const time = data.time === undefined || data.time === null ? NOW : Number(data.time);
    const tag = String(item.vehicleno).replace(/[,= ]/g, '\\$&');
    if (fields.length > 0) points.push(`${MEASUREMENT[String(item.type)]},vehicleno=${tag} ${time} ${fields.sort().join(',')}`);
  }
  return { verdicts, points: points.sort() };
}

/** The general path's result in the independent reading's terms (records it leaves unread, `?`, left out). */
function readAlone(v: Verdict, other: Reading): Reading {
  if ('refused' in v) return { refused: v.refused };
  const rejected = new Set(v.sorted.rejected.map((r) => r.index));
  const unread = (i: number) => other.verdicts?.[i] === '?';
  const stored = Array.from({ length: v.count }, (_, i) => i).filter((i) => !rejected.has(i));
  const read = readRows(Buffer.concat(v.sorted.rows.map((r) => r.buf.subarray(0, r.len))));
  const lines = read.lines.texts();
  const points: string[] = [];
  lines.forEach((line, k) => {
    if (unread(stored[read.sources[k]!]!)) return;
    const [head, fields, time] = splitLine(line);
    points.push(`${head} ${time} ${fields.split(',').sort().join(',')}`);
  });
  return { verdicts: Array.from({ length: v.count }, (_, i) => (unread(i) ? '?' : rejected.has(i) ? 'rejected' : 'stored')), points: points.sort() };
}

/** A line's measurement and tag, fields, and time (tags hold escaped spaces). */
function splitLine(line: string): [string, string, string] {
  const parts = line.split(/(?<!\\) /);
  return [parts[0]!, parts[1]!, parts[2]!];
}

describe('the scanner (scan.ts) against the general path', () => {
  const plausibility = new Plausibility({ maxAheadMs: 15 * 60_000, maxAgeMs: 90 * 86_400_000, ...rangeRules([]) });
  const setups = [
    { partitions: 1, flatten: { temperatureSentinels: [-40] }, plausibility },
    { partitions: 3, flatten: { temperatureSentinels: [-40, 0], packHealth: true }, plausibility },
    { partitions: 1, flatten: { temperatureSentinels: [] }, plausibility: undefined },
    // A receiver told that a live worker reads a smaller dictionary: the names past it go by name.
    { partitions: 2, flatten: { temperatureSentinels: [-40], dictionary: 40 }, plausibility },
  ];

  it('gives the same rows, answers and quarantine on random and hostile pushes, and reads most plain records itself', () => {
    let plain = 0;
    let records = 0;
    let declined = 0;
    let compared = 0;
    for (let n = 0; n < cases(6_000); n++) {
      const rnd = mulberry32(n + 1);
      const hostile = n % 3 !== 0;
      const { text, shape } = push(rnd, hostile);
      const bytes = bytesOf(rnd, text, hostile);
      const setup = setups[n % setups.length]!;
      // No entry is cut: the scanner keeps a record's own text, the general path its JSON, compared as JSON.
      const opts = { ...setup, quarantineRawLimit: 1_000_000 };
      const want = generalPath(bytes, shape, new RecordSorter(facts, opts));

      const sorter = new RecordSorter(facts, opts);
      let stored = 0;
      const counting = Object.assign(Object.create(sorter) as RecordSorter, {
        stored: (type: RecordTypeInfo, time: number) => {
          stored++;
          sorter.stored(type, time);
        },
        item: (i: number, item: unknown, text: string) => sorter.item(i, item, text),
      });
      const scanned = scanPush(bytes, shape, counting, { plausibility: setup.plausibility, flatten: setup.flatten, receivedAt: NOW });
      let got: Verdict;
      if (scanned) {
        sorter.finish(() => text);
        got = { ...scanned, sorted: sorter };
        if (!hostile) {
          plain += stored;
          records += scanned.count;
        }
      } else {
        declined++;
        got = generalPath(bytes, shape, new RecordSorter(facts, opts));
        // Declined bodies are the general path's alone: held to a reading that shares none of its code.
        if (setup.plausibility === undefined) {
          compared++;
          const alone = independentReading(bytes, shape);
          expect({ n, text: text.slice(0, 2000), ...readAlone(got, alone) }).toEqual({ n, text: text.slice(0, 2000), ...alone });
        }
      }
      if (JSON.stringify(seen(got)) !== JSON.stringify(seen(want))) {
        expect({ n, shape, text: text.slice(0, 2000), ...(seen(got) as object) }).toEqual({ n, shape, text: text.slice(0, 2000), ...(seen(want) as object) });
      }
    }
    // The benign third: plain records are read by the scanner, not handed over.
    expect(plain / records).toBeGreaterThan(0.9);
    expect(declined).toBeGreaterThan(cases(100));
    expect(compared).toBeGreaterThan(cases(100));
  });
});
