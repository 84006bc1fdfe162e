import type { GeofenceLookup } from '../../geofences/lookup.js';
import type { LateState } from '../corrections/state.js';
import type { SpeedLimits } from '../../speedLimits/registry.js';
import { SETTING_DEFAULTS, type Settings } from '../../../config/index.js';
import type { CurrentSign } from '../../../telemetry/current.js';
import { TRACK_STREAM } from '../inputs.js';

/**
 * What every detector shares: the outputs a derivation call collects, the options, and the way a
 * detector's slice of the state is kept (`Slice`). Each detector (one module per kind of event, as
 * Traccar has one handler per kind) is handed the committed records of the streams it reads, in order.
 */

/** A GPS fix as the track judges it (track.ts). */
export interface Fix {
  time: number;
  lat: number;
  lng: number;
  /** NaN when the fix reported none. */
  speed: number;
}

/** A fix the track confirmed, and the distance its step adds (0: jitter, a re-anchoring, or the first fix): what the track hands every position hook; read at once, not kept. */
export interface Step {
  fix: Fix;
  distanceM: number;
}

export interface DerivedEvent {
  vehicleno: string;
  /** The event's name (each detector's, in the README's table: `${alarm}_raised`, `ignition_on`, `idle_started`, …). */
  event: string;
  /** The record time of the transition, ms. */
  time: number;
  /** 1 raised / on / started, 0 cleared / off / stopped. */
  value: number;
  /** What the transition carries, by kind (e.g. position and speed at ignition; soc, voltage, current at an alarm; `late: 1` for a raise emitted late). */
  fields: Record<string, number>;
  /** Which geofence a geofence event is of (`geofence`, `geofence_kind`): tags of its point, part of its id. */
  tags?: Record<string, string>;
}

export interface Trip {
  vehicleno: string;
  /** Ignition on, and ignition off (or the last fix before a gap of EVENTS_MAX_GAP), record time ms. */
  start: number;
  end: number;
  durationS: number;
  /** Sum of the steps between the trip's confirmed fixes (outliers, jumps and parked jitter count nothing). */
  distanceM: number;
  maxSpeedKmh: number;
  /** The trip's first and last confirmed fix; absent when it had none. */
  startLat?: number;
  startLng?: number;
  endLat?: number;
  endLng?: number;
  /** The CAN stream's soc at (or else first after) the start, and at the end; absent if none. */
  socStart?: number;
  socEnd?: number;
  /** 1 when the trip was ended by a gap in the GPS stream longer than EVENTS_MAX_GAP, not by ignition off. */
  gapEnded?: number;
  /** Seconds of the trip spent idling (idle.ts) and over the speed limit (overspeed.ts). */
  idleS: number;
  overspeedS: number;
  /** The geofences its first and last confirmed fix lay in (names, `, ` between), when any. */
  startGeofence?: string;
  endGeofence?: string;
}

export interface Stop {
  vehicleno: string;
  /** The first confirmed fix standing still, and the first moving again (or the last record before a gap). */
  start: number;
  end: number;
  durationS: number;
  /** Where it stood: its first confirmed fix standing still. */
  lat: number;
  lng: number;
  /** Seconds of the stop with the ignition on. */
  ignitionOnS: number;
  /** The geofences it stood in, when any. */
  geofence?: string;
}

export interface ChargingSession {
  vehicleno: string;
  /** Its first charging record, and the first non-charging one after it (or the last charging record before a gap). */
  start: number;
  end: number;
  durationS: number;
  socStart?: number;
  socEnd?: number;
  /** ∫ voltage × |current| dt (trapezoids between consecutive charging records carrying both, never across a gap); absent without two. */
  energyWh?: number;
  /** The geofences the vehicle stood in as the session started (where it came to stand, by the GPS track), when any. */
  geofence?: string;
  /** ∫ |current| dt in Ah (the same trapezoids, between charging records carrying a current); absent without two. */
  chargeAh?: number;
  /** The soc's rise over those records (at the last − at the first), when both are known. */
  socMoved?: number;
  /** Ah ÷ (socMoved / 100) when socMoved is at least CAPACITY_MIN_SOC_MOVED, and the bound of its relative error (%). */
  capacityAhEstimate?: number;
  capacityUncertaintyPct?: number;
  /** What the BMS says it holds: `battery_capacity` × `soh` / 100 at the session's end, when both are known. */
  bmsCapacityAh?: number;
  /** The pack charged (`packIdOf`, decimal), when the records told it and it stayed one pack (a tag). */
  pack?: string;
}

