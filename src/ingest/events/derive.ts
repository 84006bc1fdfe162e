import { createHash } from 'node:crypto';
import { ALARM_FIELDS, TYPES } from '../../telemetry/fields.js';
import { haversineM } from './geo.js';

/**
 * Vehicle events (issue #28): per vehicle, by record time, the alarm flags raised and cleared, ignition
 * on and off, trips and charging sessions; each exactly once whatever order, batching and repetition
 * the records arrive in (README.md beside this file).
 *
 * A vehicle's state is a pure, deterministic state machine: `ingest` and `flush` read no clock and do no
 * I/O; what they return and how they change the state depend only on the state, the records, the wall
 * time passed in and the options. Records wait in a pending buffer until the vehicle's newest record
 * time is a reorder window W past them, then are committed in (time, type) order through the
 * transitions. So every delivery whose records each arrive within W of the newest one seen commits the
 * same sequence, and derives the same outputs, as delivery in order.
 */

// The fields derivation reads, besides each type's position (its schema's `position`) and ALARM_FIELDS.
// Named here since they are what this file computes from; the schema must declare each (checked below).
const IGNITION = 'ignstatus';
const SPEED = 'speed';
const SOC = 'soc';
const VOLTAGE = 'battery_voltage';
const CURRENT = 'current';
const LOAD = 'load_status';
/** `load_status` while charging (the schema: 0 idle, 1 discharging, 2 charging). */
const LOAD_CHARGING = 2;

/** Committed (time, type) keys remembered, so a record re-delivered after it was committed is a duplicate, not late. */
const RING = 64;
const MS_PER_HOUR = 3_600_000;

// ---- outputs -----------------------------------------------------------------------------------

export interface DerivedEvent {
  vehicleno: string;
  /** `${alarm}_raised` / `${alarm}_cleared` (alarm: the alert_* field), `ignition_on` / `_off`, `charging_started` / `_stopped`. */
  event: string;
  /** The record time of the transition, ms. */
  time: number;
  /** 1 raised / on / started, 0 cleared / off / stopped. */
  value: number;
  /** What the transition carries: position and speed at ignition, soc, voltage and current where known. */
  fields: Record<string, number>;
}

export interface Trip {
  vehicleno: string;
  /** Ignition on and off, record time ms. */
  start: number;
  end: number;
  durationS: number;
  /** Sum of the great-circle steps between the trip's accepted fixes (GPS jumps skipped). */
  distanceM: number;
  maxSpeedKmh: number;
  startLat: number;
  startLng: number;
  endLat: number;
  endLng: number;
  /** The last soc at or before the start (end), or the first within the trip if none before; absent if none. */
  socStart?: number;
  socEnd?: number;
}

export interface ChargingSession {
  vehicleno: string;
  /** The first charging record and the first non-charging one after it, record time ms. */
  start: number;
  end: number;
  durationS: number;
  socStart?: number;
  socEnd?: number;
  /** ∫ voltage × |current| dt (trapezoids between consecutive charging records carrying both); absent without two. */
  energyWh?: number;
}

export interface Derived {
  events: DerivedEvent[];
  trips: Trip[];
  sessions: ChargingSession[];
  /** Records ignored as older than what was already committed (they flip nothing). */
  late: number;
  /** Records ignored as already pending or recently committed. */
  duplicates: number;
  /** Records committed early because the pending buffer was full (maxPending): order is no longer guaranteed for them. */
  forced: number;
}

/** One record: its type, time and only the fields it carried. */
export interface EventInput {
  type: string;
  time: number;
  fields: Readonly<Record<string, number>>;
}

export interface DeriveOptions {
  /** W, the reorder window in record time: a record is committed once the vehicle's newest record is W past it. */
  windowMs: number;
  /** A trip shorter than this, or shorter than tripMinDistanceM, is not emitted (Traccar's minimalTripDuration / Distance). */
  tripMinDurationMs: number;
  tripMinDistanceM: number;
  /** A step between fixes implying more than this speed is a GPS jump: skipped, the next measured from the last accepted fix. */
  maxJumpSpeedKmh: number;
  /** The sign `current` has while charging (the schema: negative while discharging; the emulator charges positive). */
  chargingCurrentSign: 'positive' | 'negative';
  /** Without `load_status`, a record charges when its current has the charging sign and at least this magnitude. */
  chargingMinCurrentA: number;
  chargingMinDurationMs: number;
  /** `flush` commits everything pending once nothing arrived for this long (wall time). */
  idleMs: number;
  /** Pending records kept at most (default 4096); beyond, the oldest are committed early and counted as forced. */
  maxPending?: number;
}

