import { TIME, TYPES, type FieldSpec, type RecordTypeInfo } from './fields.js';
import { FIELD_NAME as FIELD_NAME_RE } from './lineProtocol.js';
import { EPOCH_MS_MAX, NUMERIC_STRING, SECONDS_THRESHOLD } from './numbers.js';
import { MAX_NESTING, MAX_PARAMETERS, VEHICLENO_MAX } from './record.js';

/*
 * JSON Schema (2020-12) of what a sender pushes: one record, or `{"bulkData": [records]}`. It says
 * what the receiver's validation (src/ingest/validate/record.ts) accepts, rule for rule; schema.test.ts
 * holds the two to the same verdict on random records and near misses. The one rule that cannot be
 * said exactly is named in the description and in the test (RECEIVER_ONLY there). Every record type
 * and field comes from the record's schema (vehicleData.ts).
 */

/** A field name (lineProtocol.ts's FIELD_NAME). */
const FIELD_NAME = FIELD_NAME_RE.source;
/** JSON.parse makes `"__proto__"` an own key, which the receiver skips; the pattern names that key alone. */
const PROTO_KEY = '^__proto__$';

/** A regular expression (unanchored) for the decimal integers lo..hi written without leading zeros. */
function integerRange(lo: number, hi: number): string {
  const parts: string[] = [];
  for (let len = String(lo).length; len <= String(hi).length; len++) {
    const from = Math.max(lo, len === 1 ? 0 : 10 ** (len - 1));
    const to = Math.min(hi, 10 ** len - 1);
    if (from <= to) parts.push(sameLengthRange(String(from), String(to)));
  }
  return parts.join('|');
}

function sameLengthRange(a: string, b: string): string {
  if (a === b) return a;
  let p = 0;
  while (a[p] === b[p]) p++;
  const head = a.slice(0, p);
  const x = Number(a[p]);
  const y = Number(b[p]);
  const aRest = a.slice(p + 1);
  const bRest = b.slice(p + 1);
  const any = aRest.length > 1 ? `\\d{${aRest.length}}` : aRest.length === 1 ? '\\d' : '';
  const digits = (from: number, to: number) => (from === to ? `${from}` : from === 0 && to === 9 ? '\\d' : `[${from}-${to}]`);
  const alts: string[] = [];
  let from = x;
  let to = y;
  if (!/^0*$/.test(aRest)) {
    alts.push(`${x}${group(sameLengthRange(aRest, '9'.repeat(aRest.length)))}`);
    from++;
  }
  if (!/^9*$/.test(bRest)) {
    alts.push(`${y}${group(sameLengthRange('0'.repeat(bRest.length), bRest))}`);
    to--;
  }
  if (from <= to) alts.push(`${digits(from, to)}${any}`);
  return head ? `${head}${group(alts.join('|'))}` : alts.join('|');
}

const group = (re: string): string => (re.includes('|') ? `(?:${re})` : re);

/*
 * A numeric string is read as the number it writes. Where a value has a range, the pattern carries
 * it, for strings in plain decimal notation; exponent notation is left to the receiver (see
 * RECEIVER_ONLY: a regular expression cannot bound "0.0…09e…").
 */
const decimalWithin = (max: number): string =>
  `^\\s*[+-]?(?:0*${group(integerRange(0, max - 1))}(?:\\.\\d*)?|0*${max}(?:\\.0*)?|\\.\\d+)\\s*$`;
const epochMsString = `^\\s*\\+?0*${group(integerRange(SECONDS_THRESHOLD, EPOCH_MS_MAX))}(?:\\.0*)?\\s*$`;

/** C0, DEL and C1 control characters, as a character-class range. */
const CONTROL = '\\u0000-\\u001f\\u007f-\\u009f';
/**
 * A plate: no control characters, not only whitespace, and every run of backslashes followed by a
 * character other than a comma, space or equals sign (InfluxDB line protocol cannot store the others).
 */
const PLATE = `^[^\\S${CONTROL}]*(?:[^\\s\\\\${CONTROL}]|\\\\+[^\\\\,= ${CONTROL}])(?:[^\\\\${CONTROL}]|\\\\+[^\\\\,= ${CONTROL}])*$`;

/** The largest finite double: a JSON number beyond it (1e400) is not one the receiver can hold. */
const FINITE = { minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE };

/** `minimum`/`maximum` apply to numbers only and `pattern` to strings only, so one object says both. */
const coordinate = (max: number, what: string) => ({
  type: ['number', 'string'],
  minimum: -max,
  maximum: max,
  pattern: decimalWithin(max),
  description: `${what}: a number in [-${max}, ${max}], or a numeric string of one`,
});
/** A value without a range; a boolean only where the field is a flag (ignition), as the receiver has it. */
const measurement = (what: string, flag = false) => ({
  type: flag ? ['number', 'string', 'boolean'] : ['number', 'string'],
  ...FINITE,
  pattern: NUMERIC_STRING.source,
  description: `${what}: a number, or a numeric string ("51.2")${flag ? ', or true/false (1/0)' : ''}`,
});
/** A dynamic parameter (every CAN field, a GPS extra): null is "not received" and left out. */
const parameter = {
  type: ['number', 'string', 'boolean', 'null'],
  ...FINITE,
  pattern: NUMERIC_STRING.source,
  description: 'a number, a numeric string, true/false (1/0), or null ("not received")',
};
const epochMs = {
  type: ['integer', 'string'],
  minimum: SECONDS_THRESHOLD,
  maximum: EPOCH_MS_MAX,
  pattern: epochMsString,
  description: `epoch milliseconds, an integer in [${SECONDS_THRESHOLD}, ${EPOCH_MS_MAX}] (a time in seconds is refused), or a numeric string of one`,
};

