import { TYPES, VEHICLE_TAG, type RangeSpec } from '../../telemetry/fields.js';
import type { RangeOverride } from '../../config/index.js';
import { sensorNumber } from '../flatten/packHealth.js';

/**
 * What a vehicle can truly have measured: the bounds a well-formed record is judged by (validate/ has
 * already checked its shape), as the record's schema (src/telemetry/vehicleData.ts) declares them on
 * its fields, one row per rule and record type. Each row says its unit and why its bound is where it
 * is, so an operator can tell a rule to widen (a 600 V truck fleet) from a device to fix. A field no
 * row names (an unknown CAN parameter) is never checked.
 */
export interface RangeRule {
  /** The rule's name: the `rule` label on /metrics, in answers and the quarantine, and in PLAUSIBLE_RANGES. */
  rule: string;
  /** The fields it bounds by name. */
  fields: readonly string[];
  /** And the names beyond those it bounds by pattern (a numbered series' `cell_voltage_NN`). */
  pattern?: RegExp;
  /** The record type it applies to; every type when unset (an operator's own field). */
  type?: string;
  min: number;
  max: number;
  /** Only whole numbers (the 0/1 flags). */
  integer?: boolean;
  unit: string;
  why: string;
  /** Values let through whatever the bound: a sensor's "no reading" (CAN_TEMP_SENTINELS), which flatten/ leaves out. */
  accepts?: readonly number[];
  /** A verdict that may change (a name refused while the bound is full here, admitted by another receiver): looked up again, never cached. */
  recheck?: boolean;
}

/** The defaults, from the schema; PLAUSIBLE_RANGES overrides them by rule name (see `rangeRules`). */
export const RANGE_RULES: readonly RangeRule[] = TYPES.flatMap((t) => {
  const rows = new Map<RangeSpec, RangeRule>();
  for (const f of t.spec.fields) {
    const r = f.range;
    if (r?.refuses !== 'field' || r.rule === undefined) continue;
    const row = rows.get(r);
    if (row) (row.fields as string[]).push(f.name);
    else rows.set(r, { rule: r.rule, fields: [f.name], type: t.name, min: r.min, max: r.max, ...(r.integer ? { integer: true } : {}), unit: f.unit ?? '', why: r.why ?? '' });
  }
  for (const fam of t.spec.families ?? []) {
    const row = rows.get(fam.range);
    if (row) row.pattern = fam.pattern;
  }
  return [...rows.values()];
});

/** The names that PLAUSIBLE_RANGES may switch off besides the range rules: the position and time rules. */
export const ZERO_POSITION = 'zero_position';
export const TIME_FUTURE = 'time_future';
export const TIME_PAST = 'time_past';
/** A field named as one of its measurement's tags, and a name beyond EXTRA_FIELDS_MAX (fieldNames.ts): refused whatever its value. */
export const TAG_NAME = 'tag_name';
export const EXTRA_FIELDS = 'extra_fields';
/** The tag keys of a record's points: no field may be named so. */
export const TAG_KEYS: readonly string[] = [VEHICLE_TAG];


/**
 * The table with the operator's overrides: a rule name sets that rule's bounds (or switches it off);
 * any other name is a field, which then gets a rule of its own (unit unknown, reason "operator"). The
 * rules bounding temperature sensors let `temperatureSentinels` (CAN_TEMP_SENTINELS) through.
 */
export function rangeRules(overrides: readonly RangeOverride[], temperatureSentinels: readonly number[] = []): { rules: RangeRule[]; zeroPosition: boolean } {
  let rules = RANGE_RULES.map((r) => ({ ...r }));
  let zeroPosition = true;
  for (const o of overrides) {
    if (o.name === ZERO_POSITION) {
      if (!o.off) throw new Error(`PLAUSIBLE_RANGES: ${ZERO_POSITION} takes only "off"`);
      zeroPosition = false;
      continue;
    }
    const named = rules.filter((r) => r.rule === o.name);
    if (o.off) {
      rules = named.length > 0 ? rules.filter((r) => r.rule !== o.name) : rules;
      continue;
    }
    if (named.length > 0) {
      for (const r of named) Object.assign(r, { min: o.min, max: o.max, why: `operator (PLAUSIBLE_RANGES); default ${r.min} to ${r.max}: ${r.why}` });
    } else {
      // An operator's own field comes first, so it overrides the row that would otherwise cover it.
      rules.unshift({ rule: o.name, fields: [o.name], min: o.min, max: o.max, unit: '', why: 'operator (PLAUSIBLE_RANGES)' });
    }
  }
  // A sensor's sentinel is "no reading", not a temperature out of range: flatten/ leaves it out, uncounted here.
  if (temperatureSentinels.length > 0) for (const r of rules) if (r.fields.some((f) => sensorNumber(f) >= 0)) r.accepts = temperatureSentinels;
  return { rules, zeroPosition };
}

/** Whether `value` is within `rule` (its range, and whole when the rule says so). */
export function withinRule(value: number, rule: RangeRule): boolean {
  return (value >= rule.min && value <= rule.max && (!rule.integer || Number.isInteger(value))) || (rule.accepts !== undefined && rule.accepts.includes(value));
}

/** The rule bounding `field` of a `type` record, or undefined when no row names it. */
export function ruleFor(rules: readonly RangeRule[], type: string, field: string): RangeRule | undefined {
  for (const r of rules) {
    if (r.type !== undefined && r.type !== type) continue;
    if (r.fields.includes(field) || r.pattern?.test(field)) return r;
  }
  return undefined;
}
