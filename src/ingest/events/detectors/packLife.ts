import { PACK_LIFE } from '../../../telemetry/derivedMeasurements.js';
import { valueAt, valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { chargingCurrent } from '../../../telemetry/current.js';
import { emitPackLife, flatSlice, type Context, type PackLife, type Slice } from './context.js';
import { detector } from './detector.js';
import { gapBefore } from './gap.js';
import { BATTERY_SWAP_SLICE, type BatterySwapState } from './batterySwap.js';
import { packIdOf } from './pack.js';

/**
 * A pack's life in a vehicle, from the CAN stream: which pack is in it (`packIdOf`: `bms_id`, else
 * `bat_id_1`), and what the pack did there, written as `pack_life` rows tagged with the vehicle and the
 * pack, so a pack's history across the vehicles it visited is one query by its tag.
 *
 * - **A stint** is a pack's time in one vehicle: from its first record to the last before a record names
 *   another pack (that record begins the next stint; the time between the two is the swap's, measured for
 *   neither). A record naming no pack is the current one's; before a vehicle's first pack id nothing is
 *   measured. A record carrying only `bat_id_1`, the same as the last seen, is the same pack; a pack known
 *   by its `bat_id_1` alone takes its `bms_id` when a record brings one with that same `bat_id_1`.
 * - **Rows.** A stint is written as a row per UTC day (so a pack that never leaves a vehicle has a history
 *   too): the day's row is written at the vehicle's first record of the next day (its readings held to
 *   midnight, the next row going on from there), and the stint's last row when the pack leaves (`left` 1).
 *   A gap over EVENTS_MAX_GAP that crosses midnight ends the row at its last record before it. So the open
 *   row of a vehicle that stopped reporting is written once it reports again. Each row is what in-order
 *   records make of it, corrected when records come late (corrections/), its id `vehicleno`, `start`.
 * - **Measured**, between consecutive readings of each quantity, never across a gap over EVENTS_MAX_GAP
 *   (`gapBefore`): Ah and kWh by trapezoids (as charging.ts integrates energy), split at the current's
 *   sign change into in (CHARGING_CURRENT_SIGN, charging) and out; time at each band of temperature (the
 *   hottest sensor a record carries), of C-rate (|current| / `battery_capacity`, as last read) and of soc,
 *   each interval at the band of the reading that began it; `charge_cycle` at the row's first and last
 *   reading.
 */

/** Temperature bands' lower bounds past the first (°C): cold under 0, cool, mild, warm, hot at 45 and over. */
export const TEMPERATURE_BANDS_C = [0, 15, 35, 45] as const;
/** C-rate bands' lower bounds past the first: low under 0.5 C, medium, high, extreme at 2 C and over. */
export const C_RATE_BANDS = [0.5, 1, 2] as const;
/** A soc at or over this is high, at or under PACK_SOC_LOW low (%): where a lithium pack ages fastest at rest. */
export const PACK_SOC_HIGH = 90;
export const PACK_SOC_LOW = 20;

const DAY = 86_400_000;
const HOUR = 3_600_000;

export interface PackLifeState {
  /** The pack in the vehicle (NaN: none known yet); 1 when it is known by its `bat_id_1` alone. */
  pack: number;
  byBattery: number;
  /** The stint's first record, the open row's start, and the pack's last record. */
  stintStart: number;
  rowStart: number;
  lastTime: number;
  /** Each quantity's last reading and its time (NaN: none in the stint). */
  currentTime: number;
  current: number;
  powerTime: number;
  power: number;
  temperatureTime: number;
  temperature: number;
  socTime: number;
  soc: number;
  capacity: number;
  /** The open row's: `charge_cycle` at its first and last reading; charge in and out (A·ms), energy in and out (W·ms), ms at each band (sums of whole ms: exact in any grouping a record's trapezoids allow). */
  cycleStart: number;
  cycleEnd: number;
  ahIn: number;
  ahOut: number;
  whIn: number;
  whOut: number;
  tempCold: number;
  tempCool: number;
  tempMild: number;
  tempWarm: number;
  tempHot: number;
  temperatureMax: number;
  rateLow: number;
  rateMedium: number;
  rateHigh: number;
  rateExtreme: number;
  rateMax: number;
  socHigh: number;
  socLow: number;
}

/** The band `x` falls in, of lower bounds `bounds` (0: under the first). */
function bandOf(x: number, bounds: readonly number[]): number {
  let b = 0;
  while (b < bounds.length && x >= bounds[b]!) b++;
  return b;
}

/** ms at a temperature band added. */
function addTemperature(s: PackLifeState, band: number, ms: number): void {
  if (band === 0) s.tempCold += ms;
  else if (band === 1) s.tempCool += ms;
  else if (band === 2) s.tempMild += ms;
  else if (band === 3) s.tempWarm += ms;
  else s.tempHot += ms;
}

function addRate(s: PackLifeState, band: number, ms: number): void {
  if (band === 0) s.rateLow += ms;
  else if (band === 1) s.rateMedium += ms;
  else if (band === 2) s.rateHigh += ms;
  else s.rateExtreme += ms;
}

/** What `trapezoid` found (reused: an array a call, two calls a CAN record, measured 20 % of derive + write). */
let POSITIVE = 0;
let NEGATIVE = 0;

/** ∫ of a quantity going linearly from `a` to `b` over `ms`, its positive and negative parts apart (trapezoids split where it crosses 0), into POSITIVE and NEGATIVE. */
function trapezoid(a: number, b: number, ms: number): void {
  if (a >= 0 && b >= 0) {
    POSITIVE = ((a + b) / 2) * ms;
    NEGATIVE = 0;
  } else if (a <= 0 && b <= 0) {
    POSITIVE = 0;
    NEGATIVE = (-(a + b) / 2) * ms;
  } else {
    // It crosses 0 at the fraction a / (a − b) of the interval.
    const cross = (a / (a - b)) * ms;
    POSITIVE = a > 0 ? (a / 2) * cross : (b / 2) * (ms - cross);
    NEGATIVE = a > 0 ? (-b / 2) * (ms - cross) : (-a / 2) * cross;
  }
}

/** The current (A) or power (W) from one reading to the next, `ms` apart, integrated into the row's sums (positive: charging, `chargingCurrent`). */
function addCharge(s: PackLifeState, from: number, to: number, ms: number): void {
  trapezoid(from, to, ms);
  s.ahIn += POSITIVE;
  s.ahOut += NEGATIVE;
}

function addEnergy(s: PackLifeState, from: number, to: number, ms: number): void {
  trapezoid(from, to, ms);
  s.whIn += POSITIVE;
  s.whOut += NEGATIVE;
}

/** `ms` from the last current reading at its C-rate's band (by the rated capacity as last read; none without one). */
function addRateTime(s: PackLifeState, ms: number): void {
  if (s.capacity > 0) addRate(s, bandOf(Math.abs(s.current) / s.capacity, C_RATE_BANDS), ms);
}

function addSocTime(s: PackLifeState, ms: number): void {
  if (s.soc >= PACK_SOC_HIGH) s.socHigh += ms;
  else if (s.soc <= PACK_SOC_LOW) s.socLow += ms;
}

/**
 * Midnight `m` passed with no gap since the last record: the open row ends there, each reading held to
 * it (a rectangle: the next reading, after `m`, is not the row's), and is taken as read at `m` by the next.
 */
function holdTo(s: PackLifeState, m: number): void {
  if (s.currentTime === s.currentTime) {
    addCharge(s, s.current, s.current, m - s.currentTime);
    addRateTime(s, m - s.currentTime);
    s.currentTime = m;
  }
  if (s.powerTime === s.powerTime) {
    addEnergy(s, s.power, s.power, m - s.powerTime);
    s.powerTime = m;
  }
  if (s.temperatureTime === s.temperatureTime) {
    addTemperature(s, bandOf(s.temperature, TEMPERATURE_BANDS_C), m - s.temperatureTime);
    s.temperatureTime = m;
  }
  if (s.socTime === s.socTime) {
    addSocTime(s, m - s.socTime);
    s.socTime = m;
  }
}

/** Readings older than EVENTS_MAX_GAP at `t` forgotten: nothing is measured from them (a gap lies between). */
function dropStale(ctx: Context, s: PackLifeState, t: number): void {
  if (gapBefore(ctx, s.currentTime, t)) s.currentTime = NaN;
  if (gapBefore(ctx, s.powerTime, t)) s.powerTime = NaN;
  if (gapBefore(ctx, s.temperatureTime, t)) s.temperatureTime = NaN;
  if (gapBefore(ctx, s.socTime, t)) s.socTime = NaN;
}

/** Readings forgotten (a new stint): none is carried into it. */
function forget(s: PackLifeState): void {
  s.currentTime = s.current = s.powerTime = s.power = s.temperatureTime = s.temperature = s.socTime = s.soc = s.capacity = NaN;
}

/** A new row from `start`, its sums at zero. */
function openRow(s: PackLifeState, start: number): void {
  s.rowStart = start;
  s.cycleStart = s.cycleEnd = s.temperatureMax = s.rateMax = NaN;
  s.ahIn = s.ahOut = s.whIn = s.whOut = 0;
  s.tempCold = s.tempCool = s.tempMild = s.tempWarm = s.tempHot = 0;
  s.rateLow = s.rateMedium = s.rateHigh = s.rateExtreme = 0;
  s.socHigh = s.socLow = 0;
}

function emitRow(ctx: Context, s: PackLifeState, end: number, left: boolean): void {
  const row: PackLife = {
    vehicleno: ctx.vehicleno,
    pack: String(s.pack),
    start: s.rowStart,
    end,
    durationS: (end - s.rowStart) / 1000,
    stintStart: s.stintStart,
    ahIn: s.ahIn / HOUR,
    ahOut: s.ahOut / HOUR,
    kwhIn: s.whIn / HOUR / 1000,
    kwhOut: s.whOut / HOUR / 1000,
    tempColdS: s.tempCold / 1000,
    tempCoolS: s.tempCool / 1000,
    tempMildS: s.tempMild / 1000,
    tempWarmS: s.tempWarm / 1000,
    tempHotS: s.tempHot / 1000,
    cRateLowS: s.rateLow / 1000,
    cRateMediumS: s.rateMedium / 1000,
    cRateHighS: s.rateHigh / 1000,
    cRateExtremeS: s.rateExtreme / 1000,
    socHighS: s.socHigh / 1000,
    socLowS: s.socLow / 1000,
  };
  if (left) row.left = 1;
  if (s.cycleStart === s.cycleStart) row.cycleStart = s.cycleStart;
  if (s.cycleEnd === s.cycleEnd) row.cycleEnd = s.cycleEnd;
  if (s.capacity === s.capacity) row.capacityAh = s.capacity;
  if (s.temperatureMax === s.temperatureMax) row.temperatureMax = s.temperatureMax;
  if (s.rateMax === s.rateMax) row.cRateMax = s.rateMax;
  emitPackLife(ctx, row);
}

/** The hottest real temperature sensor a record carries (NaN: none): the pack value its arrival computed (`../packValues.ts`: no sentinel, none numbered past `no_of_temperature_sensors`). */
const hottest = (r: StreamRecord, plan: StreamPlan): number => valueAt(r, plan.hottestAt);

/** The pack a record names, given the state's (NaN: none known). */
function packOf(s: PackLifeState, seen: Readonly<BatterySwapState>, bms: number | undefined, battery: number | undefined): number {
  if (bms !== undefined && bms !== 0) return bms;
  if (battery === undefined || battery === 0 || battery === seen.batteryId) return s.pack;
  return packIdOf(NaN, battery);
}

/** A CAN record, in order; `seen`: the ids the records before it carried (the battery swaps' slice, as they left it). */
export function packLifeRecord(ctx: Context, s: PackLifeState, seen: Readonly<BatterySwapState>, r: StreamRecord, plan: StreamPlan): void {
  const t = r.time;
  const bms = valueOf(r, plan.bmsIdAt);
  const battery = valueOf(r, plan.batteryIdAt);
  const pack = packOf(s, seen, bms, battery);
  if (pack !== s.pack && pack === pack) {
    // A pack known by its module id alone, now named by its BMS with that module: the same pack.
    if (s.byBattery === 1 && battery !== undefined && battery === seen.batteryId) s.pack = pack;
    else {
      if (s.pack === s.pack) emitRow(ctx, s, s.lastTime, true);
      s.pack = pack;
      s.stintStart = t;
      openRow(s, t);
      forget(s);
    }
    s.byBattery = bms !== undefined && bms !== 0 ? 0 : 1;
  }
  if (s.pack !== s.pack) return;
  // (A NaN time is never a gap's end: `t - NaN > gap` is false; dropStale leaves it NaN.)
  dropStale(ctx, s, t);
  const midnight = Math.floor(s.rowStart / DAY) * DAY + DAY;
  if (t >= midnight) {
    if (gapBefore(ctx, s.lastTime, t)) {
      // A gap crossing midnight ends the row at its last record before it.
      emitRow(ctx, s, s.lastTime, false);
      openRow(s, t);
    } else {
      for (let m = midnight; t >= m; m += DAY) {
        holdTo(s, m);
        emitRow(ctx, s, m, false);
        openRow(s, m);
      }
    }
  }
  // Each quantity the record reads, from its last reading (none too old, above) to this one.
  const capacity = valueOf(r, plan.capacityAt);
  if (capacity !== undefined) s.capacity = capacity;
  // Charging positive, as the one rule of the current's sign has it (CHARGING_CURRENT_SIGN, CURRENT_SIGN_FROM).
  const current = chargingCurrent(valueAt(r, plan.currentAt), valueOf(r, plan.loadAt), ctx.opts.currentSign);
  if (current === current) {
    if (s.currentTime === s.currentTime) {
      addCharge(s, s.current, current, t - s.currentTime);
      addRateTime(s, t - s.currentTime);
    }
    s.current = current;
    s.currentTime = t;
    if (s.capacity > 0) {
      const rate = Math.abs(current) / s.capacity;
      if (!(rate <= s.rateMax)) s.rateMax = rate;
    }
  }
  const power = valueAt(r, plan.voltageAt) * current;
  if (power === power) {
    if (s.powerTime === s.powerTime) addEnergy(s, s.power, power, t - s.powerTime);
    s.power = power;
    s.powerTime = t;
  }
  const temperature = hottest(r, plan);
  if (temperature === temperature) {
    if (s.temperatureTime === s.temperatureTime) addTemperature(s, bandOf(s.temperature, TEMPERATURE_BANDS_C), t - s.temperatureTime);
    s.temperature = temperature;
    s.temperatureTime = t;
    if (!(temperature <= s.temperatureMax)) s.temperatureMax = temperature;
  }
  const soc = valueAt(r, plan.socAt);
  if (soc === soc) {
    if (s.socTime === s.socTime) addSocTime(s, t - s.socTime);
    s.soc = soc;
    s.socTime = t;
  }
  const cycles = valueAt(r, plan.cyclesAt);
  if (cycles === cycles) {
    if (s.cycleStart !== s.cycleStart) s.cycleStart = cycles;
    s.cycleEnd = cycles;
  }
  s.lastTime = t;
}

const KEYS = [
  'pack', 'byBattery', 'stintStart', 'rowStart', 'lastTime',
  'currentTime', 'current', 'powerTime', 'power', 'temperatureTime', 'temperature', 'socTime', 'soc', 'capacity',
  'cycleStart', 'cycleEnd', 'ahIn', 'ahOut', 'whIn', 'whOut',
  'tempCold', 'tempCool', 'tempMild', 'tempWarm', 'tempHot', 'temperatureMax',
  'rateLow', 'rateMedium', 'rateHigh', 'rateExtreme', 'rateMax', 'socHigh', 'socLow',
] as const;

/** A fresh state, always built by this one literal (one shape: the slice's compiled save reads it fast). */
const fresh = (): PackLifeState => ({
  pack: NaN, byBattery: 0, stintStart: NaN, rowStart: NaN, lastTime: -Infinity,
  currentTime: NaN, current: NaN, powerTime: NaN, power: NaN, temperatureTime: NaN, temperature: NaN, socTime: NaN, soc: NaN, capacity: NaN,
  cycleStart: NaN, cycleEnd: NaN, ahIn: 0, ahOut: 0, whIn: 0, whOut: 0,
  tempCold: 0, tempCool: 0, tempMild: 0, tempWarm: 0, tempHot: 0, temperatureMax: NaN,
  rateLow: 0, rateMedium: 0, rateHigh: 0, rateExtreme: 0, rateMax: NaN, socHigh: 0, socLow: 0,
});

export const PACK_LIFE_SLICE: Slice<PackLifeState> = flatSlice(17, 'pack life', KEYS, fresh);

/** The packLife detector, declared once (detector.ts); ../kinds.ts lists it. */
export const PACK_LIFE_DETECTOR = detector({
  key: 'packLife',
  slice: PACK_LIFE_SLICE,
  fields: ['bmsIdAt', 'batteryIdAt', 'currentAt', 'loadAt', 'voltageAt', 'socAt', 'capacityAt', 'cyclesAt', 'hottestAt'],
  // The last ids seen are the battery swaps' (one fact, kept once): read before it takes the record.
  readsBefore: { batterySwap: BATTERY_SWAP_SLICE },
  // Every CAN record (its stream carries the ids, so each reaches the `battery` phase).
  on: { battery: (ctx, s, r, plan) => packLifeRecord(ctx, s.packLife, s.batterySwap, r, plan) },
  input: 'CAN `bms_id`, `bat_id_1`, `current` (its sign by `load_status` with `CURRENT_SIGN_FROM=load_status`), `load_status`, `battery_voltage`, `soc`, `battery_capacity`, `charge_cycle`, the hottest real `cell_temperature_*` (`no_of_temperature_sensors`, `CAN_TEMP_SENTINELS`)',
  settings: ['CHARGING_CURRENT_SIGN', 'CURRENT_SIGN_FROM', 'EVENTS_MAX_GAP'],
  derives: '`pack_life` rows (tags `vehicleno`, `pack`): a pack’s stint in the vehicle, a row per UTC day and one where it left',
  rules:
    'the pack: `bms_id`, else `bat_id_1` (`pack.ts` `packIdOf`), a record without ids the current one\'s; a record naming another ends the stint at the last record before it (`left` 1); a row per UTC day, written at the first record past midnight (readings held to it), or at a gap over `EVENTS_MAX_GAP` crossing it (ended at the last record before); Ah and kWh by trapezoids between readings, split by the current\'s sign (in: `CHARGING_CURRENT_SIGN`), never across a gap; time at temperature bands (the hottest sensor: under 0, 15, 35, 45 °C, and over), C-rate bands (\\|current\\| / `battery_capacity`: under 0.5, 1, 2 C, and over) and soc at or over 90 % / at or under 20 %, each interval at the band of the reading that began it; `charge_cycle` at the row\'s first and last reading',
  outputs: [
    {
      events: [],
      shown: 'a pack’s life in a vehicle',
      kind: 'pack_life',
      measurement: PACK_LIFE,
      fields: [
        { name: 'pack', meaning: 'the pack’s id (`bms_id`, else `bat_id_1`), a tag' },
        { name: 'end', meaning: 'its last record in the vehicle, or the midnight the row went on past' },
        { name: 'durationS', meaning: 'end − start' },
        { name: 'stintStart', meaning: 'the pack’s first record in the vehicle, this stint' },
        { name: 'left', meaning: '1: the pack left the vehicle at `end`' },
        { name: 'ahIn', meaning: '∫ \\|current\\| dt charging (Ah)' },
        { name: 'ahOut', meaning: '∫ \\|current\\| dt discharging (Ah)' },
        { name: 'kwhIn', meaning: '∫ \\|voltage × current\\| dt charging (kWh)' },
        { name: 'kwhOut', meaning: '∫ \\|voltage × current\\| dt discharging (kWh)' },
        { name: 'cycleStart', meaning: '`charge_cycle` at the row’s first reading' },
        { name: 'cycleEnd', meaning: '`charge_cycle` at its last' },
        { name: 'capacityAh', meaning: '`battery_capacity` as last read' },
        { name: 'tempColdS', meaning: 's under 0 °C (the hottest sensor)' },
        { name: 'tempCoolS', meaning: 's at 0–15 °C' },
        { name: 'tempMildS', meaning: 's at 15–35 °C' },
        { name: 'tempWarmS', meaning: 's at 35–45 °C' },
        { name: 'tempHotS', meaning: 's at 45 °C and over' },
        { name: 'temperatureMax', meaning: 'the hottest sensor read' },
        { name: 'cRateLowS', meaning: 's under 0.5 C' },
        { name: 'cRateMediumS', meaning: 's at 0.5–1 C' },
        { name: 'cRateHighS', meaning: 's at 1–2 C' },
        { name: 'cRateExtremeS', meaning: 's at 2 C and over' },
        { name: 'cRateMax', meaning: 'the highest C-rate read' },
        { name: 'socHighS', meaning: 's at a soc of 90 % and over' },
        { name: 'socLowS', meaning: 's at a soc of 20 % and under' },
      ],
      what: 'a pack’s time in the vehicle, a row per UTC day (written at the first record past midnight) and one ending where the pack left it; a pack’s history across vehicles is one query by its `pack` tag',
    },
  ],
});
