/**
 * A reproducible fleet: N vehicles generated from a seed, each with a trajectory that is a pure
 * function of (seed, vehicle, time). Nothing is simulated from a start date: any instant can be asked
 * for, in any order, and always gives the same answer.
 *
 * Model (see README "Fleet model"):
 * - Time is cut into 30-minute segments, grouped per vehicle into refuelling cycles of 24 to 72 hours.
 * - A cycle starts at the depot with a full tank (the refuel), and ends with the vehicle back at the
 *   depot, parked and charging its battery. In between, each segment is either parked or a drive to a
 *   random waypoint near the depot (likelier in the daytime, India time).
 * - Fuel drains in proportion to the distance driven; a drive is only started if the tank still holds
 *   enough to go there and come back above a reserve, so fuel never runs out.
 * - Segment and cycle boundaries fall on the 5-minute fuel reading grid, and the segments either side
 *   of a refuel are parked, so the fuel history shows every drop and every refuel exactly.
 */
import { CITIES, type Point, distanceKm, lerp, offset, terrainMetres } from './geo.js';
import { Rng, hash32, round, unitAt } from './prng.js';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import type { CommandType } from '../client/schema.js';

export const SEGMENT_MS = 30 * 60_000;
export const READING_INTERVAL_MS = 5 * 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const IST_OFFSET_MS = 5.5 * HOUR_MS;
/** Waypoints lie within this distance of the depot. */
const SERVICE_RADIUS_KM = 12;
/** A drive never takes the tank below this percentage (counting the way back to the depot). */
const RESERVE_PERCENT = 12;
/** Charge cycles are counted from here. */
const CHARGE_COUNT_EPOCH_MS = Date.UTC(2024, 0, 1);

// Salts keep the independent random choices of one segment apart.
const SALT_DRIVE = 1;
const SALT_WAYPOINT_ANGLE = 2;
const SALT_WAYPOINT_RADIUS = 3;
const SALT_SOC = 4;
const SALT_SPEED = 5;
const SALT_CELL = 6;
const SALT_TEMP = 7;
const SALT_CURRENT = 8;
const SALT_ALERT = 9;
const SALT_ALERT_FLAG = 10;
const SALT_IDLE = 11;
const SALT_TOW = 12;
const SALT_SWAP = 13;
const SALT_THEFT = 14;
const SALT_DRIFT = 15;
const SALT_HEAT = 16;
const SALT_SOH = 17;

/**
 * One parked segment in fifty has THEFT_PERCENT of the tank siphoned over its half hour (a fuel_drop),
 * and one in fifty the pack drains DRAIN_POINTS of charge (soc_drain_while_parked); neither next to a
 * refuel, nor in a tow, nor below the reserve.
 */
const THEFT_SHARE = 0.02;
const THEFT_PERCENT = 15;
const DRAIN_SHARE = 0.02;
const DRAIN_POINTS = 8;
/**
 * Percentage points of charge a drive takes per percent of the tank it burns. Fuel never goes below
 * RESERVE_PERCENT and a cycle starts at least 90 % charged, so driving alone leaves a pack above 19 %.
 */
const SOC_PER_FUEL = 0.8;

/**
 * A third of the fleet runs on swapped packs (a leased-battery scheme): such a vehicle gets another pack
 * (another bms_id and bat_id_1) at the start of each cycle's charging segment, at the depot's station.
 */
const SWAP_SHARE = 1 / 3;

/** A quarter of drives begin with the ignition on and the vehicle standing this long (warming up, loading): idling. */
const IDLE_START_MS = 6 * 60_000;
const IDLE_START_SHARE = 0.25;
/**
 * One parked segment in TOW_SHARE is a tow to a yard TOW_KM away and back, with the ignition off: towed
 * out over its first TOW_LEG_MS, left there, towed back over its last (so the segment still ends where
 * it began, and nothing else of the plan moves).
 */
const TOW_SHARE = 0.01;
const TOW_KM = 1;
const TOW_LEG_MS = 6 * 60_000;

/** The spec's alert flags, in its order. */
const ALERT_FLAGS = ALARM_FIELDS;

export type Activity = 'parked' | 'driving' | 'charging';

export interface BatteryProfile {
  cells: number;
  temperatureSensors: number;
  capacityAh: number;
  chemistry: number;
  bmsId: number;
  batteryIds: number[];
  soh: number;
  baseChargeCycles: number;
  /** Fixed per-cell deviation, so cells differ a little but consistently. */
  cellOffsets: number[];
  sensorOffsets: number[];
}

