import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fieldNames } from '../../telemetry/fields.js';
import { unrepresentableTag } from '../../telemetry/lineProtocol.js';
import { plainRecord, validateRecord, validateWithZod } from './record.js';
import { VEHICLENO_MAX, type TelemetryRecord } from '../../telemetry/record.js';
import { Fleet } from '../../upstream/emulator/fleet.js';
import { canRecordData } from '../../upstream/emulator/can.js';
import { Rng } from '../../upstream/emulator/prng.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';
const GPS_FIELDS = fieldNames('gps');
const CAN_FIELDS = fieldNames('can');

/*
 * record.ts validates a record on two paths driven by one rule table: a plain path for input that is
 * plainly valid, and the zod schema for everything else (conversions, every error message). These
 * hold the plain path to zod's result (same record, same key order) on random and emulator input.
 */

const T = 1_763_700_000_000;
const NOW = 1_763_700_000_123;

function generator(seed: number) {
  const rnd = mulberry32(seed);
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const chance = (p: number) => rnd() < p;
  const value = (): unknown =>
    pick<() => unknown>([
      () => Math.round(rnd() * 1000) / 10,
      () => -rnd() * 1e6,
      () => pick([0, -0, 1, -1, 1e21, 5e-324, 1.7976931348623157e308]),
      () => String(Math.round(rnd() * 1000) / 100),
      () => pick([' 51.2 ', '+3', '-.5', '1e3', '1e400', '0x10', '', ' ', 'abc', '1.2.3', '.']),
      () => pick([true, false, null, undefined]),
      () => pick([NaN, Infinity, -Infinity]),
      () => pick([[], {}, [1], { a: 1 }]),
    ])();
  const time = (): unknown =>
    pick<() => unknown>([
      () => T + Math.floor(rnd() * 1e6),
      () => T / 1000,
      () => T + 0.5,
      () => String(T),
      () => `${T}.0`,
      () => pick([99_999_999_999, 100_000_000_000, 9_200_000_000_000, 9_200_000_000_001, 1_000_000_000, 999_999_999, 0, -0, -T]),
      () => pick([null, undefined, true, 'now', NaN, Infinity, [], {}]),
    ])();
  const vehicleno = (): unknown =>
    pick<() => unknown>([
      () => `KA${Math.floor(rnd() * 100)}AB${Math.floor(rnd() * 10000)}`,
      () => pick(['', ' ', '  x ', 'a\\', 'a\\,b', 'a\\ b', 'a\\=b', 'ok\\fine', 'tab\there', 'nl\n', '\u007f', 'Ünïcødé ø त 😀', 'a,b c=d"e', '\ud800']),
      () => 'x'.repeat(pick([127, 128, 129, 300])),
      () => '\u0001'.repeat(pick([1, 200])),
      () => pick([null, undefined, 7, true, [], {}]),
    ])();
  const fieldName = (): string =>
    pick([
      ...GPS_FIELDS,
      ...CAN_FIELDS,
      'time',
      'new_param',
      'X9',
      '_reserved',
      '9lives',
      'has space',
      'dash-ed',
      'ü',
      'a'.repeat(128),
      'a'.repeat(129),
      '__proto__',
      'constructor',
      'toString',
      '0',
      '17',
      '',
    ]);
  const data = (type: unknown): unknown => {
    if (chance(0.05)) return pick([undefined, null, 'data', 5, [], [{ lat: 1 }]]);
    const d: Record<string, unknown> = {};
    if (type === 'gps') {
      for (const f of [...GPS_FIELDS, 'time']) {
        if (chance(0.9)) d[f] = f === 'time' ? (chance(0.8) ? T + Math.floor(rnd() * 1e6) : time()) : chance(0.85) ? (f === 'lat' ? rnd() * 200 - 100 : f === 'lng' ? rnd() * 400 - 200 : rnd() * 100) : value();
      }
    } else {
      if (chance(0.7)) d.time = chance(0.8) ? T + Math.floor(rnd() * 1e6) : time();
      const n = Math.floor(rnd() * (chance(0.2) ? 80 : 10));
      for (let i = 0; i < n; i++) d[fieldName()] = chance(0.85) ? Math.round(rnd() * 1e5) / 1e3 : value();
    }
    if (chance(0.1)) d[fieldName()] = value();
    // JSON.parse makes `__proto__` an own key; a literal assignment would not.
    if (chance(0.05)) {
      const json = JSON.stringify(d);
      return JSON.parse(`{"__proto__":${JSON.stringify(value() ?? 1)}${json === '{}' ? '}' : `,${json.slice(1)}`}`);
    }
    return d;
  };
  return (): unknown => {
    if (chance(0.03)) return pick([null, undefined, 'record', 42, [], [1, 2], true]);
    const type = chance(0.9) ? pick(['gps', 'can']) : pick([undefined, 'GPS', 'obd', 3, null]);
    const r: Record<string, unknown> = {};
    if (chance(0.97)) r.vehicleno = chance(0.85) ? `KA01AB${Math.floor(rnd() * 9999)}` : vehicleno();
    if (chance(0.97)) r.type = type;
    if (chance(0.97)) r.data = data(type);
    if (chance(0.05)) r.extra = value();
    return r;
  };
}

