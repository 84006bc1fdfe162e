/**
 * The published JSON Schema says what the receiver accepts: on random records and near misses, each
 * parsed from JSON text as the receiver parses a push, Ajv's verdict is validateRecord's. What a schema
 * cannot say exactly is RECEIVER_ONLY below (and in the schema's description), each shown to be needed.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OPENAPI } from '../ingest/receive/openapi.js';
import { MAX_NESTING, MAX_PARAMETERS, validateRecord } from '../ingest/validate/record.js';
import { fieldNames } from './fields.js';
import { EPOCH_MS_MAX, NUMERIC_STRING, SECONDS_THRESHOLD } from './numbers.js';
import { VEHICLENO_MAX } from './record.js';
import { pushRecordSchema } from './schema.js';
const CAN_FIELDS = fieldNames('can');

// strictTypes would ask for a type beside the nesting definitions' keywords, which apply to any value;
// strictNumbers off: a JSON number however large is a number (1e400 reaches Ajv as Infinity and must
// fail `maximum`, as it would in a validator with exact numbers).
const ajv = new Ajv2020({ strict: true, strictTypes: false, strictNumbers: false, allowUnionTypes: true, allowMatchingProperties: true });
const schemaSays = ajv.compile(pushRecordSchema);
// The same schema as docs/openapi.json's component, its references pointing inside the document.
const openApiSays = new Ajv2020({ strict: false }).addSchema({ $id: 'openapi', components: OPENAPI.components }).getSchema('openapi#/components/schemas/PushRecord')!;
const receiverSays = (record: unknown): boolean => validateRecord(record, Date.now()).ok;

/*
 * A record as JSON text, so that it can hold what JSON.stringify cannot write: numbers beyond a double
 * (1e400), numbers in any spelling, an own `__proto__` key.
 */
class Num {
  constructor(readonly text: string) {}
}
class Obj {
  constructor(readonly entries: ReadonlyArray<readonly [string, unknown]>) {}
}
function jsonText(v: unknown): string {
  if (v instanceof Num) return v.text;
  if (v instanceof Obj) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  return JSON.stringify(v);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A copy of `o` with `f` applied to its own values, keeping `__proto__` an own key. */
function mapOwn(o: Record<string, unknown>, f: (key: string, v: unknown) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) Object.defineProperty(out, k, { value: f(k, o[k]), enumerable: true, writable: true, configurable: true });
  return out;
}

/** A number written out without an exponent: the shortest decimal that reads back as `n`. */
function plainDecimal(n: number): string {
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(String(n));
  if (!m) return String(n);
  const [, sign, lead, rest = '', exp] = m;
  const digits = lead! + rest;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * The receiver's rules a schema cannot say exactly (the schema's description names the same).
 * Each is a rewrite of a record that makes the schema's verdict the receiver's: the test holds
 * `schema(rewrite(x)) === receiver(x)` for every x, so nothing else may differ.
 */
const RECEIVER_ONLY = {
  /**
   * A numeric string is judged as the double Number() reads from it. A pattern can bound a plain
   * decimal ("89.5"), but not one in exponent notation: whether "0.0…09e…" is at most 90 depends on
   * counting its zeros against its exponent, which no regular expression does. (Where rounding to a
   * double carries a long decimal over a bound, or past the largest double, the pattern would need
   * hundreds of characters; the schema leaves those to this rule too.) A numeric string with an
   * exponent or more than 15 significant digits (every decimal of up to 15 reads as a double on the
   * same side of every bound) is rewritten as the double it reads as: in plain decimal, or the number
   * ±Infinity where it overflows.
   */
  numericStringAsDouble(record: unknown): unknown {
    if (!isObject(record) || !isObject(record.data)) return record;
    const data = mapOwn(record.data, (key, v) => {
      if (key === '__proto__' || typeof v !== 'string' || !NUMERIC_STRING.test(v)) return v;
      const [int = '', frac = ''] = v.trim().replace(/^[+-]/, '').split('.');
      const significant = (int + frac.replace(/0+$/, '')).replace(/^0+/, '').length;
      if (!/e/i.test(v) && significant <= 15) return v;
      const n = Number(v);
      return Number.isFinite(n) ? plainDecimal(n) : n;
    });
    return mapOwn(record, (key, v) => (key === 'data' ? data : v));
  },
};
type ReceiverOnly = keyof typeof RECEIVER_ONLY;