/** `depthN`: a JSON value nesting at most N levels (a scalar nests 0). For properties the receiver ignores. */
const depths = Object.fromEntries(
  Array.from({ length: MAX_NESTING }, (_, n) => [
    `depth${n}`,
    n === 0
      ? { type: ['null', 'boolean', 'number', 'string'] }
      : { items: { $ref: `#/$defs/depth${n - 1}` }, additionalProperties: { $ref: `#/$defs/depth${n - 1}` } },
  ]),
);
/** At level 2 (a record's own property) a value may nest MAX_NESTING - 1 levels; at level 3 (in `data`), one fewer. */
const ignoredAt = (level: number) => ({
  $ref: `#/$defs/depth${MAX_NESTING - level + 1}`,
  description: `ignored by the receiver; the record with it nests at most ${MAX_NESTING} levels`,
});

/** At most MAX_PARAMETERS properties besides `always` required ones and the `optional` the receiver skips: a bound for each set of those absent. */
function parameterCount(always: number, optional: readonly string[]) {
  const absent = (key: string) => ({ propertyNames: { not: { const: key } } });
  const subsets = optional.reduce<string[][]>((acc, key) => [...acc, ...acc.map((s) => [...s, key])], [[]]).slice(1);
  const max = MAX_PARAMETERS + always + optional.length;
  return {
    maxProperties: max,
    allOf: subsets.map((keys) => ({ if: { allOf: keys.map(absent) }, then: { maxProperties: max - keys.length } })),
  };
}

const dynamic = {
  patternProperties: { [FIELD_NAME]: parameter, [PROTO_KEY]: ignoredAt(3) },
  // Any other name is refused unless its value is null: the receiver skips "not received" first.
  additionalProperties: { type: 'null', description: 'a name that is no field name: only null ("not received")' },
};

/** A required field's value: within its bound when breaking it refuses the record; a boolean only for a flag. */
function requiredValue(f: FieldSpec) {
  const r = f.range?.refuses === 'record' ? f.range : undefined;
  if (r !== undefined && r.min === -r.max) return coordinate(r.max, f.description);
  return measurement(f.description, f.flag);
}

/** The `data` object of a record of type `t`. */
function dataOf(t: RecordTypeInfo) {
  const stamped = t.spec.time === 'stamped';
  const time = stamped
    ? { ...epochMs, type: ['integer', 'string', 'null'], description: `${epochMs.description}; absent or null: the time the receiver accepted the record` }
    : epochMs;
  const required = t.required.map((f) => f.name);
  const dynamicNeeded = t.spec.minParameters - required.length;
  return {
    type: 'object',
    description: `A ${t.name} record: ${t.spec.description}. ${
      dynamicNeeded > 0 ? `At least ${dynamicNeeded === 1 ? 'one parameter' : `${dynamicNeeded} parameters`} besides time. ` : ''
    }The spec names ${t.spec.fields.length} (docs/fields.md); others are kept when numeric.`,
    ...(stamped ? {} : { required: [...required, TIME.name] }),
    properties: { ...Object.fromEntries(t.required.map((f) => [f.name, requiredValue(f)])), [TIME.name]: time },
    ...dynamic,
    ...parameterCount(stamped ? required.length : required.length + 1, stamped ? [TIME.name, '__proto__'] : ['__proto__']),
    // At least one parameter besides time that is not null.
    ...(dynamicNeeded > 0 && required.length === 0
      ? { not: { properties: { [TIME.name]: true }, patternProperties: { [PROTO_KEY]: true }, additionalProperties: { type: 'null' } } }
      : {}),
  };
}

export const pushRecordSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://telematics-ingest.example/schemas/push-record.json',
  title: 'Push record',
  description: [
    'What the receiver accepts. The receiver reads every number as a double, as JavaScript does (a value within rounding of a bound',
    'is the bound), and a numeric string as the double Number() reads from it. That one rule a schema cannot say exactly:',
    'this schema bounds lat, lng and time strings in plain decimal notation only, by their decimal value, where the receiver also',
    'accepts exponent notation ("9e1") and a long decimal that rounds to the bound; and the receiver refuses a numeric string',
    'beyond the largest double ("1e400"), which this schema lets through where a value has no bound.',
  ].join(' '),
  type: 'object',
  required: ['vehicleno', 'type', 'data'],
  properties: {
    vehicleno: {
      type: 'string',
      minLength: 1,
      maxLength: VEHICLENO_MAX,
      pattern: PLATE,
      description: 'the vehicle; becomes the InfluxDB tag: no control characters, not blank, no backslash at the end or before a comma, space or equals sign',
    },
    type: { enum: TYPES.map((t) => t.name) },
    data: { type: 'object' },
  },
  // Other properties are ignored, but count towards the receiver's nesting limit.
  additionalProperties: ignoredAt(2),
  allOf: TYPES.map((t) => ({ if: { required: ['type'], properties: { type: { const: t.name } } }, then: { properties: { data: dataOf(t) } } })),
  $defs: depths,
} as const;

export const bulkPushSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://telematics-ingest.example/schemas/bulk-push.json',
  title: 'Bulk push',
  type: 'object',
  required: ['bulkData'],
  properties: { bulkData: { type: 'array', items: { $ref: 'push-record.json' } } },
} as const;
