import { describe, expect, it } from 'vitest';
import { fieldNames } from '../../telemetry/fields.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { decodeJob, encodeJob, encodePointsJob, jobRecordCount, V2_NAMES, type JobPayloadV1 } from './codec.js';
import { recordsOf, rowsOf } from '../flatten/points.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';
const CAN_FIELDS = fieldNames('can');
const GPS_FIELDS = fieldNames('gps');

/** What BullMQ does to job data: JSON text in Redis, parsed again by the worker. */
const throughRedis = (data: unknown): unknown => JSON.parse(JSON.stringify(data));
const roundTrip = (records: TelemetryRecord[]): TelemetryRecord[] => decodeJob(throughRedis(encodeJob(records)));

/** Exactly equal: same keys in the same order, every number the same double (-0 is not 0). */
function expectExact(got: TelemetryRecord[], want: TelemetryRecord[]): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    expect(g.vehicleno).toBe(w.vehicleno);
    expect(g.type).toBe(w.type);
    expect(Object.is(g.time, w.time)).toBe(true);
    expect(Object.keys(g.fields)).toEqual(Object.keys(w.fields));
    for (const k of Object.keys(w.fields)) {
      if (!Object.is(g.fields[k], w.fields[k])) throw new Error(`record ${i} field ${k}: got ${g.fields[k]}, want ${w.fields[k]}`);
    }
  }
}

const T = 1_763_700_000_000;
const NAMES = [...GPS_FIELDS, ...CAN_FIELDS, 'new_param', 'zz_custom_42', 'Xy'];
const PLATES = ['KA01AB1234', 'MH12XY9876', 'a b,c=d"e\\f', 'Ünïcødé ø त 😀', '\ud800lone', 'x'.repeat(128), ''];

function randomNumber(rnd: () => number): number {
  switch (Math.floor(rnd() * 9)) {
    case 0: return Math.floor(rnd() * 1000) - 500;
    case 1: return (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20);
    case 2: return Number((rnd() * 100).toFixed(3));
    case 3: return rnd() < 0.5 ? 0 : -0;
    case 4: return (rnd() < 0.5 ? -1 : 1) * 1.7976931348623157e308 * rnd();
    case 5: return rnd() * 1e-300;
    case 6: return [1e21, -1e21, 1e-7, 5e-324, -5e-324, 2 ** 53, 2 ** 53 + 2, 0.1 + 0.2][Math.floor(rnd() * 8)]!;
    case 7: return [NaN, Infinity, -Infinity][Math.floor(rnd() * 3)]!;
    default: return Math.round(rnd() * 4000) / 1000;
  }
}

function randomRecords(rnd: () => number, n: number): TelemetryRecord[] {
  const out: TelemetryRecord[] = [];
  for (let i = 0; i < n; i++) {
    const fields: Record<string, number> = {};
    const count = Math.floor(rnd() * (rnd() < 0.2 ? NAMES.length : 12));
    for (let k = 0; k < count; k++) fields[NAMES[Math.floor(rnd() * NAMES.length)]!] = randomNumber(rnd);
    out.push({
      vehicleno: PLATES[Math.floor(rnd() * PLATES.length)]!,
      type: rnd() < 0.5 ? 'gps' : 'can',
      time: T + Math.floor(rnd() * 1e9) * (rnd() < 0.5 ? 1 : -1),
      fields,
    });
  }
  return out;
}

