import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { chargingCurrent } from '../../../telemetry/current.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { BATTERY_SWAP_SLICE, type BatterySwapState } from './batterySwap.js';
import { emitEvent, flatSlice, type Context, type DeriveOptions, type Slice } from './context.js';
import { detector } from './detector.js';
import { packIdOf } from './pack.js';

/**
 * A cell drifting away from the others (`cell_drifting`): of the pack's real cells, the one furthest from
 * their median (../packValues.ts: none numbered beyond `no_of_cells`, none at 0 V), sampled where sessions
 * are comparable, by the pack's current alone (no other detector's timing):
 * - at the end of a charge: the charge's last record carrying both its cells and its soc, taken once a
 *   record shows the charge over, when the charge lasted CHARGING_MIN_DURATION and that soc is at least
 *   CELL_DRIFT_FULL_SOC (a cell's distance depends on the state of charge: full is one state);
 * - at rest: the first record carrying its cells once the current stayed under CHARGING_MIN_CURRENT for
 *   CELL_DRIFT_REST (the cells relaxed), one a rest spell.
 * The end-of-charge samples judge growth; the rest ones are evidence only: at rest a cell's distance
 * follows the soc the pack rests at (a weak cell sags as the pack empties, and is healthy), so a rest
 * sample grows or shrinks with the day's driving, not with the cell.
 *
 * The rule: a streak is the end-of-charge samples in which one cell is the furthest, on one side of the
 * median, its distance never nearer by more than CELL_DRIFT_NOISE than at the sample before (nearer by
 * more, the growth is measured again from there). Told once it holds CELL_DRIFT_SESSIONS samples, the
 * distance has grown CELL_DRIFT_GROWTH since its first, and it is at least CELL_DRIFT_MIN: a healthy
 * pack's furthest cell sits at a fixed offset give or take its noise, and grows nothing over sessions.
 * A sample naming another cell nearer the median than the streak's last is taken as a record that did not
 * carry the streak's cell (a record carries what the BMS sent): passed over, MISSES − 1 in a row at most.
 * Once told, the episode lasts while the cell stays the furthest and further than where its growth was
 * measured from (MISSES samples in a row otherwise end it: a rebalanced or replaced cell); a new pack
 * (`batterySwap`'s ids: `pack.ts`) starts afresh. Tagged with the pack.
 */
export interface CellDriftState {
  /** What the pack is doing (CHARGING, RESTING, RESTED: its rest sampled; NaN: neither), since when. */
  spell: number;
  since: number;
  /** The pack the samples below are of (`packIdOf`; NaN: none reported). */
  pack: number;
  /** The last rest sample: the furthest cell and its deviation (V; NaN: none). */
  restCell: number;
  restDeviation: number;
  /** The streak: its cell (NaN: none), deviation (V) at its first sample and its latest, samples, 1 once told, samples missed in a row. */
  cell: number;
  from: number;
  last: number;
  sessions: number;
  told: number;
  missed: number;
  /** During a charge: its last record with its cells and soc: its time, the furthest cell's deviation, its number, the soc (NaN: none yet). */
  chargeAt: number;
  chargeDeviation: number;
  chargeCell: number;
  chargeSoc: number;
}

const CHARGING = 1;
const RESTING = 2;
const RESTED = 3;
/** Neither charging nor at rest (driving; a current over the bound with `load_status` idle). */
const OTHER = 0;
/** Samples in a row that do not show the streak's cell furthest (or, once told, beyond where it grew from) that end it. */
const MISSES = 3;

/** What a record says the pack is doing, as charging sessions read it (`load_status` where sent, else the current's sign and CHARGING_MIN_CURRENT); NaN: it says nothing. */
function doing(o: DeriveOptions, r: StreamRecord, plan: StreamPlan): number {
  const load = valueOf(r, plan.loadAt);
  const current = valueOf(r, plan.currentAt);
  if (load !== undefined) {
    if (load === 2) return CHARGING;
    if (load !== 0) return OTHER;
    return current === undefined || Math.abs(current) < o.chargingMinCurrentA ? RESTING : OTHER;
  }
  if (current === undefined) return NaN;
  const amps = chargingCurrent(current, undefined, o.currentSign);
  if (amps !== amps) return NaN;
  return amps >= o.chargingMinCurrentA ? CHARGING : Math.abs(amps) < o.chargingMinCurrentA ? RESTING : OTHER;
}

/** No streak: its fields as a fresh state has them (what a stored state without them reads back as). */
function endStreak(s: CellDriftState): void {
  s.cell = s.from = s.last = s.sessions = s.told = s.missed = NaN;
}

