import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { VALIDATION_RULES, validateRecord } from './record.js';
import { fieldNames } from '../../telemetry/fields.js';
const CAN_FIELDS = fieldNames('can');

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

describe('numbers beyond a double', () => {
  // What JSON.parse makes of a literal out of a double's range: an infinity, which JSON.stringify shows as null.
  const parsed = (json: string) => JSON.parse(json) as unknown;

  it('says the number was out of range, not that it was null', () => {
    expect(err(parsed(`{"vehicleno":"V","type":"can","data":{"soc":1e400}}`))).toBe(
      'data.soc: expected a finite number or numeric string, got a number out of range of a double (read as Infinity)',
    );
    expect(err(parsed(`{"vehicleno":"V","type":"gps","data":{"lat":-1e400,"lng":2,"alti":3,"speed":4,"ignstatus":1,"time":${T}}}`))).toBe(
      'data.lat: expected a finite number or numeric string, got a number out of range of a double (read as -Infinity)',
    );
    expect(err(parsed(`{"vehicleno":"V","type":"can","data":{"time":1e400,"soc":1}}`))).toBe(
      'data.time: expected an integer epoch time in milliseconds, got a number out of range of a double (read as Infinity)',
    );
    expect(err(parsed(`{"vehicleno":1e400,"type":"can","data":{"soc":1}}`))).toBe('vehicleno: expected a string, got a number out of range of a double (read as Infinity)');
    expect(err(parsed('1e400'))).toBe('expected a push record {"vehicleno", "type", "data"}, got a number out of range of a double (read as Infinity)');
  });

  it('shows one inside an array or object by name', () => {
    expect(err(parsed(`{"vehicleno":"V","type":"can","data":{"soc":[1,1e400]}}`))).toBe('data.soc: expected a finite number or numeric string, got [1,Infinity]');
    expect(err(parsed(`{"vehicleno":"V","type":"can","data":{"soc":{"v":-1e400}}}`))).toBe('data.soc: expected a finite number or numeric string, got {"v":-Infinity}');
  });
});

describe('the rule a refused record broke', () => {
  const rule = (input: unknown) => {
    const r = validateRecord(input, NOW);
    return r.ok ? 'ok' : r.rule;
  };

  it('is the class of its reason, for the rejection metric', () => {
    expect(rule('junk')).toBe('not_a_record');
    expect(rule(null)).toBe('not_a_record');
    expect(rule(JSON.parse(`{"vehicleno":"V","type":"can","data":{"soc":${'['.repeat(40)}${']'.repeat(40)}}}`))).toBe('nesting');
    expect(rule(gps({}, ''))).toBe('vehicleno');
    expect(rule({ vehicleno: 42, type: 'x', data: 1 })).toBe('vehicleno');
    expect(rule({ vehicleno: 'V', type: 'x', data: 1 })).toBe('type');
    expect(rule({ vehicleno: 'V', type: 'can' })).toBe('data');
    expect(rule(gps({ lat: 91 }))).toBe('data');
    expect(rule(gps({ lat: 91, time: 5 }))).toBe('data');
    expect(rule(gps({ time: 1_763_700_000 }))).toBe('time');
    expect(rule({ vehicleno: 'V', type: 'can', data: { time: 'now', soc: 1 } })).toBe('time');
    expect(rule({ vehicleno: 'V', type: 'can', data: { time: T } })).toBe('data');
    expect(rule({ vehicleno: 'V', type: 'can', data: { soc: 'x' } })).toBe('data');
  });

  it("is one of the metric's label values docs/operating.md documents, and every one of them", () => {
    const row = readFileSync('docs/operating.md', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('| `telematics_records_rejected_total{reason}`'));
    const documented = [...(row?.split('|')[3] ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
    expect(documented.sort()).toEqual([...VALIDATION_RULES].sort());
  });

  it('names a parameter whose name starts with "time" as data, not time', () => {
    expect(err({ vehicleno: 'V', type: 'can', data: { time: T, timestamp: 'x' } })).toBe('data.timestamp: expected a finite number or numeric string, got "x"');
    expect(rule({ vehicleno: 'V', type: 'can', data: { time: T, timestamp: 'x' } })).toBe('data');
  });
});
