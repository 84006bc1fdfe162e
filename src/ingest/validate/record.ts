import { z } from 'zod';
import { util } from 'zod/v4/core';
import { TIME, TYPE_NAMES, typeNamed, type FieldSpec, type RecordTypeInfo } from '../../telemetry/fields.js';
import { plateFaults } from '../../telemetry/plate.js';
import { MAX_NESTING, MAX_PARAMETERS, VEHICLENO_MAX, type TelemetryRecord } from '../../telemetry/record.js';
import { isEpochMs, NUMERIC_STRING, SECONDS_THRESHOLD } from '../../telemetry/numbers.js';
import { isFieldName } from '../../telemetry/lineProtocol.js';
import { boundedJson, nestingDepth } from '../../telemetry/json.js';

export { MAX_NESTING, MAX_PARAMETERS } from '../../telemetry/record.js';
/** Problems a reason lists before it counts the rest. */
const MAX_ISSUES = 10;

/** A value as its reason shows it: at most 40 characters, at bounded cost however large or deep it is. */
function show(v: unknown): string {
  // JSON has no infinities: a number literal beyond a double's range (1e400) parses to one, which
  // JSON.stringify would show as null, the one value the sender did not send.
  if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'NaN' : `a number out of range of a double (read as ${v})`;
  const { text, truncated } = boundedJson(v, 41, { nonFinite: 'name' });
  return truncated || text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function reasonOf(issues: readonly string[]): string {
  const more = issues.length - MAX_ISSUES;
  return more > 0 ? `${issues.slice(0, MAX_ISSUES).join('; ')}; and ${more} more problem(s)` : issues.join('; ');
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

function numberIssue(v: unknown): string {
  return `expected a finite number or numeric string, got ${show(v)}`;
}

/** An epoch-milliseconds time, or the reason it is not one. */
function epochMsOf(v: unknown): number | string {
  const n = toNumber(v);
  if (n === undefined || typeof v === 'boolean' || !Number.isInteger(n)) {
    return `expected an integer epoch time in milliseconds, got ${show(v)}`;
  }
  if (!isEpochMs(n)) {
    const hint = n >= 1_000_000_000 && n < SECONDS_THRESHOLD ? ' (this looks like seconds)' : '';
    return `expected an epoch time in milliseconds, got ${n}${hint}`;
  }
  return n;
}

const epochMs = z.unknown().transform((v, ctx) => {
  const n = epochMsOf(v);
  if (typeof n === 'string') {
    ctx.addIssue({ code: 'custom', message: n });
    return z.NEVER;
  }
  return n;
});

/*
 * Each rule is one zod step (presence, then type, then range; or vehicleno's refinements in their
 * order, each reported) rather than a chain of pipes and refinements, which costs zod more than the
 * checks themselves, on every record.
 */

/** A required GPS number, optionally within [min, max]; a boolean only where the field is a flag. */
const requiredNumber = (min?: number, max?: number, flag = false) =>
  z.unknown().transform((v, ctx) => {
    if (v === undefined || v === null) {
      ctx.addIssue({ code: 'custom', message: 'is required' });
      return z.NEVER;
    }
    const n = typeof v === 'boolean' && !flag ? undefined : toNumber(v);
    if (n === undefined) {
      ctx.addIssue({ code: 'custom', message: numberIssue(v) });
      return z.NEVER;
    }
    if (min !== undefined && max !== undefined && !(n >= min && n <= max)) {
      ctx.addIssue({ code: 'custom', message: `must be between ${min} and ${max}` });
      return z.NEVER;
    }
    return n;
  });

const requiredEpochMs = z.unknown().transform((v, ctx) => {
  if (v === undefined || v === null) {
    ctx.addIssue({ code: 'custom', message: 'is required' });
    return z.NEVER;
  }
  const n = epochMsOf(v);
  if (typeof n === 'string') {
    ctx.addIssue({ code: 'custom', message: n });
    return z.NEVER;
  }
  return n;
});

const vehicleno = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : `expected a string, got ${show(i.input)}`) })
  // zod runs length checks even on a non-string with a length (an array), so these two stay checks.
  .min(1, 'must not be empty')
  .max(VEHICLENO_MAX, `must be at most ${VEHICLENO_MAX} characters`)
  .superRefine((s, ctx) => {
    for (const message of plateFaults(s)) ctx.addIssue({ code: 'custom', message });
  });

