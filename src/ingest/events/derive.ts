import { createHash } from 'node:crypto';
import { ALARM_FIELDS, TYPES } from '../../telemetry/fields.js';
import { haversineM } from './geo.js';
import { fieldPick, pickedValues, type FieldPick } from '../../telemetry/record.js';

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
export const RING = 64;
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

/** What one call derived. Its lists are read-only: calls that derive nothing share empty ones. */
export interface Derived {
  events: readonly DerivedEvent[];
  trips: readonly Trip[];
  sessions: readonly ChargingSession[];
  /** Records ignored as older than what was already committed (they flip nothing). */
  late: number;
  /** Records ignored as already pending or recently committed. */
  duplicates: number;
  /** Records committed early because the pending buffer was full (maxPending): order is no longer guaranteed for them. */
  forced: number;
}

/**
 * One record: its type, time, and the values of the DERIVE_FIELDS it carried, `values[at + slot]` for
 * DERIVE_FIELDS[slot] (NaN where absent). A worker's sightings read with DERIVE_PICK are inputs as they
 * are: no object a record between the job's bytes and the derivation.
 */
export interface EventInput {
  type: string;
  time: number;
  values: ArrayLike<number>;
  at: number;
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

/** Every field name derivation reads, besides each type's position: their values come in these slots. */
export const DERIVE_FIELDS: readonly string[] = [
  ...new Set([...TYPES.flatMap((t) => (t.spec.position ? [t.spec.position.lat, t.spec.position.lng] : [])), IGNITION, SPEED, SOC, VOLTAGE, CURRENT, LOAD, ...ALARM_FIELDS]),
];
/** What a worker reads of each record for derivation (its sightings' values). */
export const DERIVE_PICK: FieldPick = fieldPick(DERIVE_FIELDS);
const SLOT = new Map(DERIVE_FIELDS.map((name, i) => [name, i]));

/** An input from named fields (those derivation does not read are left out). */
export function inputOf(type: string, time: number, fields: Readonly<Record<string, number>>): EventInput {
  const values = pickedValues(DERIVE_PICK, 1);
  DERIVE_FIELDS.forEach((name, i) => {
    if (Object.hasOwn(fields, name)) values[i] = fields[name]!;
  });
  return { type, time, values, at: 0 };
}

interface TypePlan {
  /** Order at equal time: types without a position first, so a reading taken at the instant ignition flips counts as "at" it. */
  rank: number;
  /** The position's field names, for events. */
  latName: string | undefined;
  lngName: string | undefined;
  /** Each field's slot in an input's values, -1 where the type does not declare it. */
  lat: number;
  lng: number;
  ignition: number;
  speed: number;
  soc: number;
  voltage: number;
  current: number;
  load: number;
  /** The alarms the type declares: each one's slot, and its bit (1 << its index in ALARM_FIELDS). */
  alarmSlots: readonly number[];
  alarmBits: readonly number[];
}

if (ALARM_FIELDS.length > 30) throw new Error('vehicle events: alarm flags are kept as a 30-bit mask');
export const RANKS = TYPES.length;
const ORDERED = [...TYPES].sort((a, b) => Number(a.spec.position !== undefined) - Number(b.spec.position !== undefined) || a.index - b.index);
const PLANS = new Map<string, TypePlan>(
  ORDERED.map((t, rank) => {
    const slot = (name: string | undefined): number => (name !== undefined && t.fields.has(name) ? SLOT.get(name)! : -1);
    return [
      t.name,
      {
        rank,
        latName: t.spec.position?.lat,
        lngName: t.spec.position?.lng,
        lat: slot(t.spec.position?.lat),
        lng: slot(t.spec.position?.lng),
        ignition: slot(IGNITION),
        speed: slot(SPEED),
        soc: slot(SOC),
        voltage: slot(VOLTAGE),
        current: slot(CURRENT),
        load: slot(LOAD),
        alarmSlots: ALARM_FIELDS.flatMap((a) => (t.fields.has(a) ? [SLOT.get(a)!] : [])),
        alarmBits: ALARM_FIELDS.flatMap((a, i) => (t.fields.has(a) ? [1 << i] : [])),
      },
    ];
  }),
);
const BY_RANK: readonly TypePlan[] = ORDERED.map((t) => PLANS.get(t.name)!);
for (const name of [IGNITION, SPEED, SOC, VOLTAGE, CURRENT, LOAD]) {
  if (!TYPES.some((t) => t.fields.has(name))) throw new Error(`vehicle events: no record type declares ${name}`);
}
// A trip starts where ignition turns on, so ignition must come with a position.
for (const t of TYPES) if (t.fields.has(IGNITION) && t.spec.position === undefined) throw new Error(`vehicle events: type ${t.name} has ignition but no position`);

// ---- state --------------------------------------------------------------------------------------

/** A pending record: only what derivation reads. Every property always set (one hidden class). */
export interface Rec {
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

export interface Position {
  t: number;
  lat: number;
  lng: number;
}

export interface TripAcc {
  start: number;
  lat: number;
  lng: number;
  distanceM: number;
  maxSpeed: number;
  socStart: number | undefined;
}

export interface ChargeAcc {
  start: number;
  socStart: number | undefined;
  energyWh: number;
  /** Whether a trapezoid was added (else energyWh is unknown, not 0). */
  integrated: boolean;
  /** The last charging record carrying voltage and current: its time and power. */
  pT: number | undefined;
  p: number | undefined;
}

/** One vehicle's derivation state: opaque to callers, kept in Redis as `wire.ts` writes it. */
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
  /** The scores (`pendingScore`) of the last RING committed records: ringN of them, the next written at ringAt. */
  ring: Float64Array;
  ringN: number;
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
    ring: new Float64Array(RING),
    ringN: 0,
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

// Most calls derive nothing: their outputs share these empty lists, and a list is made at its first output.
const NONE: readonly never[] = Object.freeze([]);
const emptyDerived = (): Derived => ({ events: NONE, trips: NONE, sessions: NONE, late: 0, duplicates: 0, forced: 0 });
/** `list` to add to: the call's own, made at its first output (the shared empty one is never written). */
const own = <T>(list: readonly T[]): T[] => (list === NONE ? [] : (list as T[]));
const emitEvent = (out: Derived, e: DerivedEvent): void => {
  (out.events = own(out.events)).push(e);
};

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

/** The value in `slot` of a record's values, if it has one. */
function valueAt(values: ArrayLike<number>, at: number, slot: number): number | undefined {
  if (slot < 0) return undefined;
  const x = values[at + slot]!;
  return x === x ? x : undefined;
}

function recOf(input: EventInput, plan: TypePlan): Rec | undefined {
  const f = input.values;
  const at = input.at;
  let am = 0;
  let av = 0;
  const slots = plan.alarmSlots;
  for (let j = 0; j < slots.length; j++) {
    const x = f[at + slots[j]!];
    if (x === 1 || x === 0) {
      const bit = plan.alarmBits[j]!;
      am |= bit;
      if (x === 1) av |= bit;
    }
  }
  const ignRaw = valueAt(f, at, plan.ignition);
  const r: Rec = {
    t: input.time,
    k: plan.rank,
    ign: ignRaw === 0 || ignRaw === 1 ? ignRaw : undefined,
    lat: valueAt(f, at, plan.lat),
    lng: valueAt(f, at, plan.lng),
    spd: valueAt(f, at, plan.speed),
    soc: valueAt(f, at, plan.soc),
    v: valueAt(f, at, plan.voltage),
    i: valueAt(f, at, plan.current),
    ls: valueAt(f, at, plan.load),
    am,
    av,
  };
  if (r.lat === undefined || r.lng === undefined) r.lat = r.lng = undefined;
  const useful = r.ign !== undefined || r.lat !== undefined || r.soc !== undefined || r.i !== undefined || r.ls !== undefined || am !== 0;
  return useful ? r : undefined;
}

function recentlyCommitted(s: VehicleState, t: number, k: number): boolean {
  const score = t * RANKS + k;
  for (let j = 0; j < s.ringN; j++) if (s.ring[j] === score) return true;
  return false;
}

// ---- the transitions ----------------------------------------------------------------------------

/** Commits the first `n` pending records, in order. */
function commit(vehicleno: string, s: VehicleState, n: number, out: Derived, opts: DeriveOptions): void {
  const p = s.pending;
  for (let j = 0; j < n; j++) apply(vehicleno, s, p[j]!, out, opts);
  p.copyWithin(0, n);
  p.length -= n;
}

function apply(vehicleno: string, s: VehicleState, r: Rec, out: Derived, o: DeriveOptions): void {
  s.wmT = r.t;
  s.wmK = r.k;
  s.ring[s.ringAt] = r.t * RANKS + r.k;
  s.ringAt = (s.ringAt + 1) % RING;
  if (s.ringN < RING) s.ringN++;

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
        emitEvent(out, { vehicleno, event: `${ALARM_FIELDS[b]!}_${up ? 'raised' : 'cleared'}`, time: r.t, value: up, fields: { ...fields } });
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
    emitEvent(out, { vehicleno, event: 'charging_started', time: r.t, value: 1, fields: readings(r, s.soc) });
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
  emitEvent(out, { vehicleno, event: 'charging_stopped', time: r.t, value: 0, fields });
  if (r.t - c.start < o.chargingMinDurationMs) return;
  const session: ChargingSession = { vehicleno, start: c.start, end: r.t, durationS };
  if (c.socStart !== undefined) session.socStart = c.socStart;
  if (s.soc !== undefined) session.socEnd = s.soc;
  if (c.integrated) session.energyWh = c.energyWh;
  (out.sessions = own(out.sessions)).push(session);
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
  emitEvent(out, { vehicleno, event: 'ignition_on', time: r.t, value: 1, fields: ignitionFields(s, r) });
}

function ignitionOff(vehicleno: string, s: VehicleState, r: Rec, out: Derived, o: DeriveOptions): void {
  s.ign = 0;
  emitEvent(out, { vehicleno, event: 'ignition_off', time: r.t, value: 0, fields: ignitionFields(s, r) });
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
  (out.trips = own(out.trips)).push(t);
}

/** The fix that turned ignition on or off, its speed, and the soc then. */
function ignitionFields(s: VehicleState, r: Rec): Record<string, number> {
  const plan = BY_RANK[r.k]!;
  const f: Record<string, number> = {};
  if (plan.latName !== undefined && plan.lngName !== undefined && r.lat !== undefined && r.lng !== undefined) {
    f[plan.latName] = r.lat;
    f[plan.lngName] = r.lng;
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

// ---- scores ------------------------------------------------------------------------------------

/** A pending record, opaque to a store but for its identity (which ones a job added) and score. */
export type PendingRecord = Readonly<Rec>;

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
