import { describe, expect, it } from 'vitest';
import { flattenRecords, type FlattenOptions } from './flatten.js';
import { PointRows, readRows, recordsOf, rowsOf, writeRecord } from './points.js';
import { fieldNames } from '../../telemetry/fields.js';
import { fieldPick, writtenRecordOf, type TelemetryRecord } from '../../telemetry/record.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';
const CAN_FIELDS = fieldNames('can');
const GPS_FIELDS = fieldNames('gps');

/*
 * The rows a job carries (payload v3) against flatten.ts, the rules they were written by: the lines a
 * worker builds from the rows by copying bytes are flattenRecords' lines, field for field (the order of
 * fields within a line is the dictionary's; InfluxDB keeps fields by name), with the same records behind
 * them, the same empty records, and the same written records for the fleet.
 */
const NAMES = [...GPS_FIELDS, ...CAN_FIELDS, 'cell_temperature_00', 'cell_temperature_07', 'cell_temperature_99', 'x_cell_temperature_01', 'new_param', 'zz9'];
const PLATES = ['KA01AB1234', 'a b,c=d"e\\f', 'Ünïcødé 😀', 'x=y', ' lead', 'trail ', 'semi;colon:x'];
/** Fields of both types, a position among them. */
const PICK = fieldPick(['soc', 'lat', 'speed', 'alert_short_circuit', 'lng', 'current']);
const VALUES = [-40, -40.5, 0, -0, 1, 2, 3, 6, 7, 25.5, 1e21, 5e-324, 0.1 + 0.2, -1.5e-7, 123456789012345680000];

/** A line with its fields in name order, so lines that differ only in field order compare equal. */
function canonical(line: string): string {
  const [head, fields, time] = line.split(/(?<!\\) /);
  return `${head} ${fields!.split(',').sort().join(',')} ${time}`;
}