export const DEFAULT_DERIVE_OPTIONS: Readonly<DeriveOptions> = Object.freeze({
  windowMs: 30_000,
  tripMinDurationMs: 60_000,
  tripMinDistanceM: 100,
  maxJumpSpeedKmh: 300,
  chargingCurrentSign: 'positive',
  chargingMinCurrentA: 0.5,
  chargingMinDurationMs: 60_000,
  idleMs: 30_000,
  maxPending: 4096,
});

// ---- what each record type contributes (from the schema) ---------------------------------------

interface TypePlan {
  /** Order at equal time: types without a position first, so a reading taken at the instant ignition flips counts as "at" it. */
  rank: number;
  lat: string | undefined;
  lng: string | undefined;
  ignition: boolean;
  speed: boolean;
  soc: boolean;
  voltage: boolean;
  current: boolean;
  load: boolean;
  /** The alarms the type declares, and each one's bit (1 << its index in ALARM_FIELDS). */
  alarms: readonly string[];
  alarmBits: readonly number[];
}

if (ALARM_FIELDS.length > 30) throw new Error('vehicle events: alarm flags are kept as a 30-bit mask');
const RANKS = TYPES.length;
const ORDERED = [...TYPES].sort((a, b) => Number(a.spec.position !== undefined) - Number(b.spec.position !== undefined) || a.index - b.index);
const PLANS = new Map<string, TypePlan>(
  ORDERED.map((t, rank) => [
    t.name,
    {
      rank,
      lat: t.spec.position?.lat,
      lng: t.spec.position?.lng,
      ignition: t.fields.has(IGNITION),
      speed: t.fields.has(SPEED),
      soc: t.fields.has(SOC),
      voltage: t.fields.has(VOLTAGE),
      current: t.fields.has(CURRENT),
      load: t.fields.has(LOAD),
      alarms: ALARM_FIELDS.filter((a) => t.fields.has(a)),
      alarmBits: ALARM_FIELDS.flatMap((a, i) => (t.fields.has(a) ? [1 << i] : [])),
    },
  ]),
);
const BY_RANK: readonly TypePlan[] = ORDERED.map((t) => PLANS.get(t.name)!);
for (const name of [IGNITION, SPEED, SOC, VOLTAGE, CURRENT, LOAD]) {
  if (!TYPES.some((t) => t.fields.has(name))) throw new Error(`vehicle events: no record type declares ${name}`);
}
// A trip starts where ignition turns on, so ignition must come with a position.
for (const t of TYPES) if (t.fields.has(IGNITION) && t.spec.position === undefined) throw new Error(`vehicle events: type ${t.name} has ignition but no position`);

/** Every field name derivation reads: a worker hands it only these (sightings' `fields`). */
export const DERIVE_FIELDS: readonly string[] = [
  ...new Set([...TYPES.flatMap((t) => (t.spec.position ? [t.spec.position.lat, t.spec.position.lng] : [])), IGNITION, SPEED, SOC, VOLTAGE, CURRENT, LOAD, ...ALARM_FIELDS]),
];

// ---- state --------------------------------------------------------------------------------------

/** A pending record: only what derivation reads. Every property always set (one hidden class). */
interface Rec {
  t: number;
  k: number;
  ign: number | undefined;
  lat: number | undefined;
  lng: number | undefined;
  spd: number | undefined;
  soc: number | undefined;
  v: number | undefined;
  i: number | undefined;
  ls: number | undefined;
  /** Alarm flags the record carried (bit i: ALARM_FIELDS[i]) and their values. */
  am: number;
  av: number;
}

interface Position {
  t: number;
  lat: number;
  lng: number;
}

interface TripAcc {
  start: number;
  lat: number;
  lng: number;
  distanceM: number;
  maxSpeed: number;
  socStart: number | undefined;
}

interface ChargeAcc {
  start: number;
  socStart: number | undefined;
  energyWh: number;
  /** Whether a trapezoid was added (else energyWh is unknown, not 0). */
  integrated: boolean;
  /** The last charging record carrying voltage and current: its time and power. */
  pT: number | undefined;
  p: number | undefined;
}

