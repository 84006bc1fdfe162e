import type { TelemetryRecord } from '../../telemetry/record.js';
import { typeOf } from '../../telemetry/fields.js';
import { EXTRA_FIELDS, ruleFor, TAG_KEYS, TAG_NAME, TIME_FUTURE, TIME_PAST, ZERO_POSITION, type RangeRule, withinRule } from './rules.js';
import type { ExtraFieldNames } from './fieldNames.js';

/**
 * Whether a well-formed record can be true. A time that cannot be true refuses the record (it has no
 * time to be stored at); a value that cannot be true refuses only that field, and the rest of the
 * record is kept. A record left with no field is refused whole.
 */
export interface PlausibilityOptions {
  /** TIME_MAX_AHEAD: how far ahead of the receiver's clock a record's time may be; 0 switches the rule off. */
  maxAheadMs: number;
  /** TIME_MAX_AGE: how old a record may be; 0 switches the rule off. */
  maxAgeMs: number;
  /** The range table with the operator's overrides (`rangeRules`). */
  rules: readonly RangeRule[];
  /** Whether (0, 0) is refused as "no fix". */
  zeroPosition: boolean;
  /** The names admitted beyond the schema (EXTRA_FIELDS_MAX); every name when unset. */
  extraFields?: ExtraFieldNames;
}

/** A field not stored, and why: told to the sender, kept in the quarantine, counted by `rule`. */
export interface RefusedField {
  field: string;
  value: number;
  rule: string;
  error: string;
}

export type Judgement =
  | { ok: true; refused: readonly RefusedField[] }
  | { ok: false; rule: string; error: string; refused: readonly RefusedField[] };

const PLAUSIBLE: Judgement = { ok: true, refused: [] };
const WEEK = 7 * 86_400_000;
/** GPS week numbers roll over every 1024 weeks; a receiver that missed one dates its fixes that far back. */
const ROLLOVER = 1024 * WEEK;
const NAMES_KEPT = 10_000;
const NO_RULE = null;

/** (0, 0): what a device without a GPS fix reports, not a position. Both paths call this. */
export function isNoFix(lat: number | undefined, lng: number | undefined): boolean {
  return lat === 0 && lng === 0;
}

export class Plausibility {
  /** The rule of a field name, per record type: looked up once per name, not matched for every value. */
  private readonly byName = new Map<string, Map<string, RangeRule | null>>();

  constructor(readonly opts: PlausibilityOptions) {}

  /**
   * Judges `record` against the receiver's clock at `receivedAt`; refused fields are removed from
   * `record.fields` in place (the record was made for this push by validate/).
   */
  judge(record: TelemetryRecord, receivedAt: number): Judgement {
    const timeProblem = this.timeProblem(record.time, receivedAt);
    if (timeProblem) return { ok: false, ...timeProblem, refused: [] };
    let refused: RefusedField[] | undefined;
    const { fields } = record;
    const at = typeOf(record.type).spec.position;
    if (this.opts.zeroPosition && at !== undefined && isNoFix(fields[at.lat], fields[at.lng])) {
      const error = '(0, 0) is what a device without a GPS fix reports, not a position; the position is not stored';
      refused = [
        { field: at.lat, value: 0, rule: ZERO_POSITION, error },
        { field: at.lng, value: 0, rule: ZERO_POSITION, error },
      ];
      delete fields[at.lat];
      delete fields[at.lng];
    }
    for (const field in fields) {
      const rule = this.ruleOf(record.type, field);
      if (rule === NO_RULE) continue;
      const value = fields[field]!;
      if (withinRule(value, rule)) continue;
      (refused ??= []).push({ field, value, rule: rule.rule, error: outside(value, rule) });
      delete fields[field];
    }
    if (!refused) return PLAUSIBLE;
    for (const _ in fields) return { ok: true, refused };
    const rules = [...new Set(refused.map((r) => r.rule))];
    return { ok: false, rule: rules[0]!, error: `no field left to store: ${refused.map((r) => `data.${r.field}: ${r.error}`).join('; ')}`, refused };
  }