function randomRecords(seed: number, n: number): TelemetryRecord[] {
  const rnd = mulberry32(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  return Array.from({ length: n }, (_, i) => {
    const fields = Object.create(null) as Record<string, number>;
    const count = Math.floor(rnd() * 40);
    for (let k = 0; k < count; k++) fields[pick(NAMES)] = rnd() < 0.7 ? pick(VALUES) : Math.round(rnd() * 1e6) / 1000 - 500;
    if (rnd() < 0.3) fields.no_of_temperature_sensors = Math.floor(rnd() * 8);
    if (rnd() < 0.3) fields.no_of_cells = Math.floor(rnd() * 17);
    return { vehicleno: pick(PLATES), type: rnd() < 0.6 ? 'can' : 'gps', time: 1_700_000_000_000 + Math.floor(rnd() * 1e9), fields };
  });
}

describe('points as a job carries them (rows)', () => {
  for (const opts of [{ temperatureSentinels: [-40] }, { temperatureSentinels: [], packHealth: true }, { temperatureSentinels: [-40, 0, 25.5], packHealth: true }] as FlattenOptions[]) {
    it(`read back, are flatten's lines, records and writtenRecords (${JSON.stringify(opts)})`, () => {
      for (let seed = 1; seed <= 8; seed++) {
        const records = randomRecords(seed, 300);
        const rows = rowsOf(records, opts);
        const read = readRows(rows.buf.subarray(0, rows.len));
        const want = flattenRecords(records, opts);
        expect(read.lines.texts().map(canonical)).toEqual(want.lines.map(canonical));
        expect(read.sources).toEqual(want.sources);
        expect(read.measurements).toEqual(want.lines.map((l) => l.slice(0, l.indexOf(','))));
        expect(read.records).toBe(records.length);
        expect(read.emptyRecords).toBe(want.emptyRecords);
        expect(rows.dropped.reduce((a, b) => a + b, 0)).toBe(want.droppedFields);
        expect(read.writtenRecords).toEqual(records.map(writtenRecordOf).map((s) => ({ ...s, ...(s.lat === undefined ? {} : { lat: s.lat + 0, lng: s.lng! + 0 }) })));
        // With a pick, each written record carries the picked fields' values (NaN where the record had none; -0 is written 0).
        const picked = readRows(rows.buf.subarray(0, rows.len), PICK).writtenRecords;
        records.forEach((r, i) => {
          const s = picked[i]!;
          const got = PICK.names.map((_, j) => s.values![s.at! + j]!);
          expect(got).toEqual(PICK.names.map((name) => (Object.hasOwn(r.fields, name) ? r.fields[name]! + 0 : NaN)));
        });
        // The records behind the rows: their fields less the unused sensors, every value the same double (-0 is written 0).
        const back = recordsOf(rows);
        expect(back.length).toBe(records.length);
        for (let i = 0; i < records.length; i++) {
          const r = records[i]!;
          const kept = flattenRecords([r], opts).lines[0];
          const keptNames = kept === undefined ? [] : kept.split(/(?<!\\) /)[1]!.split(',').map((f) => f.slice(0, f.indexOf('=')));
          expect(back[i]!.vehicleno).toBe(r.vehicleno);
          expect(back[i]!.type).toBe(r.type);
          expect(back[i]!.time).toBe(r.time);
          expect(Object.keys(back[i]!.fields).sort()).toEqual(keptNames.sort());
          for (const name of keptNames) expect(back[i]!.fields[name]).toBe(r.fields[name]! + 0);
        }
      }
    });
  }

  it('keep each record\'s rows apart, so a job may take any run of them', () => {
    const records = randomRecords(7, 50);
    const rows = new PointRows(16);
    for (const r of records) writeRecord(rows, r, { temperatureSentinels: [], packHealth: true });
    for (const [from, to] of [[0, 1], [3, 17], [49, 50], [0, 50]] as const) {
      const [a, b] = rows.span(from, to);
      expect(readRows(rows.buf.subarray(a, b)).records).toBe(to - from);
      expect(readRows(rows.buf.subarray(a, b)).lines.texts()).toEqual(readRows(sub(rowsOf(records.slice(from, to), { temperatureSentinels: [], packHealth: true }))).lines.texts());
    }
  });

  it('refuses rows it cannot read instead of guessing', () => {
    for (const bad of ['x1 0:1 V\n', 'g1 0:1 V', 'g1 1:1,2 V\n', 'g1 3:1 V\n', 'p1:1\n', 'g1 !:1 V\n']) {
      expect(() => readRows(Buffer.from(bad))).toThrow(/malformed/);
    }
  });
});

function sub(rows: PointRows): Buffer {
  return rows.buf.subarray(0, rows.len);
}

describe('the row writer at its worst case', () => {
  it('writes every field the schema names, the longest values, 256 more by name and a plate of escapes whole, and reads them back exactly', () => {
    const fields = Object.create(null) as Record<string, number>;
    const longest = [-1.7976931348623157e308, -5e-324, -1e21, -2.2250738585072014e-308];
    CAN_FIELDS.forEach((f, i) => (fields[f] = longest[i % longest.length]!));
    // Every sensor in use, so that the unused-sensor rule leaves every field in.
    fields.no_of_temperature_sensors = 6;
    for (let i = 0; i < 256; i++) fields[`p${String(i).padStart(3, '0')}${'x'.repeat(124)}`] = -1.2345678901234567e-300;
    const r: TelemetryRecord = { vehicleno: ',= '.repeat(42) + 'x', type: 'can', time: 9_200_000_000_000, fields };
    for (const dictionary of [undefined, 0, 40]) {
      // A small start, so the row outgrows the buffer: the writer must reserve what it writes.
      const rows = new PointRows(16);
      writeRecord(rows, r, { temperatureSentinels: [], packHealth: true, ...(dictionary === undefined ? {} : { dictionary }) });
      expect(rows.len).toBeGreaterThan(40_000);
      const [back] = recordsOf(rows);
      expect(back).toEqual({ ...r, fields: { ...fields } });
      expect(readRows(rows.buf.subarray(0, rows.len)).lines.texts().map(canonical)).toEqual(flattenRecords([r], { temperatureSentinels: [], packHealth: true }).lines.map(canonical));
    }
  });
});
