import { z } from 'zod';
import { GPS_FIELDS } from './fields.js';
import { unrepresentableTag } from '../flatten/lineProtocol.js';

/**
 * What a valid push record becomes: the shape every later stage works on. `time` is always
 * set (CAN records without one are stamped by the receiver), `fields` holds only the
 * parameters the record carried, every value a finite number.
 */
export interface TelemetryRecord {
  vehicleno: string;
  type: 'gps' | 'can';
  time: number;
  fields: Record<string, number>;
}

export const VEHICLENO_MAX = 128;
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

export type ValidationResult =
  | { ok: true; record: TelemetryRecord }
  | { ok: false; error: string };

function describe(error: z.ZodError): string {
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
export function validateRecord(input: unknown, receivedAt: number): ValidationResult {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, error: `expected a push record {"vehicleno", "type", "data"}, got ${show(input)}` };
  }
  const head = envelope.safeParse(input);
  if (!head.success) return { ok: false, error: describe(head.error) };
  const { vehicleno: v, type, data } = head.data;
  const fields: Record<string, number> = {};
  const issues: string[] = [];
  let time: number;

  if (type === 'gps') {
    const core = gpsCore.safeParse(data);
    if (!core.success) {
      return { ok: false, error: describe(new z.ZodError(core.error.issues.map((i) => ({ ...i, path: ['data', ...i.path] })))) };
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