/** A required field's rule: presence, type (a boolean only for a flag), and its bound where breaking it refuses the record. */
function requiredField(f: FieldSpec) {
  const r = f.range?.refuses === 'record' ? f.range : undefined;
  return requiredNumber(r?.min, r?.max, f.flag);
}

/** Per type, the zod object of what a record must carry: its required fields, and its time when required. */
const coresOf = (partial: boolean) =>
  new Map(
    TYPE_NAMES.map((name) => {
      const t = typeNamed(name)!;
      const shape = Object.fromEntries(t.required.map((f) => [f.name, partial ? requiredField(f).optional() : requiredField(f)]));
      return [name, z.object(t.spec.time === 'required' ? { ...shape, [TIME.name]: requiredEpochMs } : shape)];
    }),
  );
const cores = coresOf(false);
/** The same with the required fields optional: a record as a job holds it, a refused field already left out (`partial`). */
const partialCores = coresOf(true);

const envelope = z.object({
  vehicleno,
  type: z.enum(TYPE_NAMES as [string, ...string[]], { error: (i) => `expected ${TYPE_NAMES.map((n) => JSON.stringify(n)).join(' or ')}, got ${show(i.input)}` }),
  // What z.record(z.string(), z.unknown()) accepts (a plain object), without its copy of every
  // parameter, which was most of the cost of validating a record; extraFields skips `__proto__`
  // as that copy did.
  data: z.custom<Record<string, unknown>>((v) => util.isPlainObject(v), {
    error: (i) => (i.input === undefined ? 'is required' : `expected an object, got ${show(i.input)}`),
  }),
});

/**
 * The rule a refused record broke, by what was wrong rather than the value (which is unbounded): the
 * `reason` label of telematics_records_rejected_total, which dashboards and alerts select on, so a
 * value once shipped keeps its meaning. A new rule adds its class here (and to docs/operating.md's metrics
 * table). `other`: the record could not be validated at all.
 */
export const VALIDATION_RULES = ['not_a_record', 'nesting', 'vehicleno', 'type', 'data', 'time', 'other'] as const;
export type ValidationRule = (typeof VALIDATION_RULES)[number];

export type ValidationResult =
  | { ok: true; record: TelemetryRecord }
  | { ok: false; rule: ValidationRule; error: string };

const refused = (rule: ValidationRule, error: string): ValidationResult => ({ ok: false, rule, error });