describe('job payload v2', () => {
  it('round-trips random records exactly, through JSON as BullMQ stores them', () => {
    const rnd = mulberry32(20261121);
    for (const n of [0, 1, 2, 7, 50, 400, 3_000]) {
      for (let rep = 0; rep < 4; rep++) {
        const records = randomRecords(rnd, n);
        expectExact(roundTrip(records), records);
      }
    }
  });

  it('keeps -0, exponent floats, extreme doubles and non-finite values bit for bit', () => {
    const values = [-0, 0, 1e21, -1e-7, 5e-324, 1.7976931348623157e308, 0.1 + 0.2, 123456789012345680000, NaN, Infinity, -Infinity];
    const fields = Object.fromEntries(values.map((v, i) => [`v${i}`, v]));
    const records: TelemetryRecord[] = [{ vehicleno: 'V', type: 'can', time: T, fields }];
    expectExact(roundTrip(records), records);
    // and in a job big enough to be deflated
    const many = Array.from({ length: 500 }, (_, i) => ({ ...records[0]!, time: T + i }));
    expect((encodeJob(many) as { z?: string }).z).toBeDefined();
    expectExact(roundTrip(many), many);
  });

  it('keeps unknown CAN fields, unicode and unpaired surrogates in vehicleno, and field order', () => {
    const records: TelemetryRecord[] = [
      { vehicleno: 'Ünïcødé ø त 😀', type: 'can', time: T, fields: { brand_new_param: 7.25, soc: 81.5, zz: -0 } },
      { vehicleno: '\udc00\ud800', type: 'gps', time: T + 1, fields: { speed: 3, lat: 12.9716, lng: 77.5946, extra_1: 1e-7 } },
      { vehicleno: 'a b,c=d"e\\f', type: 'can', time: T + 2, fields: {} },
    ];
    expectExact(roundTrip(records), records);
  });

  it('keeps times that are not safe integers, or far from each other, exactly', () => {
    const times = [T + 0.5, -0, 2 ** 53 + 2, -(2 ** 60), 1e21, 0.1, 5e-324];
    const records: TelemetryRecord[] = times.map((time, i) => ({ vehicleno: `V${i}`, type: 'gps', time, fields: { lat: i } }));
    expectExact(roundTrip(records), records);
    const far: TelemetryRecord[] = [2 ** 52, -(2 ** 52), 2 ** 52, 0].map((time) => ({ vehicleno: 'V', type: 'can', time, fields: { soc: 1 } }));
    expectExact(roundTrip(far), far);
  });

  it('does not confuse field lists whose names, joined with commas, read alike', () => {
    const records: TelemetryRecord[] = [
      { vehicleno: 'V', type: 'can', time: T, fields: { 'a,b': 1 } },
      { vehicleno: 'V', type: 'can', time: T + 1, fields: { a: 2, b: 3 } },
      { vehicleno: 'V', type: 'can', time: T + 2, fields: { 'a,b': 4 } },
      { vehicleno: 'V', type: 'can', time: T + 3, fields: { a: 5, b: 6 } },
    ];
    expectExact(roundTrip(records), records);
  });

  it('keeps integer-like, reserved-looking and every spec field name', () => {
    const fields: Record<string, number> = { '0': 1, '17': 2, constructor: 3, toString: 4, hasOwnProperty: 5 };
    for (const [i, name] of [...V2_NAMES].entries()) fields[name] = i + 0.5;
    const records: TelemetryRecord[] = [{ vehicleno: 'V', type: 'can', time: T, fields }];
    expectExact(roundTrip(records), records);
  });

  it('carries more than two record types', () => {
    const records = ['gps', 'can', 'obd', 'can', 'x'].map((type, i) => ({ vehicleno: 'V', type, time: T + i, fields: { a: i } })) as unknown as TelemetryRecord[];
    expectExact(roundTrip(records), records);
  });

  it('stores a CAN record of all 69 fields in a small fraction of its JSON', () => {
    const rnd = mulberry32(7);
    const records: TelemetryRecord[] = Array.from({ length: 1_000 }, (_, i) => ({
      vehicleno: `KA${String(i % 200).padStart(2, '0')}AB${1000 + (i % 200)}`,
      type: 'can',
      time: T + i * 10,
      fields: Object.fromEntries(CAN_FIELDS.map((f) => [f, f.startsWith('alert') ? 0 : Math.round(rnd() * 4000) / 1000])),
    }));
    const v1 = JSON.stringify({ v: 1, records });
    const v2 = JSON.stringify(encodeJob(records));
    expect(v2.length).toBeLessThan(v1.length / 5);
    expectExact(decodeJob(JSON.parse(v2)), records);
  });

  it('says how many records a job holds without decoding it', () => {
    const records = randomRecords(mulberry32(3), 25);
    expect(jobRecordCount(throughRedis(encodeJob(records)))).toBe(25);
    expect(jobRecordCount({ v: 1, records })).toBe(25);
  });

  it('refuses payloads it does not know, naming the version', () => {
    expect(() => decodeJob({ v: 4 })).toThrow('unknown job payload version 4');
    expect(() => decodeJob({ v: 3 })).toThrow('job payload v3: no rows');
    expect(() => decodeJob(null)).toThrow('unknown job payload version');
    // [vehiclenos, types, names, vehicle, counts, fieldIdx, times, columns, specials]
    expect(() => decodeJob({ v: 2, n: 1, c: [['V'], [], [], [0], [0], [], [1, T], [], []] })).toThrow(/record 0 is malformed/);
    expect(() => decodeJob({ v: 2, n: 1, c: [['V'], ['gps'], ['x'], [0], [4], [0], [1, T], [[1]], []] })).toThrow(/record 0 is malformed/);
    expect(() => decodeJob({ v: 2, n: 1, c: [['V'], ['gps'], ['x'], [0], [2], [0, 0], [1, T], [[1]], []] })).toThrow(/malformed/);
    expect(() => decodeJob({ v: 2, n: 2, c: [['V'], ['gps'], [], [0], [0], [], [1, T], [], []] })).toThrow(/says 2 records, holds 1/);
    expect(() => decodeJob({ v: 2, n: 1, c: [['V'], ['gps'], [], [0], [0]] })).toThrow(/malformed/);
    expect(decodeJob({ v: 2, n: 1, c: [['V'], ['gps'], [0], [0], [2], [0], [1, T], [[12.5]], []] })).toEqual([
      { vehicleno: 'V', type: 'gps', time: T, fields: { lat: 12.5 } },
    ]);
  });
});