// ---- The records: valid ones and near misses of every rule ----

const T = 1_763_700_000_000;
const num = (text: string) => new Num(text);
const someOf = <T,>(...xs: T[]) => fc.constantFrom(...xs);
const weighted = <T,>(...xs: Array<[number, fc.Arbitrary<T>]>) => fc.oneof(...xs.map(([weight, arbitrary]) => ({ weight, arbitrary })));

/** A number in the ways a sender may write it, as a number or as a string. */
function spelled(n: number): fc.Arbitrary<unknown> {
  const fixed = Math.abs(n) < 1e21 ? [n.toFixed(3), n.toFixed(0)] : [];
  return someOf<unknown>(
    num(String(n)),
    num(n.toExponential()),
    String(n),
    ` ${n} `,
    `\u00a0${n}\t`,
    n < 0 ? `-00${-n}` : `+00${n}`,
    n.toExponential(),
    n.toExponential().toUpperCase(),
    n.toExponential(2),
    ...fixed,
    `${n}${Number.isInteger(n) ? '.' : ''}`,
  );
}
const spell = (values: fc.Arbitrary<number>) => values.chain(spelled);

/** Values that are no number: refused wherever a value is required. */
const notNumbers = someOf<unknown>('', ' ', 'abc', '0x10', '1_000', 'Infinity', 'NaN', '12,5', '1e', 'e5', '.', '+', '--1', '1.2.3', '١٢', [], [1], new Obj([['a', 1]]), new Obj([]));
/** Numbers and strings at the limits of doubles and of decimal reading. */
const edgeNumbers = someOf<unknown>(
  num('1e400'),
  num('-1e400'),
  num('1.7976931348623157e308'),
  num('1.7976931348623158e308'),
  num('-0'),
  num('5e-324'),
  '1e400',
  '-1e999',
  '9'.repeat(400),
  `0.${'0'.repeat(400)}1`,
  `${'0'.repeat(30)}1.5`,
  '1.7976931348623157e308',
  '1.8e308',
);

/**
 * Each rule's values: what the receiver should accept, and its near misses. A record has no fault,
 * one (every other value good: the fault alone decides), or many.
 */
interface Choice {
  good: fc.Arbitrary<unknown>;
  bad: fc.Arbitrary<unknown>;
}
const FAULTS = ['plate', 'shape', 'lat', 'lng', 'alti', 'speed', 'ignstatus', 'time', 'params', 'nesting'] as const;
type Fault = (typeof FAULTS)[number] | 'none' | 'many';
const drawn = (c: Choice, here: Fault, fault: Fault): fc.Arbitrary<unknown> =>
  fault === here ? c.bad : fault === 'many' ? weighted<unknown>([4, c.good], [1, c.bad]) : c.good;

/** The double beside `x`, above or below it. */
function beside(x: number, above: boolean): number {
  const bits = new DataView(new ArrayBuffer(8));
  bits.setFloat64(0, x);
  bits.setBigUint64(0, bits.getBigUint64(0) + ((x > 0) === above ? 1n : -1n));
  return bits.getFloat64(0);
}

const coordinate = (max: number): Choice => ({
  good: weighted<unknown>(
    [8, spell(fc.double({ min: -max, max, noNaN: true }))],
    [1, spell(someOf(max, -max, 0, beside(max, false), beside(-max, true)))],
    // At the bound, in exponent notation or rounding to it (the numeric-string exception).
    [1, someOf<unknown>(num(`${max}.000000000000001`), `${max}.000000000000001`, `-${max}.0000000000000071`, `${max}.0000000000000142`, `0.0${max}e2`, `${max / 10}e1`, `${max * 10}e-1`, `${max}.`, `.${max}`, num(`${max}.0`))],
  ),
  bad: weighted<unknown>(
    [3, spell(someOf(max + 1, -max - 1, max + 1e-9, -max - 1e-13, beside(max, true), beside(-max, false), 1e6))],
    [1, someOf<unknown>(`${max}.00000000000001`, `${max}.0000000000000143`, `${max + 1}e0`)],
    [1, edgeNumbers],
    [1, notNumbers],
    [1, someOf<unknown>(true, false, null, undefined)],
  ),
});

