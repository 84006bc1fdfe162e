import { CHARGING_SESSIONS, VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { readings } from './alarms.js';
import { emitEvent, emitChargingSession, flatSlice, type ChargingSession, type Context, type Slice } from './context.js';
import { Changes } from './changes.js';
import { movingAt, standingAt, TRACK_SLICE, type TrackState } from './track.js';
import { geofenceNamesAt } from './geofences.js';
import { detector } from './detector.js';
import { gapBefore } from './gap.js';
import { lasted } from './spell.js';
import { chargingCurrent } from '../../../telemetry/current.js';
import { packIdOf } from './pack.js';

/**
 * Charging sessions, from the CAN stream: `charging_started` / `charging_stopped` and, at the stop, the
 * session (kept when it lasted CHARGING_MIN_DURATION).
 *
 * - A record with `load_status` decides: 2 charging, anything else not.
 * - Without it (the spec omits what a vehicle does not send), the current decides, and only for a
 *   vehicle standing still: charging when it has the charging sign (CHARGING_CURRENT_SIGN; with
 *   CURRENT_SIGN_FROM=load_status a current is a magnitude, and without load_status says nothing) and at least
 *   CHARGING_MIN_CURRENT, the GPS track says the vehicle was not moving at the record's time (`movingAt`:
 *   its records wait until the GPS stream has passed that time, derive.ts "waits"), and it has
 *   lasted CHARGING_MIN_DURATION: regenerative braking's bursts of positive current while driving are
 *   no session. Such a session is emitted once it has lasted that long, stamped at its first record.
 * - A record with neither says nothing (it neither starts nor stops a session).
 * - A gap in the CAN stream longer than EVENTS_MAX_GAP ends the open session at its last charging record
 *   before it; energy is never integrated across it.
 * - Energy: ∫ voltage × |current| dt in Wh, trapezoids between consecutive charging records that both
 *   carry `battery_voltage` and `current`; absent when fewer than two do.
 * - Charge: ∫ |current| dt in Ah, the same trapezoids between consecutive charging records carrying
 *   `current`, and the soc at the first and the last of them. A session whose soc rose at least
 *   CAPACITY_MIN_SOC_MOVED points estimates the pack's capacity, Ah ÷ (soc moved / 100), with a bound of
 *   its error (`capacityOf`). Its row carries the pack (`packIdOf`) when the records told it.
 * - The BMS's health compared (`judgeBms`): per pack, each estimate against what the BMS says the pack holds
 *   (`battery_capacity` × `soh` / 100): `bms_soh_disagrees` when that lies outside the estimate's bound
 *   at CAPACITY_SOH_SESSIONS estimates in a row; `bms_soh_stuck` when the soh has not moved while the
 *   estimate fell beyond both bounds.
 */
export interface ChargingState {
  /** 0 none, 1 charging by current alone but not yet long enough to tell, 2 a session emitted. */
  phase: number;
  start: number;
  /** The first record's readings (emitted with `charging_started`). */
  startSoc: number;
  startVoltage: number;
  startCurrent: number;
  energyWh: number;
  /** 1 once a trapezoid was added (else the energy is unknown, not 0). */
  integrated: number;
  /** The last charging record carrying voltage and current: its time and power. */
  powerTime: number;
  power: number;
  /** The last charging record's time. */
  lastTime: number;
  /** Where the vehicle stood as the session started (`standingAt`; NaN: not known). */
  startLat: number;
  startLng: number;
  /** The soc of the last record it took that carried one (NaN: none): its records wait, so the soc stream's own may be ahead. */
  soc: number;
  /** When a session was under way (1) or not (0), its last changes: the drain reads it at its own records' times (`chargingUnderWayAt`). */
  underWay: Changes;
  // Stored after `underWay` (a release before reads NaN for them).
  /** The session's ∫ |current| dt in Ah (NaN: not known, a session begun by a release that did not count it). */
  chargeAh: number;
  /** The bound of its error: Σ |ΔI| × Δt / 2 over its trapezoids (`capacityOf`). */
  chargeBoundAh: number;
  /** The session's first and last charging records carrying a current: their times, |current| and soc then (NaN: not known). */
  ampsFirstTime: number;
  ampsTime: number;
  amps: number;
  socFrom: number;
  socTo: number;
  /** The pack charging as the session started (NaN: not known), and 1 while every record since told the same (0: it changed). */
  sessionPack: number;
  packSteady: number;
  /** The last pack ids and BMS figures the records told (NaN: none yet; the figures forgotten when the pack changes). */
  bmsId: number;
  batteryId: number;
  soh: number;
  ratedAh: number;
  /** What the BMS comparison remembers, of the pack `healthPack` (`judgeBms`). */
  healthPack: number;
  /** Estimates in a row the BMS's figure lay outside (`bms_soh_disagrees` told as they reach CAPACITY_SOH_SESSIONS). */
  disagreeing: number;
  /** The soh the estimates since `stuckSince` were told with, their count, the highest of their lower bounds, and 1 once `bms_soh_stuck` was told. */
  stuckSoh: number;
  stuckSince: number;
  stuckSessions: number;
  stuckHighAh: number;
  stuckTold: number;
}

const NOT = 0;
const CANDIDATE = 1;
const SESSION = 2;

/** Before a CAN record: a gap since the last charging record longer than EVENTS_MAX_GAP ends the session there. */
export function chargingGap(ctx: Context, s: ChargingState, time: number): void {
  if (s.phase === NOT || !gapBefore(ctx, s.lastTime, time)) return;
  if (s.phase === SESSION) stop(ctx, s, s.lastTime, s.soc === s.soc ? { soc: s.soc } : {});
  s.phase = NOT;
  s.underWay.note(time, 0);
}

/**
 * A CAN record's soc and pack readings, before the record itself (`chargingRecord`): the soc is the open
 * session's, if it had none at its start; a pack id differing from the last forgets the BMS's figures.
 */
export function chargingNote(s: ChargingState, r: StreamRecord, plan: StreamPlan): void {
  const bms = valueOf(r, plan.bmsIdAt);
  const battery = valueOf(r, plan.batteryIdAt);
  if (bms !== undefined || battery !== undefined) {
    const before = packIdOf(s.bmsId, s.batteryId);
    if (bms !== undefined) s.bmsId = bms;
    if (battery !== undefined) s.batteryId = battery;
    const now = packIdOf(s.bmsId, s.batteryId);
    if (now !== before && before === before) s.soh = s.ratedAh = NaN;
  }
  const soh = valueOf(r, plan.sohAt);
  if (soh !== undefined) s.soh = soh;
  const rated = valueOf(r, plan.capacityAt);
  if (rated !== undefined) s.ratedAh = rated;
  const soc = valueOf(r, plan.socAt);
  if (soc === undefined) return;
  s.soc = soc;
  if (s.phase !== NOT && s.startSoc !== s.startSoc) s.startSoc = soc;
}

/** A CAN record, in order (its soc already noted); the track tells whether the vehicle moved at its time. */
export function chargingRecord(ctx: Context, s: ChargingState, r: StreamRecord, plan: StreamPlan, track: TrackState): void {
  const o = ctx.opts;
  const load = valueOf(r, plan.loadAt);
  const current = valueOf(r, plan.currentAt);
  let charging: boolean;
  if (load !== undefined) charging = load === 2;
  else if (current !== undefined) {
    const signed = chargingCurrent(current, undefined, o.currentSign);
    // A magnitude without its load_status (CURRENT_SIGN_FROM=load_status) says nothing, as a record of neither.
    if (signed !== signed) return;
    charging = signed > 0 && signed >= o.chargingMinCurrentA && !movingAt(track, r.time);
  } else return;
  if (!charging) {
    if (s.phase === SESSION) {
      const f = readings(r, plan, s.soc);
      stop(ctx, s, r.time, f);
    }
    s.phase = NOT;
    s.underWay.note(r.time, 0);
    return;
  }
  const v = valueOf(r, plan.voltageAt);
  const power = v !== undefined && current !== undefined ? v * Math.abs(current) : undefined;
  if (s.phase === NOT) {
    s.phase = CANDIDATE;
    s.underWay.note(r.time, 1);
    s.start = r.time;
    s.startSoc = s.soc;
    s.startVoltage = v ?? NaN;
    s.startCurrent = current ?? NaN;
    s.energyWh = 0;
    s.integrated = 0;
    s.powerTime = power === undefined ? NaN : r.time;
    s.power = power ?? NaN;
    const stood = standingAt(track, r.time);
    s.startLat = stood?.lat ?? NaN;
    s.startLng = stood?.lng ?? NaN;
    s.chargeAh = 0;
    s.chargeBoundAh = 0;
    s.ampsFirstTime = s.ampsTime = s.amps = s.socFrom = s.socTo = NaN;
    s.sessionPack = packIdOf(s.bmsId, s.batteryId);
    s.packSteady = 1;
  } else if (power !== undefined) {
    if (s.power === s.power) {
      s.energyWh += ((s.power + power) / 2) * ((r.time - s.powerTime) / 3_600_000);
      s.integrated = 1;
    }
    s.power = power;
    s.powerTime = r.time;
  }
  if (current !== undefined) chargeStep(s, r.time, Math.abs(current));
  const pack = packIdOf(s.bmsId, s.batteryId);
  if (pack === pack && pack !== s.sessionPack) {
    if (s.sessionPack === s.sessionPack) s.packSteady = 0;
    else s.sessionPack = pack;
  }
  s.lastTime = r.time;
  if (s.phase === CANDIDATE && (load !== undefined || lasted(s.start, r.time, o.chargingMinDurationMs))) {
    s.phase = SESSION;
    const f: Record<string, number> = {};
    if (s.startSoc === s.startSoc) f.soc = s.startSoc;
    if (s.startVoltage === s.startVoltage) f.battery_voltage = s.startVoltage;
    if (s.startCurrent === s.startCurrent) f.current = s.startCurrent;
    emitEvent(ctx, 'charging_started', s.start, 1, f);
  }
}

/** A charging record's |current| `amps` at `time`: the trapezoid from the last, its bound, and the soc then. */
function chargeStep(s: ChargingState, time: number, amps: number): void {
  if (s.amps === s.amps) {
    const hours = (time - s.ampsTime) / 3_600_000;
    s.chargeAh += ((s.amps + amps) / 2) * hours;
    s.chargeBoundAh += (Math.abs(amps - s.amps) / 2) * hours;
  } else {
    s.ampsFirstTime = time;
    s.socFrom = s.soc;
  }
  s.amps = amps;
  s.ampsTime = time;
  s.socTo = s.soc;
}

/**
 * A capacity estimate and the bound of its relative error, from `ah` charged (with `boundAh`, the
 * trapezoids' bound) while the soc rose `moved` points; undefined for a rise under `minMoved`.
 *
 * The error's model: the soc is reported as a whole percent, so each end is within 1 point of the true
 * soc and the rise within 2; the current is taken as monotonic between two records, so each trapezoid
 * is within |ΔI| × Δt / 2 of the true charge (the rectangles of its two ends bound it): summed, at most
 * the largest step's change × the session's length / 2, and far less for a current that changes slowly.
 * The largest capacity these allow is (ah + boundAh) ÷ ((moved − 2) / 100), the smallest
 * (ah − boundAh) ÷ ((moved + 2) / 100); the bound is the larger of the two distances from the estimate,
 * which is the first: estimate ± that, relative. (A soc reported stale, or a BMS whose soc drifts from
 * its charge, is outside the model.)
 */
export function capacityOf(ah: number, boundAh: number, moved: number, minMoved: number): { ah: number; uncertaintyPct: number } | undefined {
  if (!(moved >= minMoved) || !(moved > SOC_ERROR * 2) || !(ah > 0)) return undefined;
  const estimate = ah / (moved / 100);
  const highest = (ah + boundAh) / ((moved - SOC_ERROR * 2) / 100);
  return { ah: estimate, uncertaintyPct: (highest / estimate - 1) * 100 };
}

/** How far a reported soc may be from the true one (points): it is reported as a whole percent. */
const SOC_ERROR = 1;

/**
 * The BMS's health against an estimate of pack `pack` (its session started at `start`, ended `at`): what
 * the BMS says the pack holds (`bmsAh`, rated × soh) outside the estimate ± its bound at
 * CAPACITY_SOH_SESSIONS estimates in a row is `bms_soh_disagrees` (once a run); the soh unchanged while an
 * estimate's upper bound fell below the highest lower bound of those told with the same soh is
 * `bms_soh_stuck` (once until the soh moves). One pack remembered: another starts afresh.
 */
function judgeBms(ctx: Context, s: ChargingState, pack: number, start: number, at: number, estimate: { ah: number; uncertaintyPct: number }, bmsAh: number): void {
  if (pack !== s.healthPack) {
    s.healthPack = pack;
    s.disagreeing = 0;
    s.stuckSoh = s.stuckSince = s.stuckHighAh = NaN;
    s.stuckSessions = s.stuckTold = 0;
  }
  const margin = (estimate.ah * estimate.uncertaintyPct) / 100;
  const low = estimate.ah - margin;
  const high = estimate.ah + margin;
  const evidence = { soh: s.soh, bms_capacity_ah: bmsAh, capacity_ah_estimate: estimate.ah, capacity_uncertainty_pct: estimate.uncertaintyPct };
  const tags = { pack: String(pack) };
  if (bmsAh < low || bmsAh > high) {
    if (++s.disagreeing === ctx.opts.capacitySohSessions) emitEvent(ctx, 'bms_soh_disagrees', at, 1, { ...evidence, sessions: s.disagreeing }, tags);
  } else s.disagreeing = 0;
  if (s.soh !== s.stuckSoh) {
    s.stuckSoh = s.soh;
    s.stuckSince = start;
    s.stuckSessions = 1;
    s.stuckHighAh = low;
    s.stuckTold = 0;
    return;
  }
  s.stuckSessions++;
  if (high < s.stuckHighAh && s.stuckTold === 0) {
    s.stuckTold = 1;
    emitEvent(ctx, 'bms_soh_stuck', at, 1, { ...evidence, capacity_ah_before: s.stuckHighAh, since: s.stuckSince, sessions: s.stuckSessions }, tags);
  }
  if (low > s.stuckHighAh) s.stuckHighAh = low;
}

/** Whether a session was under way or may have been starting (charging by current alone, not yet long enough) at `time`. */
export const chargingUnderWayAt = (s: ChargingState, time: number): boolean => s.underWay.at(time, 0) === 1;

/** Whether what was under way is known at `time` (the changes kept reach back to it). */
export const chargingKnownAt = (s: ChargingState, time: number): boolean => s.underWay.covers(time);

/** Changes of `underWay` kept: the drain runs at most a few records behind charging (derive.ts, "Waits"). */
const UNDER_WAY_CHANGES = 4;

function stop(ctx: Context, s: ChargingState, at: number, fields: Record<string, number>): void {
  const durationS = (at - s.start) / 1000;
  fields.durationS = durationS;
  if (s.integrated === 1) fields.energyWh = s.energyWh;
  emitEvent(ctx, 'charging_stopped', at, 0, fields);
  if (!lasted(s.start, at, ctx.opts.chargingMinDurationMs)) return;
  const session: ChargingSession = { vehicleno: ctx.vehicleno, start: s.start, end: at, durationS };
  if (s.startSoc === s.startSoc) session.socStart = s.startSoc;
  if (fields.soc !== undefined) session.socEnd = fields.soc;
  if (s.integrated === 1) session.energyWh = s.energyWh;
  const geofence = geofenceNamesAt(ctx, s.startLat, s.startLng, s.start);
  if (geofence !== undefined) session.geofence = geofence;
  const pack = s.packSteady === 1 ? s.sessionPack : NaN;
  if (pack === pack) session.pack = String(pack);
  const bmsAh = (s.ratedAh * s.soh) / 100;
  if (bmsAh === bmsAh) session.bmsCapacityAh = bmsAh;
  // (A session begun by a release that did not count the charge has chargeAh NaN: nothing below.)
  if (s.ampsTime > s.ampsFirstTime && s.chargeAh === s.chargeAh) {
    session.chargeAh = s.chargeAh;
    const moved = s.socTo - s.socFrom;
    if (moved === moved) session.socMoved = moved;
    const estimate = capacityOf(s.chargeAh, s.chargeBoundAh, moved, ctx.opts.capacityMinSocMoved);
    // Records of two packs in one session (ids that changed under way): the charge is of neither.
    if (estimate !== undefined && s.packSteady === 1) {
      session.capacityAhEstimate = estimate.ah;
      session.capacityUncertaintyPct = estimate.uncertaintyPct;
      if (pack === pack && bmsAh === bmsAh) judgeBms(ctx, s, pack, s.start, at, estimate, bmsAh);
    }
  }
  emitChargingSession(ctx, session);
}

const KEYS = ['phase', 'start', 'startSoc', 'startVoltage', 'startCurrent', 'energyWh', 'integrated', 'powerTime', 'power', 'lastTime', 'startLat', 'startLng', 'soc'] as const;

/** A fresh state, always built by this one literal: one shape for every state (the slice's compiled save reads it fast). */
const fresh = (): ChargingState => ({
  phase: NOT,
  start: NaN,
  startSoc: NaN,
  startVoltage: NaN,
  startCurrent: NaN,
  energyWh: 0,
  integrated: 0,
  powerTime: NaN,
  power: NaN,
  lastTime: -Infinity,
  startLat: NaN,
  startLng: NaN,
  soc: NaN,
  underWay: new Changes(UNDER_WAY_CHANGES),
  chargeAh: NaN,
  chargeBoundAh: NaN,
  ampsFirstTime: NaN,
  ampsTime: NaN,
  amps: NaN,
  socFrom: NaN,
  socTo: NaN,
  sessionPack: NaN,
  packSteady: 0,
  bmsId: NaN,
  batteryId: NaN,
  soh: NaN,
  ratedAh: NaN,
  healthPack: NaN,
  disagreeing: 0,
  stuckSoh: NaN,
  stuckSince: NaN,
  stuckSessions: 0,
  stuckHighAh: NaN,
  stuckTold: 0,
});

/** The numbers stored after `underWay` (their order is the layout, append only). */
const AFTER_KEYS = [
  'chargeAh', 'chargeBoundAh', 'ampsFirstTime', 'ampsTime', 'amps', 'socFrom', 'socTo', 'sessionPack', 'packSteady',
  'bmsId', 'batteryId', 'soh', 'ratedAh',
  'healthPack', 'disagreeing', 'stuckSoh', 'stuckSince', 'stuckSessions', 'stuckHighAh', 'stuckTold',
] as const;

type Numbers = Omit<ChargingState, 'underWay'>;
/** Its numbers, as flat slices store them (KEYS' order, then AFTER_KEYS'). */
const NUMBERS = flatSlice<Numbers>(5, 'charging', KEYS, fresh, undefined, true);
const AFTER = flatSlice<Numbers>(5, 'charging', AFTER_KEYS, fresh, undefined, true);

/**
 * Its numbers in KEYS' order, the changes of `underWay`, then the numbers of AFTER_KEYS. A state stored
 * before those reads NaN for them, each then as `fresh` has it: a session under way has `chargeAh` NaN
 * (its charge was not counted from its start, so it estimates nothing), and the BMS comparison starts afresh.
 */
export const CHARGING_SLICE: Slice<ChargingState> = {
  id: 5,
  name: 'charging',
  fresh,
  save: (s, out, at) => AFTER.save(s, out, s.underWay.save(out, NUMBERS.save(s, out, at))),
  load(x, stored) {
    // (flatSlice's load fills a `fresh()`: the state it returns is one.)
    const s = NUMBERS.load(x, stored) as ChargingState;
    let end = KEYS.length + 1;
    // Stored before the changes were kept: what is under way now, since its start.
    if (x(KEYS.length) !== x(KEYS.length)) {
      if (s.phase !== NOT) s.underWay.note(s.start, 1);
    } else end = s.underWay.ring.load(x, KEYS.length);
    for (let i = 0; i < AFTER_KEYS.length; i++) {
      const v = x(end + i);
      if (v === v) s[AFTER_KEYS[i]!] = v;
    }
    return s;
  },
};

/** The charging detector, declared once (detector.ts); ../kinds.ts lists it. */
export const CHARGING_DETECTOR = detector({
  key: 'charging',
  slice: CHARGING_SLICE,
  fields: ['loadAt', 'currentAt', 'voltageAt', 'socAt', 'bmsIdAt', 'batteryIdAt', 'sohAt', 'capacityAt'],
  // Taken by derive.ts's waits once the track has passed a record's time, not by a phase (no `on`).
  reads: { track: TRACK_SLICE },
  input: "CAN `load_status`, `current`, `battery_voltage`, `soc`, the pack's `bms_id`, `bat_id_1`, `soh`, `battery_capacity`; the track's motion",
  settings: ["CHARGING_CURRENT_SIGN", "CURRENT_SIGN_FROM", "CHARGING_MIN_CURRENT", "CHARGING_MIN_DURATION", "EVENTS_MAX_GAP", "CAPACITY_MIN_SOC_MOVED", "CAPACITY_SOH_SESSIONS"],
  derives: "`charging_started` / `_stopped`, `charging` sessions (with the charge in Ah and, deep enough, the pack's capacity estimated), `bms_soh_disagrees` / `bms_soh_stuck`; when a session was under way (its last 4 changes, for the drain)",
  rules: "`load_status` decides where sent (2 charging); without it, `current` of `CHARGING_CURRENT_SIGN` (`CURRENT_SIGN_FROM=load_status`: nothing) and at least `CHARGING_MIN_CURRENT`, the vehicle standing (the track's motion at the record's time, read once the track has passed it: such a record waits for it, \"Waits\" below), lasting `CHARGING_MIN_DURATION` before it is emitted, stamped at its first record (regenerative braking is no session, however far GPS lags); a gap over `EVENTS_MAX_GAP` ends the session at its last record, never integrated across; energy ∫ V × \\|I\\| dt and charge ∫ \\|I\\| dt by trapezoids; a session whose soc rose `CAPACITY_MIN_SOC_MOVED` (40) points estimates the capacity, Ah ÷ (soc moved / 100), ± a bound (the soc a whole percent: ±1 point each end; the current monotonic between records: each trapezoid within \\|ΔI\\| × Δt / 2); per pack (`bms_id`, else `bat_id_1`), the BMS's rated × soh outside that bound at `CAPACITY_SOH_SESSIONS` (3) estimates in a row is `bms_soh_disagrees`, the soh unchanged while the estimate fell beyond both bounds `bms_soh_stuck`",
  outputs: [
    { events: ['charging_started', 'charging_stopped'], shown: "`charging_started` / `charging_stopped`", measurement: VEHICLE_EVENTS, fields: [{ name: 'soc', meaning: "the state of charge: at the first charging record, at the stop" }, { name: 'battery_voltage', meaning: "the record’s pack voltage (the first charging record’s; the stopping record’s)" }, { name: 'current', meaning: "the record’s pack current (the same records)" }, { name: 'durationS', meaning: "how long it charged", on: ['charging_stopped'] }, { name: 'energyWh', meaning: "the energy charged, when two records carried voltage and current", on: ['charging_stopped'] }], what: "a CAN record with `load_status` 2 (charging); without `load_status`, `current` of the charging sign (`CHARGING_CURRENT_SIGN`, default positive, as the emulator charges; at least `CHARGING_MIN_CURRENT`) while the vehicle stands still, told once it has lasted `CHARGING_MIN_DURATION` and stamped at its first record (regenerative braking is no session); then the first record that is not" },
    { events: [], shown: "a charging session", kind: 'charging', measurement: CHARGING_SESSIONS, fields: [{ name: 'end', meaning: "the first record not charging, or the last charging record before a gap" }, { name: 'durationS', meaning: "end − start" }, { name: 'socStart', meaning: "the soc as it started" }, { name: 'socEnd', meaning: "the soc as it stopped" }, { name: 'energyWh', meaning: "∫ voltage × |current| dt between charging records carrying both" }, { name: 'geofence', meaning: "the geofences the vehicle stood in as it started" }, { name: 'chargeAh', meaning: "∫ |current| dt between charging records carrying a current" }, { name: 'socMoved', meaning: "the soc's rise from the first to the last of those records" }, { name: 'capacityAhEstimate', meaning: "`chargeAh` ÷ (`socMoved` / 100), when `socMoved` is at least `CAPACITY_MIN_SOC_MOVED` and the records told one pack" }, { name: 'capacityUncertaintyPct', meaning: "the bound of the estimate's relative error: the true capacity lies within the estimate ± this %" }, { name: 'bmsCapacityAh', meaning: "what the BMS says the pack holds: `battery_capacity` × `soh` / 100 as the session ended" }, { name: 'pack', meaning: "the pack charged (`bms_id`, else `bat_id_1`), when the records told it and it stayed one pack" }], what: "start to stop (or the last charging record before a gap of `EVENTS_MAX_GAP`); energy is ∫ voltage × \\|current\\| dt between charging records carrying both, never across a gap, the charge ∫ \\|current\\| dt the same way; a session whose soc rose `CAPACITY_MIN_SOC_MOVED` points estimates the pack's capacity with its uncertainty (the soc a whole percent, ±1 point at each end; the current monotonic between records); shorter than `CHARGING_MIN_DURATION` is not a session" },
    { events: ['bms_soh_disagrees'], shown: "`bms_soh_disagrees`", measurement: VEHICLE_EVENTS, fields: [{ name: 'pack', meaning: "the pack" }, { name: 'soh', meaning: "the BMS's soh as the session ended" }, { name: 'bms_capacity_ah', meaning: "`battery_capacity` × `soh` / 100" }, { name: 'capacity_ah_estimate', meaning: "the session's estimate" }, { name: 'capacity_uncertainty_pct', meaning: "its bound (%)" }, { name: 'sessions', meaning: "estimates in a row the BMS's figure lay outside" }], what: "a pack whose BMS figure (`battery_capacity` × `soh` / 100) lay outside the capacity estimate ± its bound at `CAPACITY_SOH_SESSIONS` estimating sessions in a row, at the last one's end; once until an estimate agrees or another pack is charged" },
    { events: ['bms_soh_stuck'], shown: "`bms_soh_stuck`", measurement: VEHICLE_EVENTS, fields: [{ name: 'pack', meaning: "the pack" }, { name: 'soh', meaning: "the BMS's soh, unchanged since `since`" }, { name: 'bms_capacity_ah', meaning: "`battery_capacity` × `soh` / 100" }, { name: 'capacity_ah_estimate', meaning: "the session's estimate" }, { name: 'capacity_uncertainty_pct', meaning: "its bound (%)" }, { name: 'capacity_ah_before', meaning: "the highest lower bound of the estimates since `since`, which this one's upper bound fell below" }, { name: 'since', meaning: "the start of the first session estimated with this soh" }, { name: 'sessions', meaning: "estimates with this soh" }], what: "a pack whose BMS `soh` stayed the same while the capacity estimate fell beyond both bounds (this session's upper bound below an earlier one's lower bound), at the session's end; once until the soh moves or another pack is charged" },
  ],
});