export interface VehicleProfile {
  index: number;
  vehicleno: string;
  city: string;
  depot: Point;
  depotAltitude: number;
  tankLitres: number;
  litresPerKm: number;
  /** Length of a refuelling cycle, in segments. */
  cycleSegments: number;
  /** Phase of the cycles, a multiple of SEGMENT_MS. */
  cycleOffsetMs: number;
  /** Chance that a daytime segment is a drive. */
  driveProbability: number;
  battery: BatteryProfile;
}

interface Segment {
  startMs: number;
  activity: Activity;
  from: Point;
  to: Point;
  distanceKm: number;
  /** Fuel in percent of the tank at the start and end of the segment. */
  fuelStart: number;
  fuelEnd: number;
  /** The battery's state of charge (%) at the start and end of the segment (a charging segment ends at the next cycle's full). */
  socStart: number;
  socEnd: number;
}

/**
 * A vehicle's refuelling cycle. Its segments are packed in one Float64Array (SEGMENT_STRIDE numbers
 * each): as objects, with their boxed doubles, a cycle of 48–144 segments took 10–30 KB, a fleet of
 * 5,000 vehicles about 80 MB, and the feed's heap with it.
 */
interface CyclePlan {
  startMs: number;
  cycle: number;
  /** Per segment: activity, from lat, from lng, to lat, to lng, distance km, fuel start, fuel end, soc start, soc end. */
  packed: Float64Array;
}

const ACTIVITIES: readonly Activity[] = ['parked', 'driving', 'charging'];
const SEGMENT_STRIDE = 10;

function segmentOf(plan: CyclePlan, k: number): Segment | undefined {
  const p = plan.packed;
  const o = k * SEGMENT_STRIDE;
  if (k < 0 || o >= p.length) return undefined;
  return {
    startMs: plan.startMs + k * SEGMENT_MS,
    activity: ACTIVITIES[p[o]!]!,
    from: { lat: p[o + 1]!, lng: p[o + 2]! },
    to: { lat: p[o + 3]!, lng: p[o + 4]! },
    distanceKm: p[o + 5]!,
    fuelStart: p[o + 6]!,
    fuelEnd: p[o + 7]!,
    socStart: p[o + 8]!,
    socEnd: p[o + 9]!,
  };
}

interface Located {
  plan: CyclePlan;
  segment: Segment;
  /** Position within the segment, 0 ≤ frac < 1. */
  frac: number;
}

/** A type alias, not an interface, so that it is assignable to Record<string, unknown>. */
export type GpsData = {
  lat: number;
  lng: number;
  alti: number;
  speed: number;
  ignstatus: 0 | 1;
  time: number;
};

/** Every CAN parameter the vehicle has at an instant; a push record carries a subset (see can.ts). */
export type CanState = Record<string, number>;

export interface FuelPoint {
  time: number;
  value: number;
}

export interface FleetOptions {
  seed: number;
  size: number;
  /**
   * A vehicle whose telematics unit stops reporting at `fromMs` (the failure a fleet analyst looks
   * for first): `reportsAt` is false for it from then on, and the feed sends nothing of it.
   */
  silent?: { index: number; fromMs: number };
}

/**
 * The packs age (README "Ageing packs"): what the service's pack health should find, with the truth
 * asked of the fleet (`trueCapacityAh`, `driftingCell`, `cellDriftV`, `heatsFast`, `sohStuck`).
 * - Capacity fades CAPACITY_FADE_PER_CYCLE of the rated capacity (`battery_capacity`) a charge cycle
 *   (`charge_cycle`), from the profile's soh at CHARGE_COUNT_EPOCH_MS; the charging current is what
 *   moves the soc of that true capacity over the charging segment, so Ah counted against the soc moved
 *   measure it.
 * - The BMS reports `soh` as the true capacity over the rated, but SOH_STUCK_SHARE of packs report 100
 *   all along.
 * - DRIFT_SHARE of packs have a drifting cell (their last): its distance from the others grows by
 *   DRIFT_V_PER_CYCLE a cycle, below them at rest and on the road, above them at the end of a charge
 *   (a weak cell fills first); after DRIFT_CYCLES cycles the pack is rebalanced at a service (0 again),
 *   so any window of a few cycles sees it grow.
 * - HEAT_FAST_SHARE of packs heat fast: under load (driving, charging) their sensors rise HEAT_FAST_C_PER_MIN
 *   a minute on top of the others' warming, until the BMS raises `alert_over_temp` at OVER_TEMP_ALARM_C.
 */