const measurement = (flag: boolean): Choice => ({
  good: weighted<unknown>(
    [6, spell(fc.double({ noNaN: true, noDefaultInfinity: true }))],
    [3, spell(fc.integer({ min: -1000, max: 1000 }))],
    [flag ? 2 : 0, someOf<unknown>(true, false)],
  ),
  bad: weighted<unknown>([2, edgeNumbers], [2, notNumbers], [flag ? 0 : 1, someOf<unknown>(true, false)], [1, someOf<unknown>(null, undefined)]),
});

const time = (optional: boolean): Choice => ({
  good: weighted<unknown>(
    [12, spell(fc.integer({ min: T - 1e9, max: T + 1e9 }))],
    [2, spell(someOf(SECONDS_THRESHOLD, EPOCH_MS_MAX))],
    [1, someOf<unknown>(`${T}.0001`, `${SECONDS_THRESHOLD - 1}.9999999`, `${EPOCH_MS_MAX}.0000001`, '1.7637e12', '17637e8', '0.92e13', num(`${T}.0`), num(`${T}.00001`), num('1.7637e12'), `${T}e0`)],
    [optional ? 6 : 0, someOf<unknown>(undefined, null)],
  ),
  bad: weighted<unknown>(
    [3, spell(someOf(SECONDS_THRESHOLD - 1, EPOCH_MS_MAX + 1, T / 1000, Math.floor(T / 1000), T + 0.5, 0, -T, 1e15, 2 ** 53 + 2))],
    [1, someOf<unknown>(`${T}.5`, `${EPOCH_MS_MAX}.0001`, '9.2000000000001e12', `${T}.001`)],
    [1, edgeNumbers],
    [1, notNumbers],
    [1, someOf<unknown>(true, false)],
    [optional ? 0 : 1, someOf<unknown>(undefined, null)],
  ),
});

const goodKey = weighted<string>(
  [4, fc.constantFrom(...CAN_FIELDS)],
  [2, fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,12}$/)],
  [1, someOf('a'.repeat(128), 'Z9_', 'lat', 'ignstatus', 'constructor', 'toString')],
);
const badKey = someOf('_x', '1a', 'a-b', 'a b', '', 'a'.repeat(129), 'ä', 'soc\n', 'time');
const parameterValue: Choice = {
  good: weighted<unknown>([8, measurement(true).good], [1, someOf<unknown>(null)]),
  bad: weighted<unknown>([1, edgeNumbers], [1, notNumbers]),
};

/** A value nested `depth` levels (a scalar nests 0), in arrays and objects. */
const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : new Obj([['x', v]]);
  return v;
};
/** A value the receiver ignores (a record's own extras at level 2, `data.__proto__` at 3), nesting up to the limit or beyond. */
const ignored = (level: number): Choice => {
  const most = MAX_NESTING - level + 1;
  return {
    good: weighted<unknown>([6, fc.jsonValue({ maxDepth: 3 })], [2, fc.integer({ min: most - 3, max: most }).map(nested)], [1, edgeNumbers]),
    bad: fc.integer({ min: most + 1, max: most + 2 }).map(nested),
  };
};
const none = fc.constant<Array<[string, unknown]>>([]);
const protoOf = (fault: Fault) => fc.option(drawn(ignored(3), 'nesting', fault), { freq: 8 });

type Entries = Array<[string, unknown]>;
/** Parameters `p0`, `p1`, … of a count in [min, max], the first sometimes null: the limit counts a null's name too. */
const numbered = (min: number, max: number) =>
  fc.tuple(fc.integer({ min, max }), fc.boolean()).map(([n, withNull]) => Array.from({ length: n }, (_, i): [string, unknown] => [`p${i}`, withNull && i === 0 ? null : i]));