/** One vehicle's derivation state: opaque to callers, kept with `serialize` / `parse`. */
export interface VehicleState {
  /** Records not committed yet, sorted by (time, rank), no two equal. */
  pending: Rec[];
  /** The vehicle's newest record time seen (-Infinity before any). */
  maxSeen: number;
  /** Wall time of the last ingest that added a record. */
  lastArrivalMs: number;
  /** The watermark: (time, rank) of the last committed record; anything at or before it is late. */
  wmT: number;
  wmK: number;
  /** The last RING committed keys, circular from ringAt. */
  ringT: number[];
  ringK: number[];
  ringAt: number;
  ign: 0 | 1;
  /** Alarm flags (bit i: ALARM_FIELDS[i]); all 0 before any record, so a first record raises what is 1. */
  alarms: number;
  soc: number | undefined;
  /** The last accepted (not jumped) fix. */
  pos: Position | undefined;
  trip: TripAcc | undefined;
  charge: ChargeAcc | undefined;
}

export function newState(): VehicleState {
  return {
    pending: [],
    maxSeen: -Infinity,
    lastArrivalMs: -Infinity,
    wmT: -Infinity,
    wmK: 0,
    ringT: [],
    ringK: [],
    ringAt: 0,
    ign: 0,
    alarms: 0,
    soc: undefined,
    pos: undefined,
    trip: undefined,
    charge: undefined,
  };
}

/** Records a vehicle holds uncommitted (a caller keeps such vehicles for `flush`). */
export function pendingCount(s: VehicleState): number {
  return s.pending.length;
}

// ---- ingest and flush ---------------------------------------------------------------------------

const emptyDerived = (): Derived => ({ events: [], trips: [], sessions: [], late: 0, duplicates: 0, forced: 0 });

/**
 * Adds one delivery of a vehicle's records (any order, any repetition), then commits what the window
 * has passed. `nowMs` (wall time) is only remembered, for `flush`.
 */
export function ingest(
  vehicleno: string,
  s: VehicleState,
  inputs: readonly EventInput[],
  nowMs: number,
  opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS,
  /** Given, told the records this call put in the pending buffer (a store writes those alone; see `stillPending`). */
  into?: PendingRecord[],
): Derived {
  const out = emptyDerived();
  const p = s.pending;
  let added = false;
  for (const input of inputs) {
    const plan = PLANS.get(input.type);
    const t = input.time;
    // Times are integer epoch ms (validation makes them so); serialize writes them as exact offsets.
    if (plan === undefined || !Number.isSafeInteger(t)) continue;
    const r = recOf(input, plan);
    if (r === undefined) continue; // carries nothing derivation reads
    const k = r.k;
    if (t < s.wmT || (t === s.wmT && k <= s.wmK)) {
      if (recentlyCommitted(s, t, k)) out.duplicates++;
      else out.late++;
      continue;
    }
    // Nearly always at the end (a sender's records come mostly in order): else a binary search.
    const last = p[p.length - 1];
    if (last === undefined || t > last.t || (t === last.t && k > last.k)) p.push(r);
    else {
      let lo = 0;
      let hi = p.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const m = p[mid]!;
        if (m.t < t || (m.t === t && m.k < k)) lo = mid + 1;
        else hi = mid;
      }
      const at = p[lo];
      if (at !== undefined && at.t === t && at.k === k) {
        out.duplicates++;
        continue;
      }
      p.splice(lo, 0, r);
    }
    into?.push(r);
    if (t > s.maxSeen) s.maxSeen = t;
    added = true;
  }
  if (added) s.lastArrivalMs = nowMs;
  const cap = opts.maxPending ?? DEFAULT_DERIVE_OPTIONS.maxPending!;
  if (p.length > cap) {
    out.forced += p.length - cap;
    commit(vehicleno, s, p.length - cap, out, opts);
  }
  const limit = s.maxSeen - opts.windowMs;
  let n = 0;
  while (n < p.length && p[n]!.t <= limit) n++;
  if (n > 0) commit(vehicleno, s, n, out, opts);
  return out;
}

/** For a vehicle that stopped sending: once nothing arrived for `idleMs` of wall time, commits everything pending. */
export function flush(vehicleno: string, s: VehicleState, nowMs: number, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): Derived {
  const out = emptyDerived();
  if (s.pending.length > 0 && nowMs - s.lastArrivalMs >= opts.idleMs) commit(vehicleno, s, s.pending.length, out, opts);
  return out;
}