export const CAPACITY_FADE_PER_CYCLE = 0.0002;
export const SOH_STUCK_SHARE = 0.1;
export const DRIFT_SHARE = 1 / 50;
export const DRIFT_V_PER_CYCLE = 0.003;
export const DRIFT_CYCLES = 60;
export const HEAT_FAST_SHARE = 1 / 200;
export const HEAT_FAST_C_PER_MIN = 2.5;
export const OVER_TEMP_ALARM_C = 60;
/** The heat a pack gains under load approaches its level with this time constant (no step from one record to the next). */
const HEAT_TAU_MS = 10 * 60_000;
/** Above the others' heat, a fast-heating pack gains at most this much. */
const HEAT_FAST_MAX_C = 35;

/** One vehicle in WEAK_CELL_EVERY has a weak first cell, which sags as its pack discharges: imbalance develops over each day. */
const WEAK_CELL_EVERY = 7;
/** How far the weak cell sags below the others at 0 % state of charge, in volts. */
const WEAK_CELL_SAG = 0.12;

const TANKS = [
  { litres: 40, perKm: 0.07 },
  { litres: 60, perKm: 0.1 },
  { litres: 80, perKm: 0.14 },
  { litres: 120, perKm: 0.2 },
  { litres: 200, perKm: 0.3 },
] as const;
const CYCLE_SEGMENTS = [48, 72, 96, 144] as const;
const CELL_COUNTS = [4, 8, 13, 14, 15, 16] as const;
const BATTERY_COUNTS = [1, 1, 1, 2, 2, 4, 8, 16] as const;
const LETTERS = 'ABCDEFGHJKLMNPRSTUVWXYZ';

/**
 * The command types that keep a vehicle from driving (the emulated vehicles are electric: `discharge`
 * cuts the motor's power, `can` the motor controller's bus): immobilised so, it stands where it was with
 * the ignition off until mobilised.
 */
const HALTING: ReadonlySet<CommandType> = new Set(['ignition', 'crank', 'movement', 'can', 'discharge', 'chargendischarge']);
/** What each type blocks of the pack: charging, discharging. */
const BLOCKS_CHARGE: ReadonlySet<CommandType> = new Set(['charge', 'chargendischarge']);
const BLOCKS_DISCHARGE: ReadonlySet<CommandType> = new Set(['discharge', 'chargendischarge']);

/** One immobilisation of a vehicle: from its immobilise to its mobilise of the same type (open while none came). */
interface Held {
  type: CommandType;
  from: number;
  to?: number;
}

/** The pack's current while a vehicle stands idle (its electronics): as parked, under CHARGING_MIN_CURRENT's default. */
const IDLE_CURRENT = -0.4;

export class Fleet {
  readonly vehicles: readonly VehicleProfile[];
  private readonly byNumber: Map<string, VehicleProfile>;
  /** The commands the fleet obeys (`obey`), per vehicle index: bounded by the commands given, a handful in a test or demo. */
  private readonly held = new Map<number, Held[]>();
  /** The current cycle of each vehicle: memory bounded by the fleet, and no vehicle evicts another's. */
  private readonly plans = new Map<number, CyclePlan>();

  private constructor(
    readonly seed: number,
    vehicles: VehicleProfile[],
    private readonly silent?: FleetOptions['silent'],
  ) {
    this.vehicles = vehicles;
    this.byNumber = new Map(vehicles.map((v) => [v.vehicleno, v]));
  }

  /** Vehicle i depends only on (seed, i): a fleet of 10 is the first 10 of a fleet of 100. */
  static create(opts: FleetOptions): Fleet {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new RangeError('fleet size must be a positive integer');
    const taken = new Set<string>();
    const vehicles: VehicleProfile[] = [];
    for (let i = 0; i < opts.size; i++) {
      const v = makeVehicle(opts.seed, i, taken);
      taken.add(v.vehicleno);
      vehicles.push(v);
    }
    return new Fleet(opts.seed, vehicles, opts.silent);
  }

  /** False once a vehicle has gone silent (FleetOptions.silent): it sends nothing from then on. */
  reportsAt(v: VehicleProfile, t: number): boolean {
    return !(this.silent && v.index === this.silent.index && t >= this.silent.fromMs);
  }

  /** The pack's charge cycles at `t` (`charge_cycle`). */
  chargeCyclesAt(v: VehicleProfile, t: number): number {
    return v.battery.baseChargeCycles + Math.max(0, this.cycleIndex(v, t) - this.cycleIndex(v, CHARGE_COUNT_EPOCH_MS));
  }

  /** The truth of the pack's capacity at `t`, Ah: what the service's estimate from charging should find. */
  trueCapacityAh(v: VehicleProfile, t: number): number {
    const b = v.battery;
    const faded = Math.max(0, this.cycleIndex(v, t) - this.cycleIndex(v, CHARGE_COUNT_EPOCH_MS)) * CAPACITY_FADE_PER_CYCLE;
    return b.capacityAh * Math.max(0.5, b.soh / 100 - faded);
  }

