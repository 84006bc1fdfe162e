/**
 * A pack's history across the vehicles it visited, and the packs ranked by risk, read from the
 * `pack_life` rows the vehicle events write (src/ingest/events/detectors/packLife.ts) with InfluxQL.
 * For `telematics-fleet pack <id>` and `telematics-fleet packs --worst`.
 */
import { PACK_LIFE } from '../../telemetry/derivedMeasurements.js';
import { quoteIdent, quoteString, timeLiteral, type InfluxRow } from '../read/influxql.js';

export interface PackRange {
  since: number;
  until: number;
  limit: number;
}

const num = (v: InfluxRow[string] | undefined): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const maybe = (v: InfluxRow[string] | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

const where = (r: PackRange, more: string[] = []): string => [...more, `time >= ${timeLiteral(r.since)}`, `time <= ${timeLiteral(r.until)}`, PACK_LIFE.standing!].join(' AND ');

/** One pack's rows in the range, oldest first, every vehicle's. */
export const packQuery = (pack: string, r: PackRange): string =>
  `SELECT * FROM ${quoteIdent(PACK_LIFE.name)} WHERE ${where(r, [`${quoteIdent('pack')} = ${quoteString(pack)}`])} ORDER BY time ASC LIMIT ${r.limit}`;

/** A pack's stint in one vehicle: its rows (a UTC day each) summed. */
export interface Stint {
  vehicleno: string;
  from: number;
  to: number;
  /** Whether the pack left the vehicle at `to` (else it was still in it at the last row written). */
  left: boolean;
  ahIn: number;
  ahOut: number;
  kwhIn: number;
  kwhOut: number;
  cycleStart: number | null;
  cycleEnd: number | null;
  hotS: number;
  warmS: number;
  cRateHighS: number;
  cRateExtremeS: number;
  socHighS: number;
  socLowS: number;
  temperatureMax: number | null;
  cRateMax: number | null;
}

const max = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b));

/** A pack's rows (oldest first) as its stints: the rows of one vehicle sharing a `stint_start`, in time order. */
export function stintsOf(rows: readonly InfluxRow[]): Stint[] {
  const out: Stint[] = [];
  let key = '';
  for (const r of rows) {
    const vehicleno = String(r.vehicleno ?? '');
    const k = `${vehicleno}\n${num(r.stint_start)}`;
    if (k !== key || out.length === 0) {
      key = k;
      out.push({ vehicleno, from: maybe(r.stint_start) ?? Number(r.time), to: Number(r.time), left: false, ahIn: 0, ahOut: 0, kwhIn: 0, kwhOut: 0, cycleStart: maybe(r.cycle_start), cycleEnd: null, hotS: 0, warmS: 0, cRateHighS: 0, cRateExtremeS: 0, socHighS: 0, socLowS: 0, temperatureMax: null, cRateMax: null });
    }
    const s = out[out.length - 1]!;
    s.to = maybe(r.end) ?? s.to;
    s.left = num(r.left) === 1;
    s.ahIn += num(r.ah_in);
    s.ahOut += num(r.ah_out);
    s.kwhIn += num(r.kwh_in);
    s.kwhOut += num(r.kwh_out);
    s.cycleStart ??= maybe(r.cycle_start);
    s.cycleEnd = maybe(r.cycle_end) ?? s.cycleEnd;
    s.hotS += num(r.temp_hot_s);
    s.warmS += num(r.temp_warm_s);
    s.cRateHighS += num(r.c_rate_high_s);
    s.cRateExtremeS += num(r.c_rate_extreme_s);
    s.socHighS += num(r.soc_high_s);
    s.socLowS += num(r.soc_low_s);
    s.temperatureMax = max(s.temperatureMax, maybe(r.temperature_max));
    s.cRateMax = max(s.cRateMax, maybe(r.c_rate_max));
  }
  return out;
}

/** The sums a ranking reads, per pack (`GROUP BY "pack"`). */
const SUMS = ['temp_hot_s', 'temp_warm_s', 'c_rate_high_s', 'c_rate_extreme_s', 'soc_high_s', 'soc_low_s', 'ah_in', 'ah_out', 'kwh_in', 'kwh_out'] as const;
const MAXES = ['temperature_max', 'c_rate_max', 'cycle_end'] as const;

/** Every pack's sums and highs in the range, one row a pack (the `pack` tag on each). */
export const worstQuery = (r: PackRange): string =>
  `SELECT ${[...SUMS.map((f) => `sum(${quoteIdent(f)}) AS ${quoteIdent(f)}`), ...MAXES.map((f) => `max(${quoteIdent(f)}) AS ${quoteIdent(f)}`)].join(', ')} FROM ${quoteIdent(PACK_LIFE.name)} WHERE ${where(r)} GROUP BY ${quoteIdent('pack')}`;

export interface PackRisk {
  pack: string;
  /** RISK_FORMULA, in hours. */
  risk: number;
  hotH: number;
  warmH: number;
  cRateHighH: number;
  cRateExtremeH: number;
  socHighH: number;
  socLowH: number;
  ahOut: number;
  kwhOut: number;
  temperatureMax: number | null;
  cRateMax: number | null;
  cycles: number | null;
}

/** The ranking's formula, as `packs --worst` states it. */
export const RISK_FORMULA = 'risk = hours at 45 °C and over + ½ × hours at 35–45 °C + hours at 1–2 C + 2 × hours at 2 C and over + ¼ × hours at a soc of 90 % and over + ¼ × hours at 20 % and under';

/** A pack's risk from its sums (seconds): hours of stress, weighted as RISK_FORMULA says (heat and high C-rate age a pack fastest; a soc held high or low, more slowly). */
export function riskOf(r: InfluxRow): PackRisk {
  const h = (f: string): number => num(r[f]) / 3600;
  const risk = h('temp_hot_s') + 0.5 * h('temp_warm_s') + h('c_rate_high_s') + 2 * h('c_rate_extreme_s') + 0.25 * h('soc_high_s') + 0.25 * h('soc_low_s');
  return {
    pack: String(r.pack ?? ''),
    risk,
    hotH: h('temp_hot_s'),
    warmH: h('temp_warm_s'),
    cRateHighH: h('c_rate_high_s'),
    cRateExtremeH: h('c_rate_extreme_s'),
    socHighH: h('soc_high_s'),
    socLowH: h('soc_low_s'),
    ahOut: num(r.ah_out),
    kwhOut: num(r.kwh_out),
    temperatureMax: maybe(r.temperature_max),
    cRateMax: maybe(r.c_rate_max),
    cycles: maybe(r.cycle_end),
  };
}

/** The packs by risk, highest first (ties by pack id), at most `limit`. */
export const worstOf = (rows: readonly InfluxRow[], limit: number): PackRisk[] =>
  rows
    .map(riskOf)
    .sort((a, b) => b.risk - a.risk || a.pack.localeCompare(b.pack))
    .slice(0, limit);