describe('validateRecord', () => {
  it('refuses a data object that is not plain, on either path', () => {
    const errors = [new Date(T), new Map([['soc', 1]]), Object.create(null) as object, new (class X { soc = 1 })()].map((data) => {
      expect(plainRecord({ vehicleno: 'V', type: 'can', data }, NOW)).toBeUndefined();
      const r = validateRecord({ vehicleno: 'V', type: 'can', data }, NOW);
      return r.ok ? 'accepted' : r.error;
    });
    expect(errors).toEqual([
      'data: expected an object, got "2025-11-21T04:40:00.000Z"',
      'data: expected an object, got {}',
      // A prototype-less object is a plain one, here an empty one.
      'data: a CAN record must carry at least one parameter besides time',
      'data: expected an object, got {"soc":1}',
    ]);
  });

  it('keeps the limits it had', () => {
    expect(VEHICLENO_MAX).toBe(128);
    const r = validateRecord({ vehicleno: 'V', type: 'can', data: { soc: 1 } }, NOW);
    expect(r.ok && (r.record satisfies TelemetryRecord)).toBeTruthy();
  });
});

describe('the plain path of validateRecord', () => {
  it('gives exactly the record zod gives wherever it takes an input, on random input', () => {
    const next = generator(7_654_321);
    let taken = 0;
    for (let i = 0; i < 30_000; i++) {
      const input = next();
      const plain = plainRecord(input, NOW);
      if (plain === undefined) continue;
      taken++;
      const viaZod = validateWithZod(input, NOW);
      expect(viaZod).toEqual({ ok: true, record: plain });
      expect(JSON.stringify(viaZod)).toBe(JSON.stringify({ ok: true, record: plain }));
    }
    expect(taken).toBeGreaterThan(1_000);
  });

  it('takes every record the emulator sends, each exactly as zod gives it', () => {
    const fleet = Fleet.create({ seed: 5, size: 20 });
    const rng = Rng.seeded(9);
    for (let k = 0; k < 2_000; k++) {
      const v = fleet.vehicles[k % 20]!;
      const t = T + 1_000 * k;
      const input = JSON.parse(
        JSON.stringify(
          k % 2 === 0
            ? { vehicleno: v.vehicleno, type: 'gps', data: fleet.gpsAt(v, t) }
            : { vehicleno: v.vehicleno, type: 'can', data: canRecordData(fleet.canStateAt(v, t), rng) },
        ),
      ) as unknown;
      const plain = plainRecord(input, NOW);
      expect(plain, JSON.stringify(input)).toBeDefined();
      expect(JSON.stringify({ ok: true, record: plain })).toBe(JSON.stringify(validateWithZod(input, NOW)));
    }
  });

  it('leaves conversions, nulls in GPS core fields and every error to zod', () => {
    const gps = { lat: 12.5, lng: 77.1, alti: 900, speed: 40, ignstatus: 1, time: T };
    for (const data of [
      { ...gps, lat: '12.5' },
      { ...gps, ignstatus: true },
      { ...gps, speed: null },
      { ...gps, time: T / 1000 },
      { ...gps, extra: '7' },
      { ...gps, lat: 91 },
    ]) {
      expect(plainRecord({ vehicleno: 'V', type: 'gps', data }, NOW)).toBeUndefined();
    }
    expect(plainRecord({ vehicleno: 'V', type: 'can', data: { time: T } }, NOW)).toBeUndefined();
    expect(plainRecord({ vehicleno: ' ', type: 'can', data: { soc: 1 } }, NOW)).toBeUndefined();
    expect(plainRecord({ vehicleno: 'V', type: 'can', data: Object.create(null) as object }, NOW)).toBeUndefined();
    expect(validateRecord({ vehicleno: 'V', type: 'gps', data: { ...gps, lat: '12.5' } }, NOW)).toEqual({
      ok: true,
      record: { vehicleno: 'V', type: 'gps', time: T, fields: { lat: 12.5, lng: 77.1, alti: 900, speed: 40, ignstatus: 1 } },
    });
  });
});