/** Dynamic parameters: good ones (a null under any name is "not received"), or one fault among them. */
const parameters = (fault: Fault, can: boolean): fc.Arbitrary<Entries> => {
  const good = weighted<Entries>(
    [12, fc.array(fc.tuple(goodKey, parameterValue.good), { minLength: 1, maxLength: 6 })],
    [2, fc.array(fc.tuple(weighted<string>([2, goodKey], [1, badKey]), weighted<unknown>([3, parameterValue.good], [1, someOf<unknown>(null)])), { minLength: 1, maxLength: 4 }).filter((ps) => ps.some(([k, v]) => v !== null && k !== 'time'))],
    [2, numbered(MAX_PARAMETERS - 2, MAX_PARAMETERS)],
  );
  const badEntry = weighted<[string, unknown]>(
    [2, fc.tuple(goodKey, parameterValue.bad)],
    [2, fc.tuple(badKey.filter((k) => k !== 'time'), parameterValue.good.filter((v) => v !== null))],
    [1, fc.tuple(goodKey, ignored(3).good.filter((v) => typeof v === 'object' && v !== null))],
  );
  const bad = weighted<Entries>(
    [6, fc.tuple(good, badEntry, fc.nat()).map(([ps, e, at]) => [...ps.slice(0, at % (ps.length + 1)), e, ...ps.slice(at % (ps.length + 1))])],
    [2, numbered(MAX_PARAMETERS + 1, MAX_PARAMETERS + 2)],
    // A CAN record needs one parameter besides time that is not null.
    [can ? 2 : 0, weighted<Entries>([1, none], [1, fc.array(fc.tuple(weighted<string>([1, goodKey], [1, badKey]), someOf<unknown>(null)), { minLength: 1, maxLength: 3 })])],
  );
  if (fault === 'params') return bad;
  if (fault === 'many') return weighted<Entries>([4, good], [1, bad]);
  return can ? good : weighted<Entries>([1, none], [1, good]);
};

const gpsData = (fault: Fault) =>
  fc
    .record({
      lat: drawn(coordinate(90), 'lat', fault),
      lng: drawn(coordinate(180), 'lng', fault),
      alti: drawn(measurement(false), 'alti', fault),
      speed: drawn(measurement(false), 'speed', fault),
      ignstatus: drawn(measurement(true), 'ignstatus', fault),
      time: drawn(time(false), 'time', fault),
      extras: parameters(fault, false),
      proto: protoOf(fault),
    })
    .map(({ extras, proto, ...core }) => {
      const entries: Entries = Object.entries(core).filter(([, v]) => v !== undefined);
      if (proto !== null) entries.push(['__proto__', proto]);
      return new Obj([...entries, ...extras]);
    });

const canData = (fault: Fault) =>
  fc.record({ time: drawn(time(true), 'time', fault), params: parameters(fault, true), proto: protoOf(fault) }).map(({ time: t, params, proto }) => {
    const entries: Entries = t === undefined ? [] : [['time', t]];
    if (proto !== null) entries.push(['__proto__', proto]);
    return new Obj([...entries, ...params]);
  });

