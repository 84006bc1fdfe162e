import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { GPS_FIELDS, CAN_FIELDS } from '../../telemetry/fields.js';
import { unrepresentableTag } from '../../telemetry/lineProtocol.js';
import { plainRecord, validateRecord, validateWithZod } from './record.js';
import { VEHICLENO_MAX, type TelemetryRecord } from '../../telemetry/record.js';
import { Fleet } from '../../upstream/emulator/fleet.js';
import { canRecordData } from '../../upstream/emulator/can.js';
import { Rng } from '../../upstream/emulator/prng.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';

/*
 * record.ts was reworked for speed (z.record's per-key copy of `data` replaced by a plain-object
 * check, cached field-key checks). This holds it to the implementation it replaced, kept below
 * verbatim: same verdict, same record (values and key order), same error text, on random input.
 */

// ---- the implementation before the speed work, verbatim --------------------------------------
/** Epoch milliseconds InfluxDB can store (1973 to 2261); smaller values are most likely seconds. */
const TIME_MIN = 100_000_000_000;
const TIME_MAX = 9_200_000_000_000;

const NUMERIC_STRING = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;
/** Field keys that are safe in every InfluxDB version: `_`-prefixed keys are reserved by Flux. */
const FIELD_KEY = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;

function show(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(JSON.stringify(v) ?? v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/** A number, a numeric string such as "51.2", or a boolean flag; the result must be finite. */
function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && NUMERIC_STRING.test(v)) {
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  return undefined;
}

const numeric = z.unknown().transform((v, ctx) => {
  const n = toNumber(v);
  if (n === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a finite number or numeric string, got ${show(v)}` });
    return z.NEVER;
  }
  return n;
});

const epochMs = z.unknown().transform((v, ctx) => {
  const n = toNumber(v);
  if (n === undefined || typeof v === 'boolean' || !Number.isInteger(n)) {
    ctx.addIssue({ code: 'custom', message: `expected an integer epoch time in milliseconds, got ${show(v)}` });
    return z.NEVER;
  }
  if (n < TIME_MIN || n > TIME_MAX) {
    const hint = n >= 1_000_000_000 && n < TIME_MIN ? ' (this looks like seconds)' : '';
    ctx.addIssue({ code: 'custom', message: `expected an epoch time in milliseconds, got ${n}${hint}` });
    return z.NEVER;
  }
  return n;
});

const inRange = (min: number, max: number) =>
  numeric.refine((n) => n >= min && n <= max, { message: `must be between ${min} and ${max}` });

const vehicleno = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : `expected a string, got ${show(i.input)}`) })
  .min(1, 'must not be empty')
  .max(VEHICLENO_MAX, `must be at most ${VEHICLENO_MAX} characters`)
  // Control characters cannot be written as an InfluxDB tag and are never a real plate or id.
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters')
  .refine((s) => s.length === 0 || s.trim().length > 0, 'must not be blank')
  .superRefine((s, ctx) => {
    const why = unrepresentableTag(s);
    if (why) ctx.addIssue({ code: 'custom', message: why });
  });

const required = (schema: z.ZodType<number, unknown>) =>
  z.unknown().superRefine((v, ctx) => {
    if (v === undefined || v === null) ctx.addIssue({ code: 'custom', message: 'is required' });
  }).pipe(schema);

const gpsCore = z.object({
  lat: required(inRange(-90, 90)),
  lng: required(inRange(-180, 180)),
  alti: required(numeric),
  speed: required(numeric),
  ignstatus: required(numeric),
  time: required(epochMs),
});

const envelope = z.object({
  vehicleno,
  type: z.enum(['gps', 'can'], { error: (i) => `expected "gps" or "can", got ${show(i.input)}` }),
  data: z.record(z.string(), z.unknown(), {
    error: (i) => (i.input === undefined ? 'is required' : `expected an object, got ${show(i.input)}`),
  }),
});

type ValidationResult =
  | { ok: true; record: TelemetryRecord }
  | { ok: false; error: string };

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`)
    .join('; ');
}

/**
 * Dynamic parameters (every CAN field, and GPS extras) are kept when numeric. A null value
 * is read as "not received" and left out, as the spec omits absent parameters.
 */
function extraFields(
  data: Record<string, unknown>,
  skip: ReadonlySet<string>,
  fields: Record<string, number>,
  issues: string[],
): void {
  for (const key of Object.keys(data)) {
    if (skip.has(key)) continue;
    const v = data[key];
    if (v === null || v === undefined) continue;
    if (!FIELD_KEY.test(key)) {
      issues.push(`data.${show(key)}: field names must start with a letter and hold only letters, digits and _ (at most 128)`);
      continue;
    }
    const n = toNumber(v);
    if (n === undefined) issues.push(`data.${key}: expected a finite number or numeric string, got ${show(v)}`);
    else fields[key] = n;
  }
}

const GPS_KEYS: ReadonlySet<string> = new Set([...GPS_FIELDS, 'time']);
const TIME_KEY: ReadonlySet<string> = new Set(['time']);

/**
 * Validates one push record. `receivedAt` stamps CAN records that carry no `time`, so the
 * stamp is part of the queued record and a redelivery writes the same point.
 */
export function referenceValidateRecord(input: unknown, receivedAt: number): ValidationResult {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, error: `expected a push record {"vehicleno", "type", "data"}, got ${show(input)}` };
  }
  const head = envelope.safeParse(input);
  if (!head.success) return { ok: false, error: describeIssues(head.error) };
  const { vehicleno: v, type, data } = head.data;
  const fields: Record<string, number> = {};
  const issues: string[] = [];
  let time: number;

  if (type === 'gps') {
    const core = gpsCore.safeParse(data);
    if (!core.success) {
      return { ok: false, error: describeIssues(new z.ZodError(core.error.issues.map((i) => ({ ...i, path: ['data', ...i.path] })))) };
    }
    const { time: t, ...gps } = core.data;
    Object.assign(fields, gps);
    time = t;
    extraFields(data, GPS_KEYS, fields, issues);
  } else {
    if (data.time === undefined || data.time === null) {
      time = receivedAt;
    } else {
      const t = epochMs.safeParse(data.time);
      if (!t.success) return { ok: false, error: `data.time: ${t.error.issues[0]?.message ?? 'invalid'}` };
      time = t.data;
    }
    extraFields(data, TIME_KEY, fields, issues);
    if (issues.length === 0 && Object.keys(fields).length === 0) {
      issues.push('data: a CAN record must carry at least one parameter besides time');
    }
  }
  if (issues.length > 0) return { ok: false, error: issues.join('; ') };
  return { ok: true, record: { vehicleno: v, type, time, fields } };
}

// ---- the comparison ---------------------------------------------------------------------------

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

describe('validateRecord, reworked for speed', () => {
  it('gives exactly the verdict, record and error text of the implementation it replaced, on random input', () => {
    const next = generator(20_261_121);
    let valid = 0;
    let invalid = 0;
    for (let i = 0; i < 30_000; i++) {
      const input = next();
      const a = validateRecord(input, NOW);
      const b = referenceValidateRecord(input, NOW);
      // toEqual ignores key order; the JSON text does not, and field order is the line's field order.
      expect(a).toEqual(b);
      expect(JSON.stringify(a)).toBe(JSON.stringify(b));
      if (a.ok) valid++;
      else invalid++;
    }
    expect(valid).toBeGreaterThan(3_000);
    expect(invalid).toBeGreaterThan(3_000);
  });

  it('still refuses a data object that is not plain, as z.record did', () => {
    for (const data of [new Date(T), new Map([['soc', 1]]), Object.create(null), new (class X { soc = 1 })()]) {
      const input = { vehicleno: 'V', type: 'can', data };
      expect(validateRecord(input, NOW)).toEqual(referenceValidateRecord(input, NOW));
    }
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
