import type { RecordType } from '../../telemetry/record.js';
import { CAN_ALERT_FLAGS } from '../../telemetry/fields.js';
import type { RangeOverride } from '../../config/index.js';

/**
 * What a vehicle can truly have measured: the one table of bounds a well-formed record is judged
 * by (validate/ has already checked its shape). Each row says its unit and why its bound is where it
 * is, so an operator can tell a rule to widen (a 600 V truck fleet) from a device to fix. A field no
 * row names (an unknown CAN parameter) is never checked.
 */
export interface RangeRule {
  /** The rule's name: the `rule` label on /metrics, in answers and the quarantine, and in PLAUSIBLE_RANGES. */
  rule: string;
  /** The fields it bounds: names, or one pattern (`cell_voltage_NN`). */
  fields: readonly string[] | RegExp;
  /** The record type it applies to; both when unset. */
  type?: RecordType;
  min: number;
  max: number;
  /** Only whole numbers (the 0/1 flags). */
  integer?: boolean;
  unit: string;
  why: string;
}

export const FLAG_FIELDS: readonly string[] = ['allow_charging', 'allow_discharging', 'alert', ...CAN_ALERT_FLAGS];

/** The defaults; PLAUSIBLE_RANGES overrides them by rule name (see `rangeRules`). */
export const RANGE_RULES: readonly RangeRule[] = [
  { rule: 'flag', fields: ['ignstatus'], type: 'gps', min: 0, max: 1, integer: true, unit: '0/1', why: 'spec shape: ignition is on (1) or off (0); a boolean is read as 1/0' },
  { rule: 'flag', fields: FLAG_FIELDS, type: 'can', min: 0, max: 1, integer: true, unit: '0/1', why: 'spec shape: allow_charging, allow_discharging, alert and every alert_* flag are 0 or 1' },
  { rule: 'percent', fields: ['soc', 'soh'], type: 'can', min: 0, max: 100, unit: '%', why: 'spec shape: state of charge and of health are percentages' },
  {
    rule: 'cell_voltage',
    fields: /^cell_voltage_\d{2}$/,
    type: 'can',
    min: 0,
    max: 5,
    unit: 'V',
    why: 'physics: no lithium-ion (at most 4.45 V charged) or lead-acid cell holds 5 V; below 0 V is a sensor fault',
  },
  {
    rule: 'cell_temperature',
    fields: /^cell_temperature_\d{2}$/,
    type: 'can',
    min: -55,
    max: 150,
    unit: '°C',
    why: 'physics: beyond the range of the thermistors a BMS reads (−55 to 150 °C) a reading is a sensor fault',
  },
  {
    rule: 'battery_voltage',
    fields: ['battery_voltage'],
    type: 'can',
    min: 0,
    max: 1000,
    unit: 'V',
    why: 'physics: the highest-voltage vehicle packs (800 V class) stay below 1000 V; set a fleet\'s own bound',
  },
  { rule: 'speed', fields: ['speed'], type: 'gps', min: 0, max: 300, unit: 'km/h', why: 'physics: no fleet road vehicle reaches 300 km/h; GPS glitches report thousands' },
  {
    rule: 'altitude',
    fields: ['alti'],
    type: 'gps',
    min: -500,
    max: 9_000,
    unit: 'm',
    why: 'physics: roads run from the Dead Sea shore (−430 m) to about 5,800 m; GPS altitude errs by tens of metres',
  },
];

/** The names that PLAUSIBLE_RANGES may switch off besides the range rules: the position and time rules. */
export const ZERO_POSITION = 'zero_position';
export const TIME_FUTURE = 'time_future';
export const TIME_PAST = 'time_past';


/**
 * The table with the operator's overrides: a rule name sets that rule's bounds (or switches it off);
 * any other name is a field, which then gets a rule of its own (unit unknown, reason "operator").
 */
export function rangeRules(overrides: readonly RangeOverride[]): { rules: RangeRule[]; zeroPosition: boolean } {
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
  return { rules, zeroPosition };
}

/** The rule bounding `field` of a `type` record, or undefined when no row names it. */
/** Whether `value` is within `rule` (its range, and whole when the rule says so). */
export function withinRule(value: number, rule: RangeRule): boolean {
  return value >= rule.min && value <= rule.max && (!rule.integer || Number.isInteger(value));
}

export function ruleFor(rules: readonly RangeRule[], type: RecordType, field: string): RangeRule | undefined {
  for (const r of rules) {
    if (r.type !== undefined && r.type !== type) continue;
    if (Array.isArray(r.fields) ? r.fields.includes(field) : (r.fields as RegExp).test(field)) return r;
  }
  return undefined;
}
