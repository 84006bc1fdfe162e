import { RECORD_TYPES, TIME, type FieldSpec, type RangeSpec, type RecordTypeSpec } from './vehicleData.js';
import { DERIVED_MEASUREMENTS, type DerivedMeasurement } from './derivedMeasurements.js';

/**
 * The record's schema (vehicleData.ts) as Markdown: docs/fields.md's field tables and docs/analysts.md's
 * units table. Pure functions of the schema, so `npm run docs` can rewrite the documents and a test can
 * tell when they drift. Rendering only: what a field means stays in the schema.
 */

/** `name` as inline code. */
export const code = (text: string): string => `\`${text}\``;

/** A Markdown table; a cell's pipe is escaped and a line break flattened, so any description fits a cell. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const cell = (text: string) => text.replaceAll('|', '\\|').replace(/\s*\n\s*/g, ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}

/** A number as the documents write it: a true minus sign, as the prose around the tables has it. */
export const formatNumber = (n: number): string => (n < 0 ? `−${-n}` : String(n));

/** A bound as prose: "0 or 1", "−90 to 90°", "0 to 300 km/h". */
export function formatBound(range: Pick<RangeSpec, 'min' | 'max' | 'integer'>, unit = ''): string {
  if (range.integer && range.min === 0 && range.max === 1) return '0 or 1';
  // A degree sign sits on its number; every other unit is a word apart.
  const u = unit === '' || unit === '0/1' ? '' : unit === '°' ? unit : ` ${unit}`;
  return `${formatNumber(range.min)} to ${formatNumber(range.max)}${u}${range.integer ? ', whole numbers' : ''}`;
}

/** One name, a numbered series (`cell_voltage_NN`), or every name of a prefix (`alert_*`). */
export interface NameToken {
  readonly kind: 'name' | 'series' | 'prefix';
  /** As written: `soc`, `cell_voltage_NN`, `alert_*`. */
  readonly text: string;
  /** The names it stands for, in order. */
  readonly names: readonly string[];
}

const NUMBERED = /^(.*?)(\d+)$/;

/**
 * `names` the way a reader takes them in: a numbered series (two or more names of `all` sharing a
 * prefix) as `prefix` + N a digit (`cell_voltage_NN`; `bat_id_N` when the numbers are not padded), and
 * three or more tokens of one `word_` prefix as `word_*` when `names` holds every name of `all` with that
 * prefix (so `*` never claims too much).
 */
export function collapseNames(names: readonly string[], all: readonly string[] = names): NameToken[] {
  // Each numbered prefix of `all` with the digit counts of its members.
  const series = new Map<string, number[]>();
  for (const n of all) {
    const m = NUMBERED.exec(n);
    if (m) series.set(m[1]!, [...(series.get(m[1]!) ?? []), m[2]!.length]);
  }
  const seriesKey = (name: string): string | undefined => {
    const m = NUMBERED.exec(name);
    const widths = m ? (series.get(m[1]!) ?? []) : [];
    if (!m || widths.length < 2) return undefined;
    return `${m[1]}${new Set(widths).size === 1 ? 'N'.repeat(m[2]!.length) : 'N'}`;
  };
  const tokens: Array<{ kind: NameToken['kind']; text: string; names: string[] }> = [];
  const byText = new Map<string, { names: string[] }>();
  for (const n of names) {
    const k = seriesKey(n);
    const text = k ?? n;
    const had = byText.get(text);
    if (had) {
      had.names.push(n);
      continue;
    }
    const t = { kind: text === n ? ('name' as const) : ('series' as const), text, names: [n] };
    tokens.push(t);
    byText.set(text, t);
  }
  const prefixOf = (text: string) => /^([a-z0-9]+_)./.exec(text)?.[1];
  const out: NameToken[] = [];
  const done = new Set<string>();
  for (const t of tokens) {
    const p = prefixOf(t.text);
    if (p === undefined) {
      out.push(t);
      continue;
    }
    if (done.has(p)) continue;
    const same = tokens.filter((o) => prefixOf(o.text) === p);
    const covered = new Set(same.flatMap((o) => o.names));
    if (same.length >= 3 && all.every((n) => !n.startsWith(p) || covered.has(n))) {
      out.push({ kind: 'prefix', text: `${p}*`, names: same.flatMap((o) => o.names) });
      done.add(p);
    } else out.push(t);
  }
  return out;
}

/** The tokens as a list of code spans; `every` words a prefix as "every `alert_*`". */
export const formatNames = (tokens: readonly NameToken[], every = false): string =>
  tokens.map((t) => (every && t.kind === 'prefix' ? `every ${code(t.text)}` : code(t.text))).join(', ');

/** Where a value outside a field's bound goes. */
function boundCell(f: FieldSpec): string {
  const r = f.range;
  if (r === undefined) return '';
  const refuses = r.refuses === 'record' ? 'refuses the record' : `refuses the field${r.rule === undefined ? '' : ` (${code(r.rule)})`}`;
  return `${formatBound(r, f.unit)}: ${refuses}`;
}

function fieldRow(f: FieldSpec): string[] {
  return [
    code(f.name),
    f.flag ? '0/1' : f.json,
    // A flag's unit is its type.
    f.flag ? '' : (f.unit ?? ''),
    f.required ? 'yes' : '',
    boundCell(f),
    String(f.id),
    f.description,
  ];
}

const count = (n: number, what: string) => `${n === 1 ? 'one' : n} ${what}${n === 1 ? '' : 's'}`;