function recOf(input: EventInput, plan: TypePlan): Rec | undefined {
  const f = input.fields;
  let am = 0;
  let av = 0;
  const names = plan.alarms;
  for (let j = 0; j < names.length; j++) {
    const x = f[names[j]!];
    if (x === 1 || x === 0) {
      const bit = plan.alarmBits[j]!;
      am |= bit;
      if (x === 1) av |= bit;
    }
  }
  const ignRaw = plan.ignition ? f[IGNITION] : undefined;
  const r: Rec = {
    t: input.time,
    k: plan.rank,
    ign: ignRaw === 0 || ignRaw === 1 ? ignRaw : undefined,
    lat: plan.lat !== undefined ? f[plan.lat] : undefined,
    lng: plan.lng !== undefined ? f[plan.lng] : undefined,
    spd: plan.speed ? f[SPEED] : undefined,
    soc: plan.soc ? f[SOC] : undefined,
    v: plan.voltage ? f[VOLTAGE] : undefined,
    i: plan.current ? f[CURRENT] : undefined,
    ls: plan.load ? f[LOAD] : undefined,
    am,
    av,
  };
  if (r.lat === undefined || r.lng === undefined) r.lat = r.lng = undefined;
  const useful = r.ign !== undefined || r.lat !== undefined || r.soc !== undefined || r.i !== undefined || r.ls !== undefined || am !== 0;
  return useful ? r : undefined;
}

function recentlyCommitted(s: VehicleState, t: number, k: number): boolean {
  for (let j = 0; j < s.ringT.length; j++) if (s.ringT[j] === t && s.ringK[j] === k) return true;
  return false;
}

// ---- the transitions ----------------------------------------------------------------------------

/** Commits the first `n` pending records, in order. */
function commit(vehicleno: string, s: VehicleState, n: number, out: Derived, opts: DeriveOptions): void {
  const p = s.pending;
  for (let j = 0; j < n; j++) apply(vehicleno, s, p[j]!, out, opts);
  p.splice(0, n);
}

function apply(vehicleno: string, s: VehicleState, r: Rec, out: Derived, o: DeriveOptions): void {
  s.wmT = r.t;
  s.wmK = r.k;
  if (s.ringT.length < RING) {
    s.ringT.push(r.t);
    s.ringK.push(r.k);
  } else {
    s.ringT[s.ringAt] = r.t;
    s.ringK[s.ringAt] = r.k;
    s.ringAt = (s.ringAt + 1) % RING;
  }

  if (r.soc !== undefined) {
    s.soc = r.soc;
    if (s.trip !== undefined && s.trip.socStart === undefined) s.trip.socStart = r.soc;
    if (s.charge !== undefined && s.charge.socStart === undefined) s.charge.socStart = r.soc;
  }

  if (r.am !== 0) {
    const changed = (s.alarms ^ r.av) & r.am;
    if (changed !== 0) {
      const fields = readings(r);
      for (let b = 0; b < ALARM_FIELDS.length; b++) {
        if ((changed & (1 << b)) === 0) continue;
        const up = (r.av >> b) & 1;
        out.events.push({ vehicleno, event: `${ALARM_FIELDS[b]!}_${up ? 'raised' : 'cleared'}`, time: r.t, value: up, fields: { ...fields } });
      }
      s.alarms = (s.alarms & ~r.am) | (r.av & r.am);
    }
  }

  const charging = chargingOf(r, o);
  if (charging === 1) chargingRecord(vehicleno, s, r, out);
  else if (charging === 0 && s.charge !== undefined) chargingStopped(vehicleno, s, s.charge, r, out, o);

  if (r.lat !== undefined && r.lng !== undefined) fix(s, r, o);
  if (r.ign === 1 && s.ign === 0) ignitionOn(vehicleno, s, r, out);
  else if (r.ign === 0 && s.ign === 1) ignitionOff(vehicleno, s, r, out, o);
}

/** The soc, voltage and current a record carried, as an event's fields (soc: the last known). */
function readings(r: Rec, soc?: number): Record<string, number> {
  const f: Record<string, number> = {};
  const sc = r.soc ?? soc;
  if (sc !== undefined) f[SOC] = sc;
  if (r.v !== undefined) f[VOLTAGE] = r.v;
  if (r.i !== undefined) f[CURRENT] = r.i;
  return f;
}

/** 1 charging, 0 not, -1 the record says nothing about it (neither load_status nor current). */
function chargingOf(r: Rec, o: DeriveOptions): 1 | 0 | -1 {
  if (r.ls !== undefined) return r.ls === LOAD_CHARGING ? 1 : 0;
  if (r.i === undefined) return -1;
  const signed = o.chargingCurrentSign === 'positive' ? r.i : -r.i;
  return signed > 0 && signed >= o.chargingMinCurrentA ? 1 : 0;
}