  /** Whether the pack's BMS reports `soh` 100 whatever its capacity. */
  sohStuck(v: VehicleProfile): boolean {
    return unitAt(this.seed, v.index, SALT_SOH) < SOH_STUCK_SHARE;
  }

  /** The drifting cell's number (as in `cell_voltage_NN`), or undefined for a pack without one. */
  driftingCell(v: VehicleProfile): number | undefined {
    return unitAt(this.seed, v.index, SALT_DRIFT) < DRIFT_SHARE ? v.battery.cells : undefined;
  }

  /** How far (V) the drifting cell is from the others at `t` before the sign of the moment (below at rest, above at the end of a charge); 0 without one. */
  cellDriftV(v: VehicleProfile, t: number): number {
    if (this.driftingCell(v) === undefined) return 0;
    const phase = Math.floor(unitAt(this.seed, v.index, SALT_DRIFT, 1) * DRIFT_CYCLES);
    return DRIFT_V_PER_CYCLE * ((((this.cycleIndex(v, t) + phase) % DRIFT_CYCLES) + DRIFT_CYCLES) % DRIFT_CYCLES);
  }

  /** Whether the pack heats fast under load. */
  heatsFast(v: VehicleProfile): boolean {
    return unitAt(this.seed, v.index, SALT_HEAT) < HEAT_FAST_SHARE;
  }

  /**
   * Since when a fast-heating pack has been heating fast at `t`: the start of the drive or charge it is
   * under (its extra heat starts from nothing at each, `canStateAt`), or undefined while parked or for
   * a pack that does not heat fast.
   */
  heatingFastSince(v: VehicleProfile, t: number): number | undefined {
    if (!this.heatsFast(v)) return undefined;
    const { segment } = this.locate(v, t);
    return segment.activity === 'parked' ? undefined : segment.startMs;
  }

  vehicle(vehicleno: string): VehicleProfile | undefined {
    return this.byNumber.get(vehicleno);
  }

  /** Fuel in percent of the tank, unrounded. */
  fuelPercentAt(v: VehicleProfile, t: number): number {
    const { segment, frac } = this.locate(v, t);
    return segment.fuelStart + (segment.fuelEnd - segment.fuelStart) * frac;
  }

  /**
   * The fuel history: one reading per 5-minute grid point in [fromMs, toMs], in percent (2 decimals)
   * or litres (2 decimals).
   */
  fuelReadings(v: VehicleProfile, fromMs: number, toMs: number, inLitres: boolean): FuelPoint[] {
    const out: FuelPoint[] = [];
    for (let t = Math.ceil(fromMs / READING_INTERVAL_MS) * READING_INTERVAL_MS; t <= toMs; t += READING_INTERVAL_MS) {
      const pct = this.fuelPercentAt(v, t);
      out.push({ time: t, value: inLitres ? round((pct * v.tankLitres) / 100, 2) : round(pct, 2) });
    }
    return out;
  }

  /**
   * Fuel used in litres over [fromMs, toMs]: the sum of the decreases between consecutive readings of
   * the litre history over the same range. Rises (refuels) are not subtracted. Computed in whole
   * centilitres so it equals, to the last digit, what a client sums from the history.
   */
  fuelUsedLitres(v: VehicleProfile, fromMs: number, toMs: number): number {
    const readings = this.fuelReadings(v, fromMs, toMs, true);
    let used = 0;
    for (let i = 1; i < readings.length; i++) {
      const prev = Math.round((readings[i - 1]?.value ?? 0) * 100);
      const cur = Math.round((readings[i]?.value ?? 0) * 100);
      if (cur < prev) used += prev - cur;
    }
    return used / 100;
  }

  activityAt(v: VehicleProfile, t: number): Activity {
    return this.locate(v, t).segment.activity;
  }

  /**
   * Obeys an immobilise or mobilise sent to the emulator at `at` (operations.ts): from then on the
   * vehicle's records show it. Immobilised with a halting type (ignition, crank, movement, can, discharge,
   * chargendischarge) it stands where it was, ignition off, drawing only its idle current; `charge` blocks
   * charging (`allow_charging` 0, no charging current), `discharge` discharging (`allow_discharging` 0).
   * A mobilise of the same type restores its plan from that instant (a vehicle that was held back rejoins
   * its trajectory where the plan has it then). Records before `at` are as they were: the fleet is a pure
   * function of (seed, vehicle, time, the commands obeyed).
   */
  obey(c: { op: 'immobilize' | 'mobilize'; vehicleno: string; type: CommandType; at: number }): void {
    const v = this.byNumber.get(c.vehicleno);
    if (!v) return;
    const list = this.held.get(v.index) ?? [];
    const open = list.find((h) => h.type === c.type && h.to === undefined);
    if (c.op === 'immobilize' && !open) list.push({ type: c.type, from: c.at });
    if (c.op === 'mobilize' && open) open.to = c.at;
    this.held.set(v.index, list);
  }

