import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { readRows, rowsOf } from '../flatten/points.js';
import { decodeJob, encodeJob, encodePointsJob, jobRows } from './codec.js';

/**
 * Every job payload version as a release wrote it (`src/formats/testdata/payloads.json`), read by this release's
 * readers: a change to a reader that would misread a job queued before an upgrade fails here. The text
 * forms are also what this release writes, byte for byte (the deflated ones are read only: zlib's
 * output may differ between Node releases). `WRITE_GOLDEN=1` writes the fixture anew, which only a
 * release that adds a version should do (keeping the versions already there).
 */
const FILE = new URL('../../formats/testdata/payloads.json', import.meta.url);
const T = 1_763_700_000_000;
const RECORDS: TelemetryRecord[] = [
  { vehicleno: 'KA01AB1234', type: 'gps', time: T, fields: { lat: 12.9716, lng: 77.5946, alti: 920, speed: 38.5, ignstatus: 1 } },
  { vehicleno: 'MH12XY9876', type: 'can', time: T + 1_000, fields: { soc: 44, battery_voltage: 51.25, current: -12.5, cell_temperature_01: 29.5, new_param: 1e-7, alert_over_temp: 0 } },
  { vehicleno: 'Ünïcødé ø', type: 'can', time: T + 2_000, fields: { soc: 81.5, no_of_cells: 16, cell_voltage_01: 3.312, cell_voltage_02: 3.298, no_of_temperature_sensors: 1, cell_temperature_01: 31, cell_temperature_02: -40 } },
];
const FLATTEN = { temperatureSentinels: [-40], packHealth: true };

interface Golden {
  v1: unknown;
  v2: unknown;
  v2z: unknown;
  v3: unknown;
  v3z: unknown;
  /** What a worker writes of the v3 jobs: the lines. */
  lines: string[];
}

function written(): Golden {
  const rows = rowsOf(RECORDS, FLATTEN);
  const json = (x: unknown) => JSON.parse(JSON.stringify(x)) as unknown;
  return {
    v1: json({ v: 1, records: RECORDS }),
    v2: json(encodeJob(RECORDS, undefined, false)),
    v2z: json(encodeJob(Array.from({ length: 60 }, (_, i) => ({ ...RECORDS[i % 3]!, time: T + i })))),
    v3: json(encodePointsJob([{ rows, from: 0, to: RECORDS.length }], false)),
    v3z: json(encodePointsJob([{ rows, from: 0, to: RECORDS.length }], true)),
    lines: readRows(rows.buf.subarray(0, rows.len)).lines.texts(),
  };
}

describe('job payloads as releases wrote them (golden fixture)', () => {
  if (process.env.WRITE_GOLDEN === '1') writeFileSync(FILE, `${JSON.stringify(written(), null, 1)}\n`);
  const golden = JSON.parse(readFileSync(FILE, 'utf8')) as Golden;

  it('reads v1 and v2 (text and deflated) into the records they were written from', () => {
    expect(decodeJob(golden.v1)).toEqual(RECORDS);
    expect(decodeJob(golden.v2)).toEqual(RECORDS);
    expect(decodeJob(golden.v2z)).toEqual(Array.from({ length: 60 }, (_, i) => ({ ...RECORDS[i % 3]!, time: T + i })));
  });

  it('reads v3 (text and deflated) into the lines a worker writes', () => {
    for (const job of [golden.v3, golden.v3z]) expect(readRows(jobRows(job)!).lines.texts()).toEqual(golden.lines);
    // Only the fields sent, in the schema's order, an unknown one last; the unused sensor (-40) left out.
    expect(golden.lines).toContain('can,vehicleno=MH12XY9876 battery_voltage=51.25,current=-12.5,soc=44,cell_temperature_01=29.5,alert_over_temp=0,new_param=1e-7 1763700001000');
    expect(golden.lines.join('\n')).not.toContain('cell_temperature_02');
  });

  it('writes the text forms byte for byte as the fixture holds them', () => {
    const now = written();
    expect(now.v2).toEqual(golden.v2);
    expect(now.v3).toEqual(golden.v3);
    expect(now.lines).toEqual(golden.lines);
  });
});
