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

/** A CAN record's soc, before the record itself (`chargingRecord`): the open session's, if it had none at its start. */
export function chargingSoc(s: ChargingState, r: StreamRecord, plan: StreamPlan): void {
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
  } else if (power !== undefined) {
    if (s.power === s.power) {
      s.energyWh += ((s.power + power) / 2) * ((r.time - s.powerTime) / 3_600_000);
      s.integrated = 1;
    }
    s.power = power;
    s.powerTime = r.time;
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
});

/** Its numbers, as a flat slice stores them (KEYS' order, append only). */
const NUMBERS = flatSlice<Omit<ChargingState, 'underWay'>>(5, 'charging', KEYS, fresh);

/** Its numbers in KEYS' order, then the changes of `underWay`. */
export const CHARGING_SLICE: Slice<ChargingState> = {
  id: 5,
  name: 'charging',
  fresh,
  save: (s, out, at) => s.underWay.save(out, NUMBERS.save(s, out, at)),
  load(x, stored) {
    // (flatSlice's load fills a `fresh()`: the state it returns is one.)
    const s = NUMBERS.load(x, stored) as ChargingState;
    // Stored before the changes were kept: what is under way now, since its start.
    if (x(KEYS.length) !== x(KEYS.length)) {
      if (s.phase !== NOT) s.underWay.note(s.start, 1);
    } else s.underWay.load(x, KEYS.length);
    return s;
  },
};

/** The charging detector, declared once (detector.ts); ../kinds.ts lists it. */
export const CHARGING_DETECTOR = detector({
  key: 'charging',
  slice: CHARGING_SLICE,
  fields: ['loadAt', 'currentAt', 'voltageAt', 'socAt'],
  // Taken by derive.ts's waits once the track has passed a record's time, not by a phase (no `on`).
  reads: { track: TRACK_SLICE },
  input: "CAN `load_status`, `current`, `battery_voltage`, `soc`; the track's motion",
  settings: ["CHARGING_CURRENT_SIGN", "CURRENT_SIGN_FROM", "CHARGING_MIN_CURRENT", "CHARGING_MIN_DURATION", "EVENTS_MAX_GAP"],
  derives: "`charging_started` / `_stopped`, `charging` sessions; when a session was under way (its last 4 changes, for the drain)",
  rules: "`load_status` decides where sent (2 charging); without it, `current` of `CHARGING_CURRENT_SIGN` (`CURRENT_SIGN_FROM=load_status`: nothing) and at least `CHARGING_MIN_CURRENT`, the vehicle standing (the track's motion at the record's time, read once the track has passed it: such a record waits for it, \"Waits\" below), lasting `CHARGING_MIN_DURATION` before it is emitted, stamped at its first record (regenerative braking is no session, however far GPS lags); a gap over `EVENTS_MAX_GAP` ends the session at its last record, never integrated across; energy ∫ V × \\|I\\| dt by trapezoids",
  outputs: [
    { events: ['charging_started', 'charging_stopped'], shown: "`charging_started` / `charging_stopped`", measurement: VEHICLE_EVENTS, fields: [{ name: 'soc', meaning: "the state of charge: at the first charging record, at the stop" }, { name: 'battery_voltage', meaning: "the record’s pack voltage (the first charging record’s; the stopping record’s)" }, { name: 'current', meaning: "the record’s pack current (the same records)" }, { name: 'durationS', meaning: "how long it charged", on: ['charging_stopped'] }, { name: 'energyWh', meaning: "the energy charged, when two records carried voltage and current", on: ['charging_stopped'] }], what: "a CAN record with `load_status` 2 (charging); without `load_status`, `current` of the charging sign (`CHARGING_CURRENT_SIGN`, default positive, as the emulator charges; at least `CHARGING_MIN_CURRENT`) while the vehicle stands still, told once it has lasted `CHARGING_MIN_DURATION` and stamped at its first record (regenerative braking is no session); then the first record that is not" },
    { events: [], shown: "a charging session", kind: 'charging', measurement: CHARGING_SESSIONS, fields: [{ name: 'end', meaning: "the first record not charging, or the last charging record before a gap" }, { name: 'durationS', meaning: "end − start" }, { name: 'socStart', meaning: "the soc as it started" }, { name: 'socEnd', meaning: "the soc as it stopped" }, { name: 'energyWh', meaning: "∫ voltage × |current| dt between charging records carrying both" }, { name: 'geofence', meaning: "the geofences the vehicle stood in as it started" }], what: "start to stop (or the last charging record before a gap of `EVENTS_MAX_GAP`); energy is ∫ voltage × \\|current\\| dt between charging records carrying both, never across a gap; shorter than `CHARGING_MIN_DURATION` is not a session" },
  ],
});
