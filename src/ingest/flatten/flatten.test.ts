import { describe, expect, it } from 'vitest';
import { Point } from '@influxdata/influxdb-client';
import { flattenRecord, flattenRecords } from './flatten.js';
import { escapeTag, formatFloat, unrepresentableTag } from '../../telemetry/lineProtocol.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';

const opts = { temperatureSentinels: [-40] };

const ALPHABET = ['a', 'Z', '7', ' ', ',', '=', '"', "'", '\\', 'Ü', 'ø', 'त', '😀', '-', '_', '\t'.replace('\t', '#')];

function randomString(rnd: () => number): string {
  const n = 1 + Math.floor(rnd() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
  return s;
}

function randomNumber(rnd: () => number): number {
  switch (Math.floor(rnd() * 6)) {
    case 0: return Math.floor(rnd() * 1000) - 500;
    case 1: return (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20);
    case 2: return Number((rnd() * 100).toFixed(3));
    case 3: return rnd() < 0.5 ? 0 : -0;
    case 4: return (rnd() < 0.5 ? -1 : 1) * 1.7976931348623157e308 * rnd();
    default: return rnd() * 1e-300;
  }
}

describe('line protocol', () => {
  it('matches @influxdata/influxdb-client Point for random records (escaping and float formatting)', () => {
    const rnd = mulberry32(20261121);
    let compared = 0;
    for (let i = 0; i < 5_000; i++) {
      const vehicleno = randomString(rnd);
      if (unrepresentableTag(vehicleno)) continue;
      const names = ['alti', 'battery_voltage', 'cell_voltage_01', 'lat', 'soc', 'zz_custom'].filter(() => rnd() < 0.7);
      if (names.length === 0) continue;
      const fields: Record<string, number> = {};
      for (const n of names) fields[n] = randomNumber(rnd);
      const time = 1_600_000_000_000 + Math.floor(rnd() * 1e11);
      const record: TelemetryRecord = { vehicleno, type: rnd() < 0.5 ? 'gps' : 'can', time, fields };
      const p = new Point(record.type).tag('vehicleno', vehicleno).timestamp(time);
      for (const n of names) p.floatField(n, fields[n]!);
      expect(flattenRecord(record, opts).line).toBe(p.toLineProtocol());
      compared++;
    }
    expect(compared).toBeGreaterThan(3_000);
  });

  it('escapes commas, spaces and equals signs in tags and nothing else', () => {
    expect(escapeTag('a b,c=d"e\\f')).toBe('a\\ b\\,c\\=d"e\\f');
    expect(escapeTag('plain')).toBe('plain');
  });

  it('names the tag values line protocol cannot carry', () => {
    expect(unrepresentableTag('ok\\fine')).toBeUndefined();
    expect(unrepresentableTag('trailing\\')).toMatch(/end with a backslash/);
    expect(unrepresentableTag('a\\,b')).toMatch(/before a comma, space or equals/);
    expect(unrepresentableTag('a\\ b')).toMatch(/before a comma, space or equals/);
  });

  it('writes every number as a float, whatever its value', () => {
    expect(formatFloat(85)).toBe('85');
    expect(formatFloat(85.5)).toBe('85.5');
    expect(formatFloat(-0)).toBe('0');
    expect(formatFloat(1e21)).toBe('1e+21');
  });
});

describe('flatten', () => {
  const can = (fields: Record<string, number>): TelemetryRecord => ({ vehicleno: 'V1', type: 'can', time: 1_700_000_000_000, fields });

  it('writes only the fields a record carried, in its order, tagged by vehicle, stamped in ms', () => {
    expect(flattenRecord(can({ soc: 80, current: -1.5 }), opts).line).toBe('can,vehicleno=V1 soc=80,current=-1.5 1700000000000');
  });

  it('drops temperature sensors numbered beyond no_of_temperature_sensors', () => {
    const r = flattenRecord(can({ no_of_temperature_sensors: 2, cell_temperature_01: 30, cell_temperature_02: 31, cell_temperature_03: 25 }), opts);
    expect(r.line).toBe('can,vehicleno=V1 no_of_temperature_sensors=2,cell_temperature_01=30,cell_temperature_02=31 1700000000000');
    expect(r.dropped).toEqual(['cell_temperature_03']);
  });

  it('drops configured sentinel readings but keeps the same value in other fields', () => {
    const r = flattenRecord(can({ cell_temperature_04: -40, current: -40 }), opts);
    expect(r.line).toBe('can,vehicleno=V1 current=-40 1700000000000');
    expect(flattenRecord(can({ cell_temperature_04: -40 }), { temperatureSentinels: [] }).line).toBe(
      'can,vehicleno=V1 cell_temperature_04=-40 1700000000000',
    );
  });

  it('writes no point for a record left with no field, and counts it', () => {
    const b = flattenRecords([can({ cell_temperature_01: -40 }), can({ soc: 1 })], opts);
    expect(b).toEqual({ lines: ['can,vehicleno=V1 soc=1 1700000000000'], sources: [1], droppedFields: 1, emptyRecords: 1 });
  });

  it('is a pure function of the record, so a redelivery rewrites the same point', () => {
    const r = can({ soc: 1, soh: 2 });
    expect(flattenRecord(r, opts)).toEqual(flattenRecord(structuredClone(r), opts));
  });
});