/** What stands above a type's table: its description, where its points go, its time rule, what else it keeps. */
function typeLine(t: RecordTypeSpec): string {
  const time = `${code(TIME.name)} (wire id ${TIME.id}; ${TIME.description})`;
  return [
    `**${code(t.name)}** — ${t.description}. Its points go to measurement ${code(t.measurement)}.`,
    t.time === 'required' ? `${time}: required.` : `${time}: optional; a record without it (or with null) is stamped with the time the receiver accepted it.`,
    `A record carries at least ${count(t.minParameters, 'parameter')} besides ${code(TIME.name)};`,
    'parameters not listed here are kept when numeric (stored as sent, as floats) and bounded by no rule.',
  ].join(' ');
}

/** A family's pattern as a reader writes it (`^cell_voltage_\d{2}$` is `cell_voltage_NN`), or the pattern. */
export function familyName(pattern: RegExp): string {
  const s = pattern.source.replace(/^\^/, '').replace(/\$$/, '').replace(/\\d\{(\d+)\}/g, (_, n: string) => 'N'.repeat(Number(n))).replace(/\\d\+/g, 'N');
  return /[\\[\](){}+*?|.^$]/.test(s) ? pattern.source : s;
}

function familiesLine(t: RecordTypeSpec): string | undefined {
  const fams = t.families ?? [];
  if (fams.length === 0) return undefined;
  const each = fams.map((f) => `${code(familyName(f.pattern))} by ${f.range.rule === undefined ? formatBound(f.range) : code(f.range.rule)}`);
  return `Names numbered beyond those listed are bounded too: ${each.join(', ')}.`;
}

/** docs/fields.md's field tables: one a record type, every field it names. */
export function fieldTables(types: readonly RecordTypeSpec[] = RECORD_TYPES): string {
  const head = ['Field', 'Type', 'Unit', 'Required', 'Bound', 'Wire id', 'What'];
  return types
    .map((t) => [typeLine(t), markdownTable(head, t.fields.map(fieldRow)), familiesLine(t)].filter((p): p is string => p !== undefined).join('\n\n'))
    .join('\n\n');
}

/** A unit in words, for analysts reading query results; a unit not named here is written as it is. */
const UNIT_WORDS: Readonly<Record<string, string>> = {
  '°': 'degrees',
  m: 'metres',
  'km/h': 'km/h',
  '0/1': '1 on (yes, raised), 0 off (no, cleared)',
  V: 'volts',
  A: 'amperes',
  W: 'watts',
  '%': 'percent',
  Ah: 'ampere-hours',
  count: 'a count',
  '°C': '°C',
  ms: 'epoch milliseconds',
};

export interface UnitsExtras {
  /** Names that are no schema field but share a unit (the `can_pack` statistics), by the schema's unit. */
  readonly also?: Readonly<Record<string, readonly string[]>>;
  /** Whole rows after the schema's (the fuel sync's `value`). */
  readonly rows?: ReadonlyArray<readonly [string, string]>;
}

/**
 * docs/analysts.md's units table: the fields sharing a unit in one row, in the schema's order; a field
 * without a unit (a code, an id) in a row of its own, with what its value means.
 */
export function unitsTable(types: readonly RecordTypeSpec[] = RECORD_TYPES, extras: UnitsExtras = {}): string {
  const fields = new Map<string, FieldSpec>();
  for (const t of types) for (const f of t.fields) if (!fields.has(f.name)) fields.set(f.name, f);
  const all = [...fields.keys()];
  // A unitless field groups only with its own series (bat_id_1 … bat_id_16).
  const groups = new Map<string, string[]>();
  for (const f of fields.values()) {
    const key = f.unit !== undefined ? `unit:${f.unit}` : `name:${collapseNames([f.name], all)[0]!.text}`;
    groups.set(key, [...(groups.get(key) ?? []), f.name]);
  }
  const rows: Array<readonly [string, string]> = [...groups.values()].map((names) => {
    const first = fields.get(names[0]!)!;
    const listed = [formatNames(collapseNames(names, all)), ...(first.unit === undefined ? [] : (extras.also?.[first.unit] ?? []))].join(', ');
    if (first.unit !== undefined) return [listed, UNIT_WORDS[first.unit] ?? first.unit];
    return [listed, `no unit: ${seriesDescription(names.map((n) => fields.get(n)!))}`];
  });
  return markdownTable(['Field', 'Unit'], [...rows, ...(extras.rows ?? [])]);
}

/** A series' description with its number as N ("id of battery N"), when every member says the same so. */
function seriesDescription(fs: readonly FieldSpec[]): string {
  const general = (f: FieldSpec) => {
    const n = NUMBERED.exec(f.name)?.[2];
    return n === undefined ? f.description : f.description.replace(new RegExp(`\\b${Number(n)}\\b`), 'N');
  };
  const first = general(fs[0]!);
  return fs.length > 1 && fs.every((f) => general(f) === first) ? first : fs[0]!.description;
}

/** The derived measurements (derivedMeasurements.ts), each a heading, what it is, and its tags and fields with their units. */
export function derivedTables(measurements: readonly DerivedMeasurement[] = DERIVED_MEASUREMENTS): string {
  return measurements
    .map((m) => {
      const rows = [...m.tags.map((t) => [code(t.name), 'tag', '', t.description]), ...m.fields.map((f) => [code(f.name), 'field', f.unit ?? '', f.description])];
      return [`#### \`${m.name}\``, '', `${m.description}; its time: ${m.time}. Written by ${m.writer}.`, '', markdownTable(['Name', 'Kind', 'Unit', 'What'], rows)].join('\n');
    })
    .join('\n\n');
}