/**
 * What a pack did in a vehicle over a span (detectors/packLife.ts): a row per pack, per vehicle, per UTC
 * day, and one ending where the pack left the vehicle (or before a gap crossing midnight).
 */
export interface PackLife {
  vehicleno: string;
  /** The pack's id (detectors/pack.ts `packIdOf`), as its decimal text: a tag. */
  pack: string;
  /** The row's first instant (the stint's first record, the UTC midnight it continues from, or its first record after a gap) and last (its last record, or the next midnight). */
  start: number;
  end: number;
  durationS: number;
  /** The pack's first record in this vehicle, this stint (the rows of one stint share it). */
  stintStart: number;
  /** 1: the pack left the vehicle at `end` (the next record named another). */
  left?: number;
  /** ∫ |current| dt (Ah) and ∫ |voltage × current| dt (kWh) by trapezoids, split by the current's sign: in (charging), out. */
  ahIn: number;
  ahOut: number;
  kwhIn: number;
  kwhOut: number;
  /** The BMS's charge cycles, at its first reading of the row and its last. */
  cycleStart?: number;
  cycleEnd?: number;
  /** The pack's rated capacity (Ah), as last read. */
  capacityAh?: number;
  /** Seconds at each temperature band (by the hottest sensor), and the hottest reading (°C). */
  tempColdS: number;
  tempCoolS: number;
  tempMildS: number;
  tempWarmS: number;
  tempHotS: number;
  temperatureMax?: number;
  /** Seconds at each C-rate band (|current| / capacity), and the highest C-rate read. */
  cRateLowS: number;
  cRateMediumS: number;
  cRateHighS: number;
  cRateExtremeS: number;
  cRateMax?: number;
  /** Seconds at a high soc (PACK_SOC_HIGH and over) and at a low one (PACK_SOC_LOW and under). */
  socHighS: number;
  socLowS: number;
}

/** What one call derived. Its lists are read-only: calls that derive nothing share empty ones. */
export interface Derived {
  events: readonly DerivedEvent[];
  trips: readonly Trip[];
  chargingSessions: readonly ChargingSession[];
  stops: readonly Stop[];
  packLife: readonly PackLife[];
  /** Records older than their stream's watermark, not recently committed: a correction is due from the earliest (`../corrections/`). */
  late: number;
  /** Of those, records older than EVENTS_HORIZON (or than the vehicle's first checkpoint): stored, but changing no output. */
  tooLate: number;
  /** The first of them, for the log. */
  tooLateFirst: { type: string; time: number } | undefined;
  /** Records already pending with the same values, or among the last committed. */
  duplicates: number;
  /** Records committed early because their stream's pending buffer was full (maxPending): their order is no longer guaranteed. */
  forced: number;
  /** The epoch its outputs are emitted in (NaN: before the vehicle's first checkpoint). */
  epoch: number;
  /**
   * A checkpoint the call took at its end (`../corrections/`): the state after it starts this epoch, cut at
   * this time (the last record its streams committed, of any stream). A store keeps the state's bytes.
   */
  checkpoint: { epoch: number; cut: number } | undefined;
  /**
   * The call began the state's corrections afresh (a new vehicle, or a state a release without them
   * wrote): the state before it is epoch 0's checkpoint, cut at `firstCut` of the state's `late`, and a
   * store drops what it kept for the vehicle's corrections before.
   */
  reset: boolean;
  /** The records the call put in its streams' pending buffers (`ingest`'s; none for `flush`): a store writes those alone. */
  added: AddedStreamTimePairs;
}

/**
 * Records as pairs laid flat, `[streamId, time, streamId, time, …]` (numbers, not an object per record):
 * those a call added, or merged another into (the one stored at its time is then replaced), listed again
 * each time one merges into it.
 */
export type AddedStreamTimePairs = readonly number[];