function beginStreak(s: CellDriftState, cell: number, deviation: number): void {
  s.cell = cell;
  s.from = s.last = deviation;
  s.sessions = 1;
  s.told = s.missed = 0;
}

/** The samples are of the pack in the vehicle now: another pack's streak and rest sample are forgotten. */
function samePack(s: CellDriftState, swap: Readonly<BatterySwapState>): void {
  const pack = packIdOf(swap.bmsId, swap.batteryId);
  if (Object.is(pack, s.pack)) return;
  s.pack = pack;
  s.restCell = s.restDeviation = NaN;
  endStreak(s);
}

/** An end-of-charge sample (`cell` furthest, `deviation` V from the median, at `time`, soc `soc`) through the rule. */
function endOfCharge(ctx: Context, s: CellDriftState, swap: Readonly<BatterySwapState>, cell: number, deviation: number, time: number, soc: number): void {
  const o = ctx.opts;
  const away = Math.abs(deviation);
  if (s.cell !== s.cell) return beginStreak(s, cell, deviation);
  if (cell === s.cell && (deviation > 0) === (s.last > 0)) {
    if (s.told === 1) {
      if (away > Math.abs(s.from)) {
        s.last = deviation;
        s.sessions++;
        s.missed = 0;
      } else if (++s.missed >= MISSES) beginStreak(s, cell, deviation);
      return;
    }
    s.missed = 0;
    if (away < Math.abs(s.last) - o.cellDriftNoiseV) return beginStreak(s, cell, deviation);
    s.last = deviation;
    s.sessions++;
    const growth = away - Math.abs(s.from);
    if (s.sessions >= o.cellDriftSessions && growth >= o.cellDriftGrowthV && away >= o.cellDriftMinV) {
      s.told = 1;
      const fields: Record<string, number> = { cell, deviation_v: deviation, from_deviation_v: s.from, growth_v: growth, sessions: s.sessions, soc };
      if (s.restCell === cell) fields.rest_deviation_v = s.restDeviation;
      const pack = packIdOf(swap.bmsId, swap.batteryId);
      emitEvent(ctx, 'cell_drifting', time, 1, fields, pack === pack ? { pack: String(pack) } : undefined);
    }
    return;
  }
  // Another cell (or this one on the other side): nearer than the streak's, the record may have lacked the streak's cell.
  if (away < Math.abs(s.last) && ++s.missed < MISSES) return;
  beginStreak(s, cell, deviation);
}

export function cellDriftRecord(ctx: Context, s: CellDriftState, swap: Readonly<BatterySwapState>, r: StreamRecord, plan: StreamPlan): void {
  const now = doing(ctx.opts, r, plan);
  if (now !== now) return;
  const t = r.time;
  if (s.spell === CHARGING && now !== CHARGING) {
    const at = s.chargeAt;
    if (at === at && at - s.since >= ctx.opts.chargingMinDurationMs && s.chargeSoc >= ctx.opts.cellDriftFullSoc) {
      samePack(s, swap);
      endOfCharge(ctx, s, swap, s.chargeCell, s.chargeDeviation, at, s.chargeSoc);
    }
    s.chargeAt = s.chargeDeviation = s.chargeCell = s.chargeSoc = NaN;
  }
  if (now === CHARGING) {
    if (s.spell !== CHARGING) {
      s.spell = CHARGING;
      s.since = t;
    }
    const deviation = valueOf(r, plan.cellApartAt);
    const soc = valueOf(r, plan.socAt);
    if (deviation === undefined || soc === undefined) return;
    s.chargeAt = t;
    s.chargeDeviation = deviation;
    s.chargeCell = valueOf(r, plan.cellApartNumberAt)!;
    s.chargeSoc = soc;
    return;
  }
  if (now === OTHER) {
    s.spell = s.since = NaN;
    return;
  }
  if (s.spell !== RESTING && s.spell !== RESTED) {
    s.spell = RESTING;
    s.since = t;
  }
  if (s.spell !== RESTING || t - s.since < ctx.opts.cellDriftRestMs) return;
  const deviation = valueOf(r, plan.cellApartAt);
  if (deviation === undefined) return;
  samePack(s, swap);
  s.restCell = valueOf(r, plan.cellApartNumberAt)!;
  s.restDeviation = deviation;
  s.spell = RESTED;
}

/**
 * Stored: these doubles in this order, those at the end that hold nothing (NaN, as fresh) left out
 * (`flatSlice`): a vehicle's state is written on every commit (and into its checkpoints), so a charge's
 * four are written only during one, a streak's six once there is one. (Doubles a later release adds
 * come after all of them.)
 */