  /** The immobilisations in force for `v` at `t`. */
  private heldAt(v: VehicleProfile, t: number): Held[] {
    const list = this.held.get(v.index);
    if (!list) return [];
    return list.filter((h) => h.from <= t && (h.to === undefined || t < h.to));
  }

  /** Since when `v` has been kept from driving at `t`, or undefined. */
  private haltedSince(v: VehicleProfile, t: number): number | undefined {
    let since: number | undefined;
    for (const h of this.heldAt(v, t)) if (HALTING.has(h.type) && (since === undefined || h.from < since)) since = h.from;
    return since;
  }

  gpsAt(v: VehicleProfile, t: number): GpsData {
    const since = this.haltedSince(v, t);
    if (since === undefined) return this.plannedGpsAt(v, t);
    // Where it was when it was stopped, standing, the ignition off.
    const at = this.plannedGpsAt(v, since);
    return { ...at, speed: 0, ignstatus: 0, time: t };
  }

  private plannedGpsAt(v: VehicleProfile, t: number): GpsData {
    const { segment, frac } = this.locate(v, t);
    const driving = segment.activity === 'driving';
    let p = lerp(segment.from, segment.to, this.progress(v, segment, t, frac));
    let speed = driving ? this.speedKmh(v, segment, t) : 0;
    const tow = segment.activity === 'parked' ? this.towAt(v, segment, t) : undefined;
    if (tow !== undefined) {
      p = tow.at;
      speed = tow.kmh;
    }
    return {
      lat: round(p.lat, 6),
      lng: round(p.lng, 6),
      alti: round(v.depotAltitude + terrainMetres(p), 1),
      speed: round(speed, 1),
      ignstatus: driving ? 1 : 0,
      time: t,
    };
  }

  /**
   * A pack id in `cycle`: the profile's, or for a vehicle on swapped packs one of the cycle's (a new pack
   * from its charging segment on), so bms_id and bat_id_1 change at each swap.
   */
  private packOf(v: VehicleProfile, cycle: number, s: Segment, id: number): number {
    if (unitAt(this.seed, v.index, SALT_SWAP) >= SWAP_SHARE) return id;
    const swapped = s.activity === 'charging' ? cycle + 1 : cycle;
    if (swapped === 0) return id;
    // As many digits as the profile's: a BMS id of six, a battery id of seven.
    const low = id >= 1_000_000 ? 1_000_000 : 100_000;
    return low + (hash32(this.seed, v.index, swapped, id) % (9 * low));
  }

  /** Whether a drive begins by idling IDLE_START_MS (a quarter of drives do). */
  private idlesFirst(v: VehicleProfile, s: Segment): boolean {
    return s.activity === 'driving' && unitAt(this.seed, v.index, s.startMs, SALT_IDLE) < IDLE_START_SHARE;
  }

  /** How far along its way a segment is at `t`: a drive that idles first sets off once the idling is over. */
  private progress(v: VehicleProfile, s: Segment, t: number, frac: number): number {
    if (!this.idlesFirst(v, s)) return frac;
    return Math.max(0, (t - s.startMs - IDLE_START_MS) / (SEGMENT_MS - IDLE_START_MS));
  }

  /** A parked segment that is a tow (one in TOW_SHARE): where the vehicle is and how fast it moves; undefined for the rest. */
  private towAt(v: VehicleProfile, s: Segment, t: number): { at: Point; kmh: number } | undefined {
    if (unitAt(this.seed, v.index, s.startMs, SALT_TOW) >= TOW_SHARE) return undefined;
    const yard = offset(s.from, TOW_KM, 2 * Math.PI * unitAt(this.seed, v.index, s.startMs, SALT_TOW, 1));
    const into = t - s.startMs;
    const kmh = TOW_KM / (TOW_LEG_MS / HOUR_MS);
    if (into < TOW_LEG_MS) return { at: lerp(s.from, yard, into / TOW_LEG_MS), kmh };
    if (into >= SEGMENT_MS - TOW_LEG_MS) return { at: lerp(yard, s.from, (into - (SEGMENT_MS - TOW_LEG_MS)) / TOW_LEG_MS), kmh };
    return { at: yard, kmh: 0 };
  }

