import { typeNamed } from '../../telemetry/fields.js';
import { code, collapseNames, formatBound, formatNames, markdownTable } from '../../telemetry/tables.js';
import { RANGE_RULES, TIME_FUTURE, TIME_PAST, ZERO_POSITION, type RangeRule } from './rules.js';

/**
 * docs/sending.md's "Data quality" table: the time and position rules (judge.ts's own code, so written
 * here), then one row per range rule and record type, from RANGE_RULES. `npm run docs` writes it; a
 * test fails when docs/sending.md's copy drifts.
 */

const HEAD = ['Rule', 'Refuses', 'Default', 'Why'] as const;

/** The rules that are not ranges: judge.ts implements them, config/ sets their defaults. */
const FIXED_ROWS: ReadonlyArray<readonly string[]> = [
  [code(TIME_FUTURE), 'the record', 'more than `TIME_MAX_AHEAD` (15 min) ahead of the receiver\'s clock', 'a wrong clock; a first record after wake-up may be stamped up to 5 minutes ahead, so that lands'],
  [code(TIME_PAST), 'the record', 'older than `TIME_MAX_AGE` (90 days)', 'a broken clock (a rollover is named as such); buffers days late still land'],
  [code(ZERO_POSITION), '`lat` and `lng`', '(0, 0)', '"no fix"; the rest of the GPS record (speed, ignition, …) is kept'],
];

function rangeRow(r: RangeRule): string[] {
  const all = r.type === undefined ? r.fields : (typeNamed(r.type)?.spec.fields.map((f) => f.name) ?? r.fields);
  const bound = formatBound(r, r.unit);
  const where = r.type === undefined ? '' : ` (${r.type})`;
  const lead = r.integer && r.min === 0 && r.max === 1 ? `not ${bound}` : `outside ${bound}`;
  return [code(r.rule), 'the field', `${lead}${where}: ${formatNames(collapseNames(r.fields, all), true)}`, r.why];
}

export function plausibilityTable(rules: readonly RangeRule[] = RANGE_RULES): string {
  return markdownTable(HEAD, [...FIXED_ROWS, ...rules.map(rangeRow)]);
}