export interface DeriveOptions {
  /** W, the reorder window in record time, per stream: a record is committed once its stream's newest record is W past it. */
  windowMs: number;
  /** A trip is kept when it lasts at least this long OR covers at least tripMinDistanceM (Traccar's minimalTripDuration / Distance). */
  tripMinDurationMs: number;
  tripMinDistanceM: number;
  /** A gap in a stream longer than this ends what the stream held open (trip, stop, idling, overspeed; charging session) at its last record before it (EVENTS_MAX_GAP). */
  maxGapMs: number;
  /** How long (GPS record time past its end) a finished trip waits for the CAN stream to pass its end, for its soc there. */
  maxSkewMs: number;
  /** Two fixes implying more than this speed disagree: one of them is an outlier. */
  maxJumpSpeedKmh: number;
  /** A step shorter than this (m) from a fix reporting no movement counts nothing (Traccar's coordinates.minError). */
  gpsMinErrorM: number;
  /** A fix at or below this speed (km/h), or without one, reports no movement. */
  motionSpeedKmh: number;
  /** How `current` tells its direction (CURRENT_SIGN_FROM, CHARGING_CURRENT_SIGN; the schema: negative while discharging; the emulator charges positive). */
  currentSign: CurrentSign;
  /** Without `load_status`, a record charges when its current has the charging sign and at least this magnitude, and the vehicle stands still. */
  chargingMinCurrentA: number;
  /** A session is kept when at least this long; one emitted by current alone starts only once its charging has lasted this long. */
  chargingMinDurationMs: number;
  /** A session whose soc rose at least this many points yields a capacity estimate (CAPACITY_MIN_SOC_MOVED). */
  capacityMinSocMoved: number;
  /** The BMS's figure outside the estimate's uncertainty at this many estimating sessions in a row: `bms_soh_disagrees`. */
  capacitySohSessions: number;
  /** A stop is emitted when the vehicle stood still at least this long (Traccar's minimalParkingDuration). */
  stopMinDurationMs: number;
  /** Idling is emitted when the ignition was on and the vehicle stood still at least this long. */
  idleMinDurationMs: number;
  /** The fleet's speed limit, km/h (0: none, no overspeed is emitted). */
  speedLimitKmh: number;
  /** Overspeed is emitted when the speed stayed over the limit at least this long (Traccar's minimalDuration). */
  overspeedMinDurationMs: number;
  /** With the ignition off, a vehicle seen this far (m) from where it was parked moved while off. */
  towMinDistanceM: number;
  /** Per-vehicle speed limits over time (a worker's watch of their registry); none when absent. */
  speedLimits?: { readonly current: SpeedLimits };
  /** The fleet's geofences (a worker's watch of the registry); none when absent. */
  geofences?: { readonly current: GeofenceLookup };
  /** The command ledger's immobilisations (a worker's watch of the ledger, COMMANDS=on); none when absent. */
  immobilisations?: { readonly current: ImmobilisationLookup };
  /** A vehicle is taken inside (outside) a geofence once its fixes stayed so this long (ThingsBoard's minInsideDuration). */
  geofenceMinDwellMs: number;
  /** A raised alarm that is no safety alarm is emitted once it held this long (ThingsBoard's alarm rule duration); 0: at once. */
  alarmMinDurationMs: number;
  /** A battery is low at or under socLowPercent, and recovered at or over socRecoveredPercent (hysteresis). */
  socLowPercent: number;
  socRecoveredPercent: number;
  /** Parked (ignition off, standing, not charging), a soc falling this many points within socDrainWindowMs is a drain. */
  socDrainMinPercent: number;
  socDrainWindowMs: number;
  /** Temperature readings that mean no sensor (CAN_TEMP_SENTINELS): never a pack's (packValues.ts). */
  temperatureSentinels: readonly number[];
  /** A pack's hottest sensor rising at least packHeatRate °C/min on average over packHeatWindowMs; a sensor packSensorApartC from the others' median for packHeatWindowMs. */
  packHeatRate: number;
  packHeatWindowMs: number;
  packSensorApartC: number;
  /** A current over packCRateHigh × the pack's capacity for packCRateMinDurationMs. */
  packCRateHigh: number;
  packCRateMinDurationMs: number;
  /**
   * A cell drifting (cellDrift.ts): its distance from the median at the end of charges ending at or over
   * cellDriftFullSoc grown cellDriftGrowthV over at least cellDriftSessions of them, never nearer by more than
   * cellDriftNoiseV from one to the next, at least cellDriftMinV at the last; at rest for cellDriftRestMs, a rest sample.
   */
  cellDriftGrowthV: number;
  cellDriftMinV: number;
  cellDriftSessions: number;
  cellDriftNoiseV: number;
  cellDriftFullSoc: number;
  cellDriftRestMs: number;
  /** Where SPEED_LIMIT and geofences' limits both apply: the lowest (Traccar's preferLowest); else a geofence's overrides the fleet's. */
  speedLimitPreferLowest: boolean;
  /** A stream's pending records are all committed once nothing arrived for this long (wall time); not the vehicle idling (`idleMinDurationMs`). */
  streamQuietMs: number;
  /** How late (record time, behind the vehicle's newest) a record may come and still correct what was emitted (EVENTS_HORIZON). */
  horizonMs: number;
  /** A checkpoint is kept each time the vehicle's records cross into a new interval of this length (EVENTS_CHECKPOINT_INTERVAL). */
  checkpointIntervalMs: number;
  /** Pending records a stream keeps at most; beyond, the oldest are committed early and counted as forced. */
  maxPending: number;
}