const SPECIAL = ['\u0000', '\u001f', '\u007f', '\u0085', '\u009f', ' ', '\t', '\u00a0', '\u2028', '\ufeff', '\\', ',', '=', '😀', '\ud800', 'é'];
const plate: Choice = {
  good: weighted<unknown>(
    [12, fc.stringMatching(/^[A-Z]{2}-\d{1,4}$/)],
    [2, fc.stringMatching(/^[A-Za-z0-9 ,=\u00a0é😀-]{1,12}$/).filter((s) => s.trim() !== '')],
    [1, someOf('KA\\1', 'A\\\\\\\\B', 'A\\\\x', ' A ', '\\x')],
    // Around the length limit, counted in characters: some of two UTF-16 units, or lone surrogates.
    [1, fc.tuple(fc.integer({ min: VEHICLENO_MAX - 2, max: VEHICLENO_MAX }), fc.array(fc.constantFrom('😀', '\ud800', '\udfff', 'é'), { maxLength: 3 })).map(([n, odd]) => 'A'.repeat(n - odd.length) + odd.join(''))],
  ),
  bad: weighted<unknown>(
    [4, fc.array(weighted<string>([3, fc.constantFrom('A', 'b', '7', '-')], [2, fc.constantFrom(...SPECIAL)]), { maxLength: 8 }).map((cs) => cs.join(''))],
    [1, fc.tuple(fc.integer({ min: VEHICLENO_MAX + 1, max: VEHICLENO_MAX + 2 }), fc.array(fc.constantFrom('😀', '\ud800', 'é'), { maxLength: 3 })).map(([n, odd]) => 'A'.repeat(n - odd.length) + odd.join(''))],
    [1, someOf<unknown>(undefined, null, 7, true, [], new Obj([]), '', '   ', '\u2028', 'A\\', 'A\\ B', 'A\\,B', 'A\\=B', 'A\\\\\\ B')],
  ),
};

const typeAndData = (fault: Fault): fc.Arbitrary<[unknown, unknown]> => {
  const gps = gpsData(fault).map((d): [unknown, unknown] => ['gps', d]);
  const can = canData(fault).map((d): [unknown, unknown] => ['can', d]);
  const shape = weighted<[unknown, unknown]>(
    // A GPS record's data is a valid CAN record's; a CAN record's is no GPS record's.
    [1, gpsData('none').map((d): [unknown, unknown] => ['can', d])],
    [1, canData('none').map((d): [unknown, unknown] => ['gps', d])],
    [1, fc.tuple(someOf<unknown>('gps', 'can'), someOf<unknown>(undefined, null, [], 'x', 1, [new Obj([['soc', 1]])]))],
    [2, fc.tuple(someOf<unknown>(undefined, 'GPS', 'fuel', '', null, 1, ['can']), canData('none'))],
  );
  if (fault === 'shape') return shape;
  if (fault === 'many') return weighted<[unknown, unknown]>([4, gps], [4, can], [1, shape]);
  return weighted<[unknown, unknown]>([1, gps], [1, can]);
};

const record = (fault: Fault) =>
  fc
    .tuple(drawn(plate, 'plate', fault), typeAndData(fault), weighted<Entries>([fault === 'nesting' ? 0 : 6, none], [1, fc.array(fc.tuple(someOf('extra', 'meta', '__proto__', 'bulkData'), drawn(ignored(2), 'nesting', fault)), { minLength: 1, maxLength: 2 })]))
    .map(([vehicleno, [type, data], extra]) => {
      const entries: Entries = [];
      if (vehicleno !== undefined) entries.push(['vehicleno', vehicleno]);
      if (type !== undefined) entries.push(['type', type]);
      if (data !== undefined) entries.push(['data', data]);
      return jsonText(new Obj([...entries, ...extra]));
    });

const records = weighted<string>(
  [30, record('none')],
  ...FAULTS.map((f): [number, fc.Arbitrary<string>] => [3, record(f)]),
  [10, record('many')],
  [1, someOf('null', '[]', '"x"', '1', '[{"vehicleno":"A","type":"can","data":{"soc":1}}]')],
);