  /** The complete CAN state of the vehicle's battery at `t` (every parameter it has). */
  canStateAt(v: VehicleProfile, t: number): CanState {
    const { plan, segment, frac } = this.locate(v, t);
    const b = v.battery;
    const activity = segment.activity;
    // The battery follows the day's driving (as the fuel does), now and then drains while parked, and is recharged at the depot.
    const soc = segment.socStart + (segment.socEnd - segment.socStart) * frac;
    const socInt = Math.round(soc);
    const load = activity === 'driving' ? -0.03 : activity === 'charging' ? 0.05 : 0;
    const cells: number[] = [];
    const drift = this.cellDriftV(v, t);
    for (let i = 0; i < b.cells; i++) {
      const noise = (unitAt(this.seed, v.index, t, SALT_CELL, i) - 0.5) * 0.008;
      const sag = i === 0 && v.index % WEAK_CELL_EVERY === 0 ? -WEAK_CELL_SAG * (1 - soc / 100) : 0;
      const cv = 3.2 + (0.4 * soc) / 100 + load + (b.cellOffsets[i] ?? 0) + sag + noise;
      const healthy = Math.min(3.65, Math.max(3.0, cv));
      // The drifting cell (the last): below the others, but above them as a charge ends, and beyond the healthy bounds.
      const drifted = drift > 0 && i === b.cells - 1 ? healthy + (activity === 'charging' ? drift * (2 * frac - 1) : -drift) : healthy;
      cells.push(round(Math.min(3.9, Math.max(2.5, drifted)), 3));
    }
    const voltage = round(
      cells.reduce((s, c) => s + c, 0),
      2,
    );
    const u = unitAt(this.seed, v.index, t, SALT_CURRENT);
    let current = -0.4;
    if (activity === 'driving') current = -(8 + this.speedKmh(v, segment, t) * 0.6) * (0.9 + 0.2 * u);
    // Charging moves the soc of the true capacity over the segment (at least a point's worth: a segment may end below where it began).
    const capacity = this.trueCapacityAh(v, t);
    if (activity === 'charging') current = ((Math.max(1, segment.socEnd - segment.socStart) / 100) * capacity * (HOUR_MS / SEGMENT_MS)) * (0.95 + 0.1 * u);
    current = round(current, 2);
    const hour = hourOfDayIst(t);
    const ambient = 27 + 5 * Math.sin((2 * Math.PI * (hour - 9)) / 24);
    // Heat approaches its level under the segment's load from the one before (HEAT_TAU_MS).
    const into = t - segment.startMs;
    const before = segmentOf(plan, Math.round((segment.startMs - plan.startMs) / SEGMENT_MS) - 1)?.activity ?? 'charging';
    const heat = heatOf(activity) + (heatOf(before) - heatOf(activity)) * Math.exp(-into / HEAT_TAU_MS);
    const fast = activity !== 'parked' && this.heatsFast(v) ? Math.min(HEAT_FAST_MAX_C, (HEAT_FAST_C_PER_MIN * into) / 60_000) : 0;

    const state: CanState = {
      time: t,
      allow_charging: 1,
      allow_discharging: socInt > 15 ? 1 : 0,
      battery_voltage: voltage,
      current,
      power: Math.round(voltage * current),
      soc: socInt,
      soh: this.sohStuck(v) ? 100 : Math.round((100 * capacity) / b.capacityAh),
      battery_capacity: b.capacityAh,
      charge_cycle: this.chargeCyclesAt(v, t),
      chemistry: b.chemistry,
      load_status: activity === 'driving' ? 1 : activity === 'charging' ? 2 : 0,
      bms_id: this.packOf(v, plan.cycle, segment, b.bmsId),
      no_of_cells: b.cells,
      no_of_temperature_sensors: b.temperatureSensors,
    };
    b.batteryIds.forEach((id, i) => {
      state[`bat_id_${i + 1}`] = i === 0 ? this.packOf(v, plan.cycle, segment, id) : id;
    });
    cells.forEach((c, i) => {
      state[`cell_voltage_${two(i + 1)}`] = c;
    });
    let hottest = -Infinity;
    for (let i = 0; i < b.temperatureSensors; i++) {
      const noise = (unitAt(this.seed, v.index, t, SALT_TEMP, i) - 0.5) * 1;
      const c = round(ambient + heat + fast + (b.sensorOffsets[i] ?? 0) + noise, 1);
      state[`cell_temperature_${two(i + 1)}`] = c;
      hottest = Math.max(hottest, c);
    }
    // Rarely, one alert flag is raised; the summary `alert` is 1 then. A pack too hot raises its thermal alarm.
    const alerting = unitAt(this.seed, v.index, t, SALT_ALERT) < 0.02;
    const raised = Math.floor(unitAt(this.seed, v.index, t, SALT_ALERT_FLAG) * ALERT_FLAGS.length);
    const tooHot = hottest >= OVER_TEMP_ALARM_C;
    state.alert = alerting || tooHot ? 1 : 0;
    ALERT_FLAGS.forEach((flag, i) => {
      state[flag] = (alerting && i === raised) || (tooHot && flag === 'alert_over_temp') ? 1 : 0;
    });
    return this.obeyed(v, t, state);
  }

