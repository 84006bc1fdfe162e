import { describe, expect, it } from 'vitest';
import { validateRecord } from './record.js';
import { CAN_FIELDS } from '../../telemetry/fields.js';

const NOW = 1_763_700_000_123;
const T = 1_763_700_000_000;
const gps = (data: Record<string, unknown>, vehicleno: unknown = 'KA01') => ({
  vehicleno,
  type: 'gps',
  data: { lat: 1, lng: 2, alti: 3, speed: 4, ignstatus: 1, time: T, ...data },
});
const err = (input: unknown) => {
  const r = validateRecord(input, NOW);
  return r.ok ? 'ok' : r.error;
};

describe('gps records', () => {
  it('become a record with all five fields and the given time', () => {
    expect(validateRecord(gps({}), NOW)).toEqual({
      ok: true,
      record: { vehicleno: 'KA01', type: 'gps', time: T, fields: { lat: 1, lng: 2, alti: 3, speed: 4, ignstatus: 1 } },
    });
  });

  it('need every field, named when missing', () => {
    const { speed: _s, ...rest } = gps({}).data;
    expect(err({ vehicleno: 'KA01', type: 'gps', data: rest })).toBe('data.speed: is required');
  });

  it('need coordinates in range and finite numbers', () => {
    expect(err(gps({ lat: 90.0001 }))).toBe('data.lat: must be between -90 and 90');
    expect(err(gps({ lng: -181 }))).toBe('data.lng: must be between -180 and 180');
    expect(err(gps({ alti: 'high' }))).toBe('data.alti: expected a finite number or numeric string, got "high"');
    expect(err(gps({ speed: null }))).toBe('data.speed: is required');
  });

  it('need an integer time in milliseconds, and say when it looks like seconds', () => {
    expect(err(gps({ time: 1_763_700_000 }))).toBe('data.time: expected an epoch time in milliseconds, got 1763700000 (this looks like seconds)');
    expect(err(gps({ time: T + 0.5 }))).toBe(`data.time: expected an integer epoch time in milliseconds, got ${T + 0.5}`);
    expect(err(gps({ time: '2025-11-21' }))).toBe('data.time: expected an integer epoch time in milliseconds, got "2025-11-21"');
  });
});

describe('can records', () => {
  it('keep only the parameters present, numeric strings and flags as numbers, null as absent', () => {
    const r = validateRecord({ vehicleno: 'V', type: 'can', data: { time: T, soc: '51.2', allow_charging: true, soh: null, new_param: 7 } }, NOW);
    expect(r).toEqual({ ok: true, record: { vehicleno: 'V', type: 'can', time: T, fields: { soc: 51.2, allow_charging: 1, new_param: 7 } } });
  });

  it('accept every parameter the spec names, all at once', () => {
    const data: Record<string, number> = { time: T };
    CAN_FIELDS.forEach((f, i) => (data[f] = i + 0.5));
    const r = validateRecord({ vehicleno: 'V', type: 'can', data }, NOW);
    expect(r.ok && Object.keys(r.record.fields)).toEqual([...CAN_FIELDS]);
  });

  it('are stamped with the receive time when they carry none', () => {
    const r = validateRecord({ vehicleno: 'V', type: 'can', data: { soc: 5 } }, NOW);
    expect(r.ok && r.record.time).toBe(NOW);
  });

  it('refuse non-numeric values, infinities and unsafe field names, naming each', () => {
    expect(err({ vehicleno: 'V', type: 'can', data: { soc: 'NaN', soh: [1] } })).toBe(
      'data.soc: expected a finite number or numeric string, got "NaN"; data.soh: expected a finite number or numeric string, got [1]',
    );
    expect(err({ vehicleno: 'V', type: 'can', data: { soc: '1e999' } })).toBe('data.soc: expected a finite number or numeric string, got "1e999"');
    expect(err({ vehicleno: 'V', type: 'can', data: { _measurement: 1 } })).toMatch(/^data\."_measurement": field names must start with a letter/);
  });

  it('need at least one parameter', () => {
    expect(err({ vehicleno: 'V', type: 'can', data: { time: T } })).toBe('data: a CAN record must carry at least one parameter besides time');
  });
});

describe('the envelope', () => {
  it('names a missing or wrong vehicleno, type and data', () => {
    expect(err({ type: 'gps', data: {} })).toBe('vehicleno: is required');
    expect(err(gps({}, 42))).toBe('vehicleno: expected a string, got 42');
    expect(err(gps({}, ''))).toBe('vehicleno: must not be empty');
    expect(err(gps({}, '   '))).toBe('vehicleno: must not be blank');
    expect(err(gps({}, 'a\nb'))).toBe('vehicleno: must not contain control characters');
    expect(err(gps({}, 'x'.repeat(129)))).toBe('vehicleno: must be at most 128 characters');
    expect(err({ vehicleno: 'V', type: 'gps', data: 'x' })).toBe('data: expected an object, got "x"');
    expect(err({ vehicleno: 'V', type: 'can' })).toBe('data: is required');
    expect(err(null)).toBe('expected a push record {"vehicleno", "type", "data"}, got null');
    expect(err([1])).toBe('expected a push record {"vehicleno", "type", "data"}, got [1]');
  });
});

describe('bounded work, whatever arrives', () => {
  it('refuses booleans as coordinates, speed or altitude, but takes one for the ignition flag', () => {
    expect(err(gps({ lat: true }))).toBe('data.lat: expected a finite number or numeric string, got true');
    expect(err(gps({ speed: false }))).toBe('data.speed: expected a finite number or numeric string, got false');
    const r = validateRecord(gps({ ignstatus: true }), NOW);
    expect(r.ok && r.record.fields.ignstatus).toBe(1);
  });

  it('refuses C1 control characters in a plate as it does C0 ones', () => {
    expect(err(gps({}, 'KA\u008501'))).toBe('vehicleno: must not contain control characters');
    expect(err(gps({}, 'KA\u009f01'))).toBe('vehicleno: must not contain control characters');
  });

  it('caps the parameters of a record and the problems its reason lists', () => {
    const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, i]));
    expect(err({ vehicleno: 'V', type: 'can', data: many })).toBe('data: more than 256 parameters; a record carries at most 256');
    const bad = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`p${i}`, 'x']));
    const reason = err({ vehicleno: 'V', type: 'can', data: bad });
    expect(reason.split('; ')).toHaveLength(11);
    expect(reason).toMatch(/^data\.p0: expected a finite number or numeric string, got "x"; .*; and 15 more problem\(s\)$/);
  });

  it('says a deeply nested record is too deep, without recursing into it', () => {
    const deep = JSON.parse(`{"vehicleno":"V","type":"can","data":{"soc":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`) as unknown;
    expect(err(deep)).toBe('nested deeper than 32 levels; a push record nests 2');
    const wide = { vehicleno: 'V', type: 'can', data: { soc: Array.from({ length: 1_000_000 }, () => 1) } };
    expect(err(wide)).toBe(`data.soc: expected a finite number or numeric string, got [${'1,'.repeat(18)}...`);
  });
});