function chargingRecord(vehicleno: string, s: VehicleState, r: Rec, out: Derived): void {
  const power = r.v !== undefined && r.i !== undefined ? r.v * Math.abs(r.i) : undefined;
  const c = s.charge;
  if (c === undefined) {
    s.charge = { start: r.t, socStart: s.soc, energyWh: 0, integrated: false, pT: power === undefined ? undefined : r.t, p: power };
    out.events.push({ vehicleno, event: 'charging_started', time: r.t, value: 1, fields: readings(r, s.soc) });
    return;
  }
  if (power === undefined) return;
  if (c.p !== undefined && c.pT !== undefined) {
    c.energyWh += ((c.p + power) / 2) * ((r.t - c.pT) / MS_PER_HOUR);
    c.integrated = true;
  }
  c.p = power;
  c.pT = r.t;
}

function chargingStopped(vehicleno: string, s: VehicleState, c: ChargeAcc, r: Rec, out: Derived, o: DeriveOptions): void {
  s.charge = undefined;
  const durationS = (r.t - c.start) / 1000;
  const fields = readings(r, s.soc);
  fields.durationS = durationS;
  if (c.integrated) fields.energyWh = c.energyWh;
  out.events.push({ vehicleno, event: 'charging_stopped', time: r.t, value: 0, fields });
  if (r.t - c.start < o.chargingMinDurationMs) return;
  const session: ChargingSession = { vehicleno, start: c.start, end: r.t, durationS };
  if (c.socStart !== undefined) session.socStart = c.socStart;
  if (s.soc !== undefined) session.socEnd = s.soc;
  if (c.integrated) session.energyWh = c.energyWh;
  out.sessions.push(session);
}

/** A fix: a jump is skipped; an accepted one within a trip adds its step and its speed. */
function fix(s: VehicleState, r: Rec, o: DeriveOptions): void {
  const lat = r.lat!;
  const lng = r.lng!;
  const prev = s.pos;
  if (prev === undefined) {
    s.pos = { t: r.t, lat, lng };
    return;
  }
  const d = haversineM(prev.lat, prev.lng, lat, lng);
  const dt = r.t - prev.t;
  // m per ms × 3600 = km/h.
  if (d > 0 && (dt <= 0 || (d / dt) * 3600 > o.maxJumpSpeedKmh)) return;
  const trip = s.trip;
  if (trip !== undefined) {
    trip.distanceM += d;
    if (r.spd !== undefined && r.spd > trip.maxSpeed) trip.maxSpeed = r.spd;
  }
  prev.t = r.t;
  prev.lat = lat;
  prev.lng = lng;
}

function ignitionOn(vehicleno: string, s: VehicleState, r: Rec, out: Derived): void {
  s.ign = 1;
  // The trip starts at the last accepted fix: this one, unless it was a jump. (Ignition comes with a
  // position, checked at load; without one, a record that lost it, there is no trip to measure.)
  const at = s.pos;
  if (at !== undefined) {
    const accepted = at.t === r.t;
    s.trip = { start: r.t, lat: at.lat, lng: at.lng, distanceM: 0, maxSpeed: accepted && r.spd !== undefined ? r.spd : 0, socStart: s.soc };
  }
  out.events.push({ vehicleno, event: 'ignition_on', time: r.t, value: 1, fields: ignitionFields(s, r) });
}

function ignitionOff(vehicleno: string, s: VehicleState, r: Rec, out: Derived, o: DeriveOptions): void {
  s.ign = 0;
  out.events.push({ vehicleno, event: 'ignition_off', time: r.t, value: 0, fields: ignitionFields(s, r) });
  const trip = s.trip;
  s.trip = undefined;
  const end = s.pos;
  if (trip === undefined || end === undefined) return;
  if (r.t - trip.start < o.tripMinDurationMs || trip.distanceM < o.tripMinDistanceM) return;
  const t: Trip = {
    vehicleno,
    start: trip.start,
    end: r.t,
    durationS: (r.t - trip.start) / 1000,
    distanceM: trip.distanceM,
    maxSpeedKmh: trip.maxSpeed,
    startLat: trip.lat,
    startLng: trip.lng,
    endLat: end.lat,
    endLng: end.lng,
  };
  if (trip.socStart !== undefined) t.socStart = trip.socStart;
  if (s.soc !== undefined) t.socEnd = s.soc;
  out.trips.push(t);
}

/** The fix that turned ignition on or off, its speed, and the soc then. */
function ignitionFields(s: VehicleState, r: Rec): Record<string, number> {
  const plan = BY_RANK[r.k]!;
  const f: Record<string, number> = {};
  if (plan.lat !== undefined && plan.lng !== undefined && r.lat !== undefined && r.lng !== undefined) {
    f[plan.lat] = r.lat;
    f[plan.lng] = r.lng;
  }
  if (r.spd !== undefined) f[SPEED] = r.spd;
  if (s.soc !== undefined) f[SOC] = s.soc;
  return f;
}