  /** The CAN state as the commands in force leave it (see `obey`). */
  private obeyed(v: VehicleProfile, t: number, state: CanState): CanState {
    const held = this.heldAt(v, t);
    if (held.length === 0) return state;
    const halted = held.some((h) => HALTING.has(h.type));
    const noCharge = held.some((h) => BLOCKS_CHARGE.has(h.type));
    const noDischarge = held.some((h) => BLOCKS_DISCHARGE.has(h.type));
    const current = state.current!;
    let next = current;
    if (halted && state.load_status === 1) next = IDLE_CURRENT;
    if (noCharge && next > 0) next = IDLE_CURRENT;
    // No discharge at all: not even the idle draw.
    if (noDischarge && next < 0) next = 0;
    if (noCharge) state.allow_charging = 0;
    if (noDischarge) state.allow_discharging = 0;
    if (next !== current) {
      state.current = next;
      state.power = Math.round(state.battery_voltage! * next);
      state.load_status = next > 0 ? 2 : next < 0 && !halted ? 1 : 0;
    }
    return state;
  }

  // -------------------------------------------------------------------------------------------

  private cycleIndex(v: VehicleProfile, t: number): number {
    return Math.floor((t - v.cycleOffsetMs) / (v.cycleSegments * SEGMENT_MS));
  }

  private locate(v: VehicleProfile, t: number): Located {
    const plan = this.plan(v, this.cycleIndex(v, t));
    const k = Math.floor((t - plan.startMs) / SEGMENT_MS);
    const segment = segmentOf(plan, k);
    if (!segment) throw new Error(`no segment ${k} for ${v.vehicleno} at ${t}`);
    return { plan, segment, frac: (t - segment.startMs) / SEGMENT_MS };
  }

  private speedKmh(v: VehicleProfile, s: Segment, t: number): number {
    // Average speed of the drive, give or take 15 % at each instant; none while it idles first.
    const idles = this.idlesFirst(v, s);
    if (idles && t - s.startMs < IDLE_START_MS) return 0;
    const hours = (idles ? SEGMENT_MS - IDLE_START_MS : SEGMENT_MS) / HOUR_MS;
    return (s.distanceKm / hours) * (0.85 + 0.3 * unitAt(this.seed, v.index, t, SALT_SPEED));
  }

  private plan(v: VehicleProfile, cycle: number): CyclePlan {
    const cached = this.plans.get(v.index);
    if (cached?.cycle === cycle) return cached;
    const plan = buildPlan(this.seed, v, cycle);
    this.plans.set(v.index, plan);
    return plan;
  }
}

function buildPlan(seed: number, v: VehicleProfile, cycle: number): CyclePlan {
  const n = v.cycleSegments;
  const startMs = v.cycleOffsetMs + cycle * n * SEGMENT_MS;
  const percentPerKm = (v.litresPerKm / v.tankLitres) * 100;
  let pos = v.depot;
  let fuel = 100; // refuelled to full at the start of every cycle
  let soc = socFullAt(seed, v, cycle);
  const packed = new Float64Array(n * SEGMENT_STRIDE);
  for (let k = 0; k < n; k++) {
    const segStart = startMs + k * SEGMENT_MS;
    let activity: Activity = 'parked';
    let to = pos;
    if (k === n - 1) {
      activity = 'charging';
    } else if (k === n - 2) {
      if (pos !== v.depot) {
        activity = 'driving';
        to = v.depot;
      }
    } else if (k > 0) {
      const hour = hourOfDayIst(segStart);
      const p = hour >= 6 && hour < 22 ? v.driveProbability : 0.03;
      if (unitAt(seed, v.index, cycle, k, SALT_DRIVE) < p) {
        const candidate = offset(
          v.depot,
          SERVICE_RADIUS_KM * Math.sqrt(unitAt(seed, v.index, cycle, k, SALT_WAYPOINT_RADIUS)),
          2 * Math.PI * unitAt(seed, v.index, cycle, k, SALT_WAYPOINT_ANGLE),
        );
        const need = (distanceKm(pos, candidate) + distanceKm(candidate, v.depot)) * percentPerKm;
        if (fuel - need >= RESERVE_PERCENT) {
          activity = 'driving';
          to = candidate;
        }
      }
    }
    const km = activity === 'driving' ? distanceKm(pos, to) : 0;
    let fuelEnd = fuel - km * percentPerKm;
    let socEnd = soc - SOC_PER_FUEL * km * percentPerKm;
    // Parked, neither next to a refuel nor towed: now and then fuel is siphoned, or the pack drains (a fault).
    if (activity === 'parked' && k > 1 && k < n - 2 && unitAt(seed, v.index, segStart, SALT_TOW) >= TOW_SHARE) {
      const u = unitAt(seed, v.index, cycle, k, SALT_THEFT);
      if (u < THEFT_SHARE && fuel - THEFT_PERCENT >= RESERVE_PERCENT) fuelEnd = fuel - THEFT_PERCENT;
      // A drain only where the pack still holds what the rest of the cycle's driving may take: the fuel
      // left above the reserve, at SOC_PER_FUEL (a drain taken regardless sent soc -2 and worse).
      else if (u >= 1 - DRAIN_SHARE && soc - DRAIN_POINTS >= 20 && soc - DRAIN_POINTS - SOC_PER_FUEL * (fuel - RESERVE_PERCENT) >= 0) socEnd = soc - DRAIN_POINTS;
    }
    if (activity === 'charging') socEnd = socFullAt(seed, v, cycle + 1);
    packed.set([ACTIVITIES.indexOf(activity), pos.lat, pos.lng, to.lat, to.lng, km, fuel, fuelEnd, soc, socEnd], k * SEGMENT_STRIDE);
    pos = to;
    fuel = fuelEnd;
    soc = socEnd;
  }
  return { startMs, cycle, packed };
}