function describe(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`)
    .join('; ');
}

const hasOwn = Object.prototype.hasOwnProperty;

/** Field keys already found valid: a Set lookup instead of the pattern, for the few hundred names in use. */
const goodKeys = new Set<string>();
const GOOD_KEYS_MAX = 10_000;

function goodKey(key: string): boolean {
  if (goodKeys.has(key)) return true;
  if (!isFieldName(key)) return false;
  if (goodKeys.size < GOOD_KEYS_MAX) goodKeys.add(key);
  return true;
}

/**
 * Dynamic parameters (every CAN field, and GPS extras) are kept when numeric; a null value is read as
 * "not received" and left out, as the spec omits absent parameters. With `issues` every fault is
 * reported there; without (the plain path) the first value that is not plainly a finite number ends
 * it with -1, and zod decides. Returns the number of parameters kept.
 */
function extraFields(data: Record<string, unknown>, skip: ReadonlySet<string>, fields: Record<string, number>, issues?: string[]): number {
  let count = 0;
  let seen = 0;
  // for-in is 2-3 times faster than Object.keys on the many shapes of CAN objects; the own-key
  // check keeps it to what Object.keys gives (for-in also walks the prototype chain).
  for (const key in data) {
    if (!hasOwn.call(data, key) || skip.has(key)) continue;
    // Ignored, but it may nest past MAX_NESTING: the plain path leaves it to zod's, which checks.
    if (key === '__proto__') {
      if (!issues) return -1;
      continue;
    }
    if (++seen > MAX_PARAMETERS) {
      if (!issues) return -1;
      issues.push(`data: more than ${MAX_PARAMETERS} parameters; a record carries at most ${MAX_PARAMETERS}`);
      break;
    }
    const v = data[key];
    if (v === null || v === undefined) continue;
    const plain = typeof v === 'number' && Number.isFinite(v);
    if (!goodKey(key)) {
      if (!issues) return -1;
      issues.push(`data.${show(key)}: field names must start with a letter and hold only letters, digits and _ (at most 128)`);
      continue;
    }
    if (plain) fields[key] = v;
    else if (!issues) return -1;
    else {
      const n = toNumber(v);
      if (n === undefined) {
        issues.push(`data.${key}: ${numberIssue(v)}`);
        continue;
      }
      fields[key] = n;
    }
    count++;
  }
  return count;
}

/**
 * Validates one push record. `receivedAt` stamps CAN records that carry no `time`, so the
 * stamp is part of the queued record and a redelivery writes the same point. `partial`: a record as a
 * job holds it, whose required fields may be missing because the receiver refused them (a (0, 0)
 * position): every rule but their presence (worker/unsealed.ts).
 */
export function validateRecord(input: unknown, receivedAt: number, partial = false): ValidationResult {
  const plain = plainRecord(input, receivedAt, partial);
  return plain ? { ok: true, record: plain } : validateWithZod(input, receivedAt, partial);
}

/**
 * The record as the zod schema would give it, for input that is plainly valid: every value
 * already a finite number within its range, every rule met without conversion. Anything else,
 * a string to convert, a null to skip in GPS core fields, a doubt of any kind, returns undefined
 * and goes through zod, which also words every error. Most pushes are plainly valid, and this
 * costs a third of zod's object parse (record.equivalence.test.ts holds the two to the same result).
 */
export function plainRecord(input: unknown, receivedAt: number, partial = false): TelemetryRecord | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  // Properties beside the three are ignored, but may nest past MAX_NESTING: zod's path judges them.
  for (const key in input) if (key !== 'vehicleno' && key !== 'type' && key !== 'data') return undefined;
  const { vehicleno: v, type: name, data } = input as { vehicleno?: unknown; type?: unknown; data?: unknown };
  if (typeof v !== 'string' || v.length === 0 || v.length > VEHICLENO_MAX || plateFaults(v).length > 0) return undefined;
  const type = typeof name === 'string' ? typeNamed(name) : undefined;
  if (type === undefined || typeof data !== 'object' || data === null) return undefined;
  if (Object.getPrototypeOf(data) !== Object.prototype) return undefined;
  const d = data as Record<string, unknown>;
  const fields = Object.create(null) as Record<string, number>;
  // zod's object output order: the required fields in the schema's order, then the rest in the record's.
  let absent = 0;
  for (const f of type.required) {
    const x = d[f.name];
    if (partial && x === undefined) {
      absent++;
      continue;
    }
    if (!isFiniteNumber(x) || !withinBounds(f, x)) return undefined;
    fields[f.name] = x;
  }
  const time = recordTime(type, d[TIME.name], receivedAt);
  if (time === undefined) return undefined;
  const extras = extraFields(d, type.reserved, fields);
  if (extras < 0 || !(partial ? type.required.length - absent + extras > 0 : enoughParameters(type, extras))) return undefined;
  return { vehicleno: v, type: type.name, time, fields };
}

const isFiniteNumber = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/**
 * The rules both paths (this one and the receiver's scanner, src/ingest/scan/) call: whether a
 * required field's value is within the bound that refuses the record; a record's time, plainly
 * given (a number) or stamped; whether it carries enough parameters.
 */
export function withinBounds(f: FieldSpec, x: number): boolean {
  const r = f.range;
  return r?.refuses !== 'record' || (x >= r.min && x <= r.max);
}

/** The time of a record whose `time` is `t` (a number, or absent): undefined when the general path must judge it. */
export function recordTime(type: RecordTypeInfo, t: unknown, receivedAt: number): number | undefined {
  if (t === undefined || t === null) return type.spec.time === 'stamped' ? receivedAt : undefined;
  return typeof t === 'number' && isEpochMs(t) ? t : undefined;
}

/** Whether a record with `dynamic` parameters besides its required ones carries enough. */
export function enoughParameters(type: RecordTypeInfo, dynamic: number): boolean {
  return type.required.length + dynamic >= type.spec.minParameters;
}

/** The zod schema's verdict on any input, with every error it finds. */
export function validateWithZod(input: unknown, receivedAt: number, partial = false): ValidationResult {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return refused('not_a_record', `expected a push record {"vehicleno", "type", "data"}, got ${show(input)}`);
  }
  if (nestingDepth(input, MAX_NESTING) > MAX_NESTING) return refused('nesting', `nested deeper than ${MAX_NESTING} levels; a push record nests 2`);
  const head = envelope.safeParse(input);
  if (!head.success) {
    // The reason leads with the first issue; its key is the rule.
    const key = head.error.issues[0]?.path[0];
    return refused(key === 'vehicleno' || key === 'type' ? key : 'data', describe(head.error));
  }
  const { vehicleno: v, type, data } = head.data;
  // Without a prototype V8 keeps the object as a plain hash table instead of giving it a hidden
  // class. CAN records carry varying subsets of some 70 parameters; built as ordinary objects, each
  // subset minted new hidden classes, and validation took a third to two thirds longer once
  // thousands of subsets had been seen (docs/benchmarks/history.md).
  const fields = Object.create(null) as Record<string, number>;
  const issues: string[] = [];
  let time: number;

  const t = typeNamed(type)!;
  const core = (partial ? partialCores : cores).get(type)!.safeParse(data);
  if (!core.success) {
    const rule = core.error.issues[0]?.path[0] === TIME.name ? 'time' : 'data';
    return refused(rule, describe(new z.ZodError(core.error.issues.map((i) => ({ ...i, path: ['data', ...i.path] })))));
  }
  const { [TIME.name]: given, ...required } = core.data as Record<string, number | undefined>;
  let absent = 0;
  for (const [name, x] of Object.entries(required)) {
    if (x === undefined) absent++;
    else fields[name] = x;
  }
  if (partial) absent += t.required.length - Object.keys(required).length;
  if (t.spec.time === 'required') time = given!;
  else if (data[TIME.name] === undefined || data[TIME.name] === null) time = receivedAt;
  else {
    const parsed = epochMs.safeParse(data[TIME.name]);
    if (!parsed.success) return refused('time', `data.time: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    time = parsed.data;
  }
  const count = extraFields(data, t.reserved, fields, issues);
  if (issues.length === 0 && partial && t.required.length - absent + count === 0) issues.push('data: no field left to store');
  if (issues.length === 0 && !partial && !enoughParameters(t, count)) {
    const more = t.spec.minParameters - t.required.length;
    issues.push(`data: a ${type.toUpperCase()} record must carry at least ${more === 1 ? 'one parameter' : `${more} parameters`} besides time`);
  }
  if (issues.length > 0) return refused('data', reasonOf(issues));
  return { ok: true, record: { vehicleno: v, type, time, fields } };
}