/** Pending records a stream keeps at most (no setting: bounds a vehicle's state in Redis). */
const MAX_PENDING = 4096;

/** The options the settings give (config/index.ts declares each setting's default, unit and meaning). */
export function deriveOptions(cfg: Settings): DeriveOptions {
  return {
    windowMs: cfg.EVENTS_WINDOW,
    tripMinDurationMs: cfg.TRIP_MIN_DURATION,
    tripMinDistanceM: cfg.TRIP_MIN_DISTANCE,
    maxGapMs: cfg.EVENTS_MAX_GAP,
    maxSkewMs: cfg.EVENTS_MAX_SKEW,
    maxJumpSpeedKmh: cfg.TRIP_MAX_JUMP_SPEED,
    gpsMinErrorM: cfg.GPS_MIN_ERROR,
    motionSpeedKmh: cfg.MOTION_SPEED,
    currentSign: { from: cfg.CURRENT_SIGN_FROM, charging: cfg.CHARGING_CURRENT_SIGN },
    chargingMinCurrentA: cfg.CHARGING_MIN_CURRENT,
    chargingMinDurationMs: cfg.CHARGING_MIN_DURATION,
    capacityMinSocMoved: cfg.CAPACITY_MIN_SOC_MOVED,
    capacitySohSessions: cfg.CAPACITY_SOH_SESSIONS,
    stopMinDurationMs: cfg.STOP_MIN_DURATION,
    idleMinDurationMs: cfg.IDLE_MIN_DURATION,
    speedLimitKmh: cfg.SPEED_LIMIT,
    overspeedMinDurationMs: cfg.OVERSPEED_MIN_DURATION,
    towMinDistanceM: cfg.TOW_MIN_DISTANCE,
    geofenceMinDwellMs: cfg.GEOFENCE_MIN_DWELL,
    alarmMinDurationMs: cfg.ALARM_MIN_DURATION,
    speedLimitPreferLowest: cfg.SPEED_LIMIT_PREFER_LOWEST === 'on',
    socLowPercent: cfg.SOC_LOW,
    socRecoveredPercent: cfg.SOC_RECOVERED,
    socDrainMinPercent: cfg.SOC_DRAIN_MIN,
    socDrainWindowMs: cfg.SOC_DRAIN_WINDOW,
    temperatureSentinels: cfg.CAN_TEMP_SENTINELS,
    packHeatRate: cfg.PACK_HEAT_RATE,
    packHeatWindowMs: cfg.PACK_HEAT_WINDOW,
    packSensorApartC: cfg.PACK_SENSOR_APART,
    packCRateHigh: cfg.PACK_C_RATE_HIGH,
    packCRateMinDurationMs: cfg.PACK_C_RATE_MIN_DURATION,
    cellDriftGrowthV: cfg.CELL_DRIFT_GROWTH,
    cellDriftMinV: cfg.CELL_DRIFT_MIN,
    cellDriftSessions: cfg.CELL_DRIFT_SESSIONS,
    cellDriftNoiseV: cfg.CELL_DRIFT_NOISE,
    cellDriftFullSoc: cfg.CELL_DRIFT_FULL_SOC,
    cellDriftRestMs: cfg.CELL_DRIFT_REST,
    // A stream quiet for the reorder window has nothing more to wait for.
    streamQuietMs: cfg.EVENTS_WINDOW,
    horizonMs: cfg.EVENTS_HORIZON,
    checkpointIntervalMs: cfg.EVENTS_CHECKPOINT_INTERVAL,
    maxPending: MAX_PENDING,
  };
}