export const CELL_DRIFT_SLICE: Slice<CellDriftState> = flatSlice(
  18,
  'cell drift',
  ['spell', 'since', 'pack', 'restCell', 'restDeviation', 'cell', 'from', 'last', 'sessions', 'told', 'missed', 'chargeAt', 'chargeDeviation', 'chargeCell', 'chargeSoc'],
  () => ({ spell: NaN, since: NaN, pack: NaN, restCell: NaN, restDeviation: NaN, cell: NaN, from: NaN, last: NaN, sessions: NaN, told: NaN, missed: NaN, chargeAt: NaN, chargeDeviation: NaN, chargeCell: NaN, chargeSoc: NaN }),
);

/** The cellDrift detector, declared once (detector.ts); ../kinds.ts lists it. */
export const CELL_DRIFT_DETECTOR = detector({
  key: 'cellDrift',
  slice: CELL_DRIFT_SLICE,
  fields: ['cellApartAt', 'cellApartNumberAt', 'currentAt', 'loadAt', 'socAt'],
  reads: { batterySwap: BATTERY_SWAP_SLICE },
  on: { pack: (ctx, s, r, plan) => cellDriftRecord(ctx, s.cellDrift, s.batterySwap, r, plan) },
  input: "CAN `cell_voltage_*` (the real cells: `no_of_cells`, none at 0 V), `current`, `load_status`, `soc`; the pack's ids (`batterySwap`)",
  settings: ['CELL_DRIFT_GROWTH', 'CELL_DRIFT_MIN', 'CELL_DRIFT_SESSIONS', 'CELL_DRIFT_NOISE', 'CELL_DRIFT_FULL_SOC', 'CELL_DRIFT_REST', 'CHARGING_MIN_CURRENT', 'CHARGING_MIN_DURATION', 'CHARGING_CURRENT_SIGN', 'CURRENT_SIGN_FROM'],
  derives: '`cell_drifting` (`cell`, `deviation_v`, `from_deviation_v`, `growth_v`, `sessions`, `soc`, `rest_deviation_v`; tag `pack`)',
  rules:
    'of three or more real cells, the one furthest from their median, sampled by the current alone: at the end of a charge (its last record with cells and soc, a charge of `CHARGING_MIN_DURATION` ending at or over `CELL_DRIFT_FULL_SOC`, 90 %) and at rest (under `CHARGING_MIN_CURRENT` for `CELL_DRIFT_REST`, 30 min; evidence only: at rest a weak cell sags with the soc, healthy); told when one cell is the furthest, on one side, at `CELL_DRIFT_SESSIONS` (5) end-of-charge samples in a row, never nearer by more than `CELL_DRIFT_NOISE` (10 mV) than the one before, grown `CELL_DRIFT_GROWTH` (30 mV) since the first and at least `CELL_DRIFT_MIN` (50 mV) away (a healthy cell sits at a fixed offset: grows nothing); a sample naming another cell nearer the median is passed over, two in a row at most (a record lacking that cell); once an episode, which ends at the third sample in a row without the cell furthest beyond where it grew from; a new pack starts afresh',
  outputs: [
    {
      events: ['cell_drifting'],
      shown: '`cell_drifting`',
      measurement: VEHICLE_EVENTS,
      fields: [
        { name: 'cell', meaning: 'the drifting cell’s number' },
        { name: 'deviation_v', meaning: 'its voltage less the median of the pack’s real cells at the end of this charge' },
        { name: 'from_deviation_v', meaning: 'the same at the first end-of-charge sample of its growth' },
        { name: 'growth_v', meaning: 'how much further from the median it got since: \\|`deviation_v`\\| − \\|`from_deviation_v`\\|' },
        { name: 'sessions', meaning: 'the end-of-charge samples it grew over, the first and this one included' },
        { name: 'soc', meaning: 'the soc of this sample' },
        { name: 'rest_deviation_v', meaning: 'its voltage less the median at the pack’s last rest, where it was the furthest there too (a drifting cell is the low one at rest, the high one at the end of a charge)' },
        { name: 'pack', meaning: 'the pack’s id (tag): `bms_id`, else `bat_id_1`, where the vehicle reported one' },
      ],
      what: 'a pack’s cell further from the others at the end of each full charge: grown `CELL_DRIFT_GROWTH` over at least `CELL_DRIFT_SESSIONS` sessions, and `CELL_DRIFT_MIN` away',
    },
  ],
});