/** Records worth running every time: the rules of issue #18 one by one. */
const EXAMPLES: string[] = [
  `{"vehicleno":"KA-1","type":"gps","data":{"lat":"12.5","lng":"77.25","alti":"0","speed":" 3 ","ignstatus":true,"time":"${T}"}}`,
  `{"vehicleno":"KA-1","type":"gps","data":{"lat":"91","lng":0,"alti":0,"speed":0,"ignstatus":0,"time":${T}}}`,
  `{"vehicleno":"KA-1","type":"gps","data":{"lat":true,"lng":0,"alti":0,"speed":0,"ignstatus":0,"time":${T}}}`,
  `{"vehicleno":"KA-1","type":"gps","data":{"lat":0,"lng":0,"alti":1e400,"speed":0,"ignstatus":0,"time":${T}}}`,
  `{"vehicleno":"KA-1","type":"gps","data":{"lat":0,"lng":0,"alti":0,"speed":0,"ignstatus":0,"time":${Math.floor(T / 1000)}}}`,
  `{"vehicleno":"KA-1","type":"gps","data":{"lat":0,"lng":0,"alti":0,"speed":0,"ignstatus":0,"time":${T},"extra":false,"_x":null}}`,
  `{"vehicleno":"KA-1","type":"can","data":{"time":null,"soc":null}}`,
  `{"vehicleno":"KA-1","type":"can","data":{"soc":null,"current":"-1.5"}}`,
  `{"vehicleno":"KA-1","type":"can","data":{"time":${T}}}`,
  `{"vehicleno":"KA-1","type":"can","data":{"__proto__":{"soc":1},"bad key":null,"soc":1}}`,
  `{"vehicleno":"  ","type":"can","data":{"soc":1}}`,
  `{"vehicleno":"KA\\\\ 1","type":"can","data":{"soc":1}}`,
  `{"vehicleno":"KA\\\\\\\\ 1","type":"can","data":{"soc":1}}`,
  `{"vehicleno":"KA-1\\u0085","type":"can","data":{"soc":1}}`,
  // Ignored properties nested to the limit and beyond it (the receiver's fast path once skipped the check).
  `{"vehicleno":"KA-1","type":"can","data":{"soc":1},"x":${jsonText(nested(MAX_NESTING - 1))}}`,
  `{"vehicleno":"KA-1","type":"can","data":{"soc":1},"x":${jsonText(nested(MAX_NESTING))}}`,
  `{"vehicleno":"KA-1","type":"can","data":{"soc":"1","__proto__":${jsonText(nested(MAX_NESTING - 1))}}}`,
  // The parameter limit, with and without the names it does not count.
  ...[MAX_PARAMETERS, MAX_PARAMETERS + 1].flatMap((n) => {
    const params = Array.from({ length: n }, (_, i) => `"p${i}":${i}`).join(',');
    const gps = `"lat":0,"lng":0,"alti":0,"speed":0,"ignstatus":0,"time":${T}`;
    return ['', `"time":${T},`, '"time":null,', '"__proto__":1,', `"time":${T},"__proto__":1,`, `${gps},`, `${gps},"__proto__":1,`].map(
      (head) => `{"vehicleno":"KA-1","type":"${head.includes('lat') ? 'gps' : 'can'}","data":{${head}${params}}}`,
    );
  }),
];

describe('the push record schema', () => {
  it('gives the receiver’s verdict on every record, but for the rules it cannot say (each needed)', () => {
    const needed: Record<ReceiverOnly, number> = { numericStringAsDouble: 0 };
    const verdicts = { accepted: 0, refused: 0 };
    fc.assert(
      fc.property(records, (text) => {
        const record: unknown = JSON.parse(text);
        const receiver = receiverSays(record);
        let rewritten = record;
        for (const name of Object.keys(RECEIVER_ONLY) as ReceiverOnly[]) {
          const next = RECEIVER_ONLY[name](rewritten);
          if (schemaSays(next) !== schemaSays(rewritten)) needed[name]++;
          rewritten = next;
        }
        expect(schemaSays(rewritten), `${text}\n${JSON.stringify(schemaSays.errors)}`).toBe(receiver);
        expect(openApiSays(rewritten)).toBe(receiver);
        verdicts[receiver ? 'accepted' : 'refused']++;
      }),
      { numRuns: 5_000, examples: EXAMPLES.map((e) => [e]) },
    );
    // Both verdicts are common, and every exception on the list is one the schema cannot do without.
    expect(verdicts.accepted).toBeGreaterThan(1_000);
    expect(verdicts.refused).toBeGreaterThan(1_000);
    for (const name of Object.keys(needed) as ReceiverOnly[]) expect(needed[name], name).toBeGreaterThan(0);
  });

  it('describes each rule it cannot say, in the words the test names it', () => {
    expect(pushRecordSchema.description).toMatch(/a numeric string as the double Number\(\) reads/);
  });
});