describe('job payload v1 (queued by earlier releases)', () => {
  it('still decodes as it was written', () => {
    const records: TelemetryRecord[] = [
      { vehicleno: 'KA01AB1234', type: 'gps', time: T, fields: { lat: 12.9716, lng: 77.5946, alti: 920, speed: 38.5, ignstatus: 1 } },
      { vehicleno: 'MH12XY9876', type: 'can', time: T + 1000, fields: { soc: 44, cell_temperature_01: 29.5, new_param: 1e-7 } },
    ];
    const v1: JobPayloadV1 = { v: 1, records };
    expect(decodeJob(throughRedis(v1))).toEqual(records);
  });
});

describe('job payload v3 (points as rows)', () => {
  const opts = { temperatureSentinels: [-40], packHealth: true };
  const records = (n: number, seed: number): TelemetryRecord[] => {
    const rnd = mulberry32(seed);
    return Array.from({ length: n }, (_, i) => {
      const fields = Object.create(null) as Record<string, number>;
      const names = i % 2 ? GPS_FIELDS : CAN_FIELDS;
      for (const name of names) if (rnd() < 0.7) fields[name] = Number((rnd() * 100).toFixed(3));
      fields.soc = 50;
      return { vehicleno: PLATES[i % 5]!, type: i % 2 ? 'gps' : 'can', time: T + i, fields };
    });
  };

  it('carries a small job as text and a large one deflated, and both decode to the records the rows hold', () => {
    for (const [n, form] of [[3, 't'], [2_000, 'z']] as const) {
      const want = records(n, n);
      const rows = rowsOf(want, opts);
      const job = throughRedis(encodePointsJob([{ rows, from: 0, to: n }])) as Record<string, unknown>;
      expect(job.v).toBe(3);
      expect(typeof job[form]).toBe('string');
      expect(jobRecordCount(job)).toBe(n);
      expect(decodeJob(job)).toEqual(recordsOf(rows));
      expect(decodeJob(job).map((r) => r.time)).toEqual(want.map((r) => r.time));
    }
  });

  it('leaves a large job as text when told not to deflate (no backlog), with the same records', () => {
    const want = records(2_000, 9);
    const rows = rowsOf(want, opts);
    const job = throughRedis(encodePointsJob([{ rows, from: 0, to: 2_000 }], false)) as Record<string, unknown>;
    expect(typeof job.t).toBe('string');
    expect(job.z).toBeUndefined();
    expect(decodeJob(job)).toEqual(recordsOf(rows));
  });

  it('takes any runs of several pushes\' rows, in order, and counts their unused sensors', () => {
    const a = records(10, 1);
    a[0]!.fields.cell_temperature_01 = -40;
    const b = records(7, 2);
    const ra = rowsOf(a, opts);
    const rb = rowsOf(b, opts);
    const job = throughRedis(encodePointsJob([{ rows: ra, from: 0, to: 4 }, { rows: rb, from: 2, to: 7 }])) as { n: number; d: number };
    expect(job.n).toBe(9);
    expect(job.d).toBe(1);
    expect(decodeJob(job)).toEqual([...recordsOf(ra).slice(0, 4), ...recordsOf(rb).slice(2, 7)]);
  });
});