// ---- stable ids ---------------------------------------------------------------------------------

const id = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** An event's id (a webhook-id): the same for the same transition however often it is derived or delivered. */
export function eventId(e: Pick<DerivedEvent, 'vehicleno' | 'event' | 'time'>): string {
  return id(`${e.vehicleno}\n${e.event}\n${e.time}`);
}

export function tripId(t: Pick<Trip, 'vehicleno' | 'start'>): string {
  return id(`${t.vehicleno}\ntrip\n${t.start}`);
}

export function sessionId(c: Pick<ChargingSession, 'vehicleno' | 'start'>): string {
  return id(`${c.vehicleno}\ncharging\n${c.start}`);
}

// ---- serialisation ------------------------------------------------------------------------------

/*
 * Compact JSON, an object of short keys, exact: a parsed state derives what the original would have.
 * - Record times are integers (epoch ms), written as small non-negative offsets fused with the type's
 *   rank (offset × RANKS + rank): pending ones back from the newest seen, ring ones each back from the
 *   next newer (the newest is the watermark).
 * - A pending value is written as an integer at a fixed scale (lat/lng in 1e-7°, as a difference from
 *   the previous fix; speed, soc, voltage and current in hundredths) when that integer gives the value
 *   back exactly (n / scale is the double nearest the decimal, i.e. what parsing the device's text
 *   gave), else as itself in a one-element array. Integers are shorter, and two to four times faster
 *   to write and read than doubles: a state is parsed and written on every job of its vehicle.
 */
const WIRE_VERSION = 1;
/** Presence bits of a pending record's values, in the order written. */
const F_IGN = 1;
const F_POS = 2;
const F_SPD = 4;
const F_SOC = 8;
const F_V = 16;
const F_I = 32;
const F_LS = 64;
const F_ALARM = 128;
const POS_SCALE = 1e7;
const VALUE_SCALE = 100;

/** A value in a pending record: a scaled integer, or the value itself, boxed. */
type Packed = number | [number];

interface Wire {
  v: number;
  /** maxSeen, lastArrivalMs, watermark time, watermark rank (-1: none). */
  m?: [number, number, number, number];
  g?: 1;
  x?: number;
  s?: number;
  /** Last accepted fix: time, lat, lng. */
  p?: [number, number, number];
  /** Trip: start, lat, lng, distance, max speed, soc at start (null: unknown). */
  t?: [number, number, number, number, number, number | null];
  /** Charge: start, soc at start, energy, integrated (0/1), last power's time and power (null: none). */
  c?: [number, number | null, number, number, number | null, number | null];
  /** Ring, newest first. */
  r?: number[];
  /** Pending, flat: (offset × RANKS + rank), presence bits, then the values present. */
  q?: Packed[];
}

const scaled = (x: number, scale: number): number | undefined => {
  const n = Math.round(x * scale);
  return Number.isSafeInteger(n) && n / scale === x ? n : undefined;
};

const pack = (q: Packed[], x: number, scale: number): void => {
  const n = scaled(x, scale);
  q.push(n === undefined ? [x] : n);
};