  /**
   * The range rule of a field name (null: unchecked), looked up once per name; a name the schema does
   * not declare is refused when it is a tag's, or beyond EXTRA_FIELDS_MAX (looked up again each time:
   * another receiver may have admitted it meanwhile).
   */
  ruleOf(type: string, field: string): RangeRule | null {
    let names = this.byName.get(type);
    if (names === undefined) this.byName.set(type, (names = new Map()));
    let rule = names.get(field);
    if (rule === undefined) {
      rule = ruleFor(this.opts.rules, type, field) ?? this.nameRule(type, field) ?? NO_RULE;
      if (names.size < NAMES_KEPT && !rule?.recheck) names.set(field, rule);
    }
    return rule;
  }

  /** The refusal of a name outside the schema (a tag's, or one beyond the bound), or undefined. */
  private nameRule(type: string, field: string): RangeRule | undefined {
    const t = typeOf(type);
    if (t.fields.has(field) || t.spec.families?.some((f) => f.pattern.test(field))) return undefined;
    if (TAG_KEYS.includes(field)) return { rule: TAG_NAME, fields: [field], type, min: Infinity, max: -Infinity, unit: '', why: `${field} is a tag of every point; a field may not share its name` };
    const extra = this.opts.extraFields;
    if (extra === undefined || extra.admits(type, field)) return undefined;
    return { rule: EXTRA_FIELDS, fields: [field], type, min: Infinity, max: -Infinity, unit: '', why: `${t.spec.measurement} already has EXTRA_FIELDS_MAX (${extra.max}) field names beyond the schema, and a store bounds its columns`, recheck: true };
  }

  /** Why a record's time cannot be true at `now`, or undefined. */
  timeProblem(time: number, now: number): { rule: string; error: string } | undefined {
    const { maxAheadMs, maxAgeMs } = this.opts;
    if (maxAheadMs > 0 && time - now > maxAheadMs) {
      return {
        rule: TIME_FUTURE,
        error: `data.time: ${iso(time)} is ${span(time - now)} ahead of the receiver's clock, more than TIME_MAX_AHEAD (${span(maxAheadMs)}); the device's clock is wrong`,
      };
    }
    if (maxAgeMs > 0 && now - time > maxAgeMs) {
      const age = now - time;
      const rollover = age % ROLLOVER < 2 * WEEK || ROLLOVER - (age % ROLLOVER) < 2 * WEEK ? ' (a multiple of 1024 weeks: a GPS week-number rollover)' : '';
      return { rule: TIME_PAST, error: `data.time: ${iso(time)} is ${span(age)} old, more than TIME_MAX_AGE (${span(maxAgeMs)})${rollover}; the device's clock is wrong` };
    }
    return undefined;
  }
}

function outside(value: number, rule: RangeRule): string {
  // A name refused whatever its value (min above max: no value is within).
  if (rule.min > rule.max) return `${rule.why} (${rule.rule}); not stored`;
  const unit = rule.unit === '' ? '' : ` ${rule.unit}`;
  const bound = rule.integer && rule.min === 0 && rule.max === 1 ? 'is not 0 or 1' : `is outside ${rule.min} to ${rule.max}${unit}`;
  return `${value} ${bound} (${rule.rule}: ${rule.why}); not stored`;
}

const iso = (ms: number): string => {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
};

/** A span as people say it: "6 min", "3.5 h", "12 d", "19.6 years". */
export function span(ms: number): string {
  const s = ms / 1000;
  const round = (x: number) => (x >= 10 ? String(Math.round(x)) : x.toFixed(1).replace(/\.0$/, ''));
  if (s < 120) return `${round(s)} s`;
  if (s < 7_200) return `${round(s / 60)} min`;
  if (s < 172_800) return `${round(s / 3_600)} h`;
  if (s < 2 * 31_557_600) return `${round(s / 86_400)} d`;
  return `${(s / 31_557_600).toFixed(1).replace(/\.0$/, '')} years`;
}