/** The heat (°C over ambient) a pack settles at under an activity's load. */
function heatOf(activity: Activity): number {
  return activity === 'driving' ? 6 : activity === 'charging' ? 9 : 0;
}

/** The state of charge a cycle starts with, charged at the depot: 90 to 100 %. */
function socFullAt(seed: number, v: VehicleProfile, cycle: number): number {
  return 90 + 10 * unitAt(seed, v.index, cycle, SALT_SOC);
}

function makeVehicle(seed: number, index: number, taken: ReadonlySet<string>): VehicleProfile {
  const rng = Rng.seeded(hash32(seed, index));
  const city = rng.pick(CITIES);
  let vehicleno: string;
  do {
    vehicleno = `${city.state}${two(rng.int(1, 99))}${rng.pick([...LETTERS])}${rng.pick([...LETTERS])}${String(rng.int(1, 9999)).padStart(4, '0')}`;
  } while (taken.has(vehicleno));
  const tank = rng.pick(TANKS);
  const cycleSegments = rng.pick(CYCLE_SEGMENTS);
  const cells = rng.pick(CELL_COUNTS);
  const temperatureSensors = rng.int(2, 6);
  const batteries = rng.pick(BATTERY_COUNTS);
  return {
    index,
    vehicleno,
    city: city.name,
    depot: offset(city, rng.range(0, 10), rng.range(0, 2 * Math.PI)),
    depotAltitude: city.alt,
    tankLitres: tank.litres,
    litresPerKm: round(tank.perKm * rng.range(0.85, 1.15), 3),
    cycleSegments,
    cycleOffsetMs: rng.int(0, cycleSegments - 1) * SEGMENT_MS,
    driveProbability: round(rng.range(0.35, 0.65), 2),
    battery: {
      cells,
      temperatureSensors,
      capacityAh: rng.pick([50, 100, 150, 200, 280]),
      chemistry: rng.pick([1, 2, 3]),
      bmsId: rng.int(100000, 999999),
      batteryIds: Array.from({ length: batteries }, () => rng.int(1_000_000, 9_999_999)),
      soh: rng.int(85, 100),
      baseChargeCycles: rng.int(20, 900),
      cellOffsets: Array.from({ length: cells }, () => round(rng.range(-0.015, 0.015), 4)),
      sensorOffsets: Array.from({ length: temperatureSensors }, () => round(rng.range(-1.5, 1.5), 2)),
    },
  };
}

function hourOfDayIst(t: number): number {
  return ((((t + IST_OFFSET_MS) % DAY_MS) + DAY_MS) % DAY_MS) / HOUR_MS;
}

function two(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * The fleet's depots as GeoJSON geofences (300-m circles, kind depot): its vehicles start and end their
 * drives there, so a service given them (GEOFENCES_FILE) tells geofence events (`npm run up -- --feed`, the soak).
 */
export function depotGeofences(fleet: Fleet): { type: 'FeatureCollection'; features: unknown[] } {
  return {
    type: 'FeatureCollection',
    features: fleet.vehicles.map((v) => ({ type: 'Feature', properties: { name: `${v.city} depot ${v.index}`, kind: 'depot', radius_m: 300 }, geometry: { type: 'Point', coordinates: [v.depot.lng, v.depot.lat] } })),
  };
}