export function serialize(s: VehicleState): string {
  const w: Wire = { v: WIRE_VERSION };
  if (s.maxSeen !== -Infinity) w.m = [s.maxSeen, s.lastArrivalMs === -Infinity ? 0 : s.lastArrivalMs, s.wmT === -Infinity ? 0 : s.wmT, s.wmT === -Infinity ? -1 : s.wmK];
  if (s.ign === 1) w.g = 1;
  if (s.alarms !== 0) w.x = s.alarms;
  if (s.soc !== undefined) w.s = s.soc;
  if (s.pos !== undefined) w.p = [s.pos.t, s.pos.lat, s.pos.lng];
  const tr = s.trip;
  if (tr !== undefined) w.t = [tr.start, tr.lat, tr.lng, tr.distanceM, tr.maxSpeed, tr.socStart ?? null];
  const c = s.charge;
  if (c !== undefined) w.c = [c.start, c.socStart ?? null, c.energyWh, c.integrated ? 1 : 0, c.pT ?? null, c.p ?? null];
  const n = s.ringT.length;
  if (n > 0) {
    const r: number[] = [];
    let next = s.wmT;
    for (let j = 1; j <= n; j++) {
      const at = (s.ringAt - j + n) % n;
      const t = s.ringT[at]!;
      r.push((next - t) * RANKS + s.ringK[at]!);
      next = t;
    }
    w.r = r;
  }
  if (s.pending.length > 0) {
    const q: Packed[] = [];
    let lat0 = 0;
    let lng0 = 0;
    for (const p of s.pending) {
      const bits =
        (p.ign !== undefined ? F_IGN : 0) |
        (p.lat !== undefined && p.lng !== undefined ? F_POS : 0) |
        (p.spd !== undefined ? F_SPD : 0) |
        (p.soc !== undefined ? F_SOC : 0) |
        (p.v !== undefined ? F_V : 0) |
        (p.i !== undefined ? F_I : 0) |
        (p.ls !== undefined ? F_LS : 0) |
        (p.am !== 0 ? F_ALARM : 0);
      q.push((s.maxSeen - p.t) * RANKS + p.k, bits);
      if (p.ign !== undefined) pack(q, p.ign, 1);
      if (p.lat !== undefined && p.lng !== undefined) {
        const a = scaled(p.lat, POS_SCALE);
        const b = scaled(p.lng, POS_SCALE);
        if (a === undefined || b === undefined) q.push([p.lat], [p.lng]);
        else {
          q.push(a - lat0, b - lng0);
          lat0 = a;
          lng0 = b;
        }
      }
      if (p.spd !== undefined) pack(q, p.spd, VALUE_SCALE);
      if (p.soc !== undefined) pack(q, p.soc, VALUE_SCALE);
      if (p.v !== undefined) pack(q, p.v, VALUE_SCALE);
      if (p.i !== undefined) pack(q, p.i, VALUE_SCALE);
      if (p.ls !== undefined) pack(q, p.ls, 1);
      if (p.am !== 0) q.push(p.am, p.av);
    }
    w.q = q;
  }
  return JSON.stringify(w);
}

/** The state `serialize` wrote; throws on text that is not one (a caller may start afresh with newState). */
export function parse(text: string): VehicleState {
  const w = JSON.parse(text) as unknown;
  if (typeof w !== 'object' || w === null || (w as { v?: unknown }).v !== WIRE_VERSION) throw new Error('vehicle events: not a state of this version');
  const o = w as Record<string, unknown>;
  const s = newState();
  const m = arr(o.m, 4);
  if (m !== undefined) {
    s.maxSeen = num(m[0]);
    s.lastArrivalMs = num(m[1]);
    const k = num(m[3]);
    if (k >= 0) {
      s.wmT = num(m[2]);
      s.wmK = k;
    }
  }
  if (o.g === 1) s.ign = 1;
  if (o.x !== undefined) s.alarms = num(o.x);
  if (o.s !== undefined) s.soc = num(o.s);
  const p = arr(o.p, 3);
  if (p !== undefined) s.pos = { t: num(p[0]), lat: num(p[1]), lng: num(p[2]) };
  const t = arr(o.t, 6);
  if (t !== undefined) s.trip = { start: num(t[0]), lat: num(t[1]), lng: num(t[2]), distanceM: num(t[3]), maxSpeed: num(t[4]), socStart: opt(t[5]) };
  const c = arr(o.c, 6);
  if (c !== undefined) s.charge = { start: num(c[0]), socStart: opt(c[1]), energyWh: num(c[2]), integrated: c[3] === 1, pT: opt(c[4]), p: opt(c[5]) };
  const r = arr(o.r);
  if (r !== undefined) {
    if (r.length > RING || s.wmT === -Infinity) throw new Error('vehicle events: a state with a bad ring');
    // Oldest first, so the circular ring starts at 0.
    let next = s.wmT;
    const ts: number[] = [];
    const ks: number[] = [];
    for (const e of r) {
      const x = num(e);
      const k = x % RANKS;
      const t = next - (x - k) / RANKS;
      ts.push(t);
      ks.push(k);
      next = t;
    }
    s.ringT = ts.reverse();
    s.ringK = ks.reverse();
    s.ringAt = 0;
  }
  const q = arr(o.q);
  if (q !== undefined) {
    let j = 0;
    const raw = (): unknown => {
      if (j >= q.length) throw new Error('vehicle events: a truncated pending buffer');
      return q[j++];
    };
    const int = (): number => num(raw());
    const value = (scale: number): number => {
      const e = raw();
      return typeof e === 'number' ? num(e) / scale : unbox(e);
    };
    let lat0 = 0;
    let lng0 = 0;
    while (j < q.length) {
      const x = int();
      const k = x % RANKS;
      const bits = int();
      const ign = bits & F_IGN ? value(1) : undefined;
      let lat: number | undefined;
      let lng: number | undefined;
      if (bits & F_POS) {
        const a = raw();
        const b = raw();
        if (typeof a === 'number' && typeof b === 'number') {
          lat0 += num(a);
          lng0 += num(b);
          lat = lat0 / POS_SCALE;
          lng = lng0 / POS_SCALE;
        } else {
          lat = unbox(a);
          lng = unbox(b);
        }
      }
      const spd = bits & F_SPD ? value(VALUE_SCALE) : undefined;
      const soc = bits & F_SOC ? value(VALUE_SCALE) : undefined;
      const v = bits & F_V ? value(VALUE_SCALE) : undefined;
      const i = bits & F_I ? value(VALUE_SCALE) : undefined;
      const ls = bits & F_LS ? value(1) : undefined;
      const am = bits & F_ALARM ? int() : 0;
      const av = bits & F_ALARM ? int() : 0;
      s.pending.push({ t: s.maxSeen - (x - k) / RANKS, k, ign, lat, lng, spd, soc, v, i, ls, am, av });
    }
  }
  return s;
}