/** The options of the settings' defaults. */
export const DEFAULT_DERIVE_OPTIONS: Readonly<DeriveOptions> = Object.freeze(deriveOptions(SETTING_DEFAULTS));

/** A derivation call in progress: whose records, the options, where outputs go, and what is late. */
export interface Context {
  vehicleno: string;
  opts: DeriveOptions;
  out: Derived;
  /** The vehicle's corrections (premature reads are noted there). */
  late: LateState;
  /** The last record time the vehicle's streams had committed as the call began (NaN: not read yet). */
  cutBefore: number;
  /**
   * The time of the record before the one being taken, in its stream (-Infinity: none): the stream's
   * watermark as it was (derive.ts). For a GPS record (the phases `gap` and `position`) it is the one fact
   * every detector measures a gap from, kept once, in the stream.
   */
  previousTime: number;
}

/** A slice's stored copy of the GPS stream's last record time (what `Context.previousTime` is read from), for the release before: its watermark. */
export const gpsLastTimeCopy = (state: { streams: ReadonlyArray<{ watermark: number } | undefined> }): number => state.streams[TRACK_STREAM]!.watermark;

// Most calls derive nothing: their outputs share these empty lists, and a list is made at its first output.
const NONE: readonly never[] = Object.freeze([]);
// Every field present from the start: one shape for every call's outputs.
export const emptyDerived = (): Derived => ({ events: NONE, trips: NONE, chargingSessions: NONE, stops: NONE, packLife: NONE, late: 0, tooLate: 0, tooLateFirst: undefined, duplicates: 0, forced: 0, epoch: NaN, checkpoint: undefined, reset: false, added: NONE });
/** `list` to add to: the call's own, made at its first output (the shared empty one is never written). */
const own = <T>(list: readonly T[]): T[] => (list === NONE ? [] : (list as T[]));

export function emitEvent(ctx: Context, event: string, time: number, value: number, fields: Record<string, number>, tags?: Record<string, string>): void {
  (ctx.out.events = own(ctx.out.events)).push({ vehicleno: ctx.vehicleno, event, time, value, fields, ...(tags === undefined ? {} : { tags }) });
}

export function emitTrip(ctx: Context, trip: Trip): void {
  (ctx.out.trips = own(ctx.out.trips)).push(trip);
}

export function emitChargingSession(ctx: Context, session: ChargingSession): void {
  (ctx.out.chargingSessions = own(ctx.out.chargingSessions)).push(session);
}

export function emitStop(ctx: Context, stop: Stop): void {
  (ctx.out.stops = own(ctx.out.stops)).push(stop);
}

export function emitPackLife(ctx: Context, row: PackLife): void {
  (ctx.out.packLife = own(ctx.out.packLife)).push(row);
}

/** One immobilisation a vehicle was under: from the immobilise's confirmation to the mobilise's sending (`to` Infinity: still under it). */
export interface Immobilisation {
  /** The immobilise command's id. */
  id: string;
  /** Its immobilise type (ignition, crank, movement, can, discharge, chargendischarge). */
  type: string;
  from: number;
  to: number;
}

/** The immobilisations the ledger holds (a worker's watch of it, src/ingest/commands/immobilisations.ts). */
export interface ImmobilisationLookup {
  /** The immobilisation `vehicleno` was under at `time`, if any. */
  at(vehicleno: string, time: number): Immobilisation | undefined;
}

export { flatSlice, orNaN, type Slice } from './slice.js';