function num(x: unknown): number {
  if (typeof x !== 'number' || !Number.isFinite(x)) throw new Error('vehicle events: a state with a value that is not a number');
  return x;
}

function unbox(x: unknown): number {
  if (!Array.isArray(x) || x.length !== 1) throw new Error('vehicle events: a state with a value of the wrong shape');
  return num(x[0]);
}

function opt(x: unknown): number | undefined {
  return x === null ? undefined : num(x);
}

function arr(x: unknown, length?: number): unknown[] | undefined {
  if (x === undefined) return undefined;
  if (!Array.isArray(x) || (length !== undefined && x.length !== length)) throw new Error('vehicle events: a state of the wrong shape');
  return x as unknown[];
}

// ---- a state kept in two parts ------------------------------------------------------------------

/*
 * A store that writes a vehicle's state on every job keeps its pending records apart from the rest
 * (the committed part): each record is written once, when it arrives, and removed once committed (by its
 * score, all at or before the watermark), and only the committed part, a few hundred bytes, is written
 * again. `serializeCommitted` + `packPending` of each pending record, read back by `restore`, is the
 * same state as `serialize` / `parse` (derive.test.ts).
 */

/** A pending record, opaque to a store but for its identity (which ones a job added) and score. */
export type PendingRecord = Readonly<Rec>;
const NO_PENDING: Rec[] = [];

/** The state without its pending records. */
export function serializeCommitted(s: VehicleState): string {
  const pending = s.pending;
  s.pending = NO_PENDING;
  try {
    return serialize(s);
  } finally {
    s.pending = pending;
  }
}

/** Whether `r` is still pending in `s` (not committed since it was added). */
export function stillPending(s: VehicleState, r: PendingRecord): boolean {
  return r.t > s.wmT || (r.t === s.wmT && r.k > s.wmK);
}

/** Where a pending record sorts, as one exact number: (time, rank). */
export function pendingScore(r: PendingRecord): number {
  return r.t * RANKS + r.k;
}

/** The score of the watermark (every committed record's is at or below it), or undefined before any. */
export function watermarkScore(s: VehicleState): number | undefined {
  return s.wmT === -Infinity ? undefined : s.wmT * RANKS + s.wmK;
}

/**
 * A pending record as text, on its own: its values comma-separated in a fixed order, an absent one
 * empty. `String` of a double reads back as the same double, so it is exact; and it is several times
 * cheaper than JSON for the one record a job adds of a vehicle.
 */
export function packPending(r: PendingRecord): string {
  const o = (x: number | undefined): string => (x === undefined ? '' : String(x));
  return `${r.t},${r.k},${o(r.ign)},${o(r.lat)},${o(r.lng)},${o(r.spd)},${o(r.soc)},${o(r.v)},${o(r.i)},${o(r.ls)},${r.am},${r.av}`;
}

function unpackPending(text: string): Rec {
  const a = text.split(',');
  if (a.length !== 12) throw new Error('vehicle events: not a pending record');
  const o = (x: string): number | undefined => (x === '' ? undefined : num(Number(x)));
  return { t: num(Number(a[0])), k: num(Number(a[1])), ign: o(a[2]!) as 0 | 1 | undefined, lat: o(a[3]!), lng: o(a[4]!), spd: o(a[5]!), soc: o(a[6]!), v: o(a[7]!), i: o(a[8]!), ls: o(a[9]!), am: num(Number(a[10])), av: num(Number(a[11])) };
}

/** The state of a committed part (none: a new vehicle) and its pending records' texts, in score order. */
export function restore(committed: string | undefined, pending: readonly string[]): VehicleState {
  const s = committed === undefined ? newState() : parse(committed);
  s.pending = pending.map(unpackPending);
  return s;
}
