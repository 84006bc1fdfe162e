import { newState, type VehicleState } from './derive.js';
import { emptyRecord, setValue, STREAMS, type StreamPlan, type StreamRecord } from './inputs.js';
import { PendingRecords } from './pending.js';
import { RING as STREAM_RING } from './streams.js';

/**
 * The states the releases before per-type streams wrote, read only: version 2 (binary: a tag byte 0xe2,
 * 24 doubles, the ring; pending records scored `time × 2 + rank`, can rank 0 and gps rank 1, with the
 * alarms as a mask of ALARMS' bits) and version 1 (the first release's JSON and comma-separated text).
 * `fromLegacy` turns one into this release's state, so an upgrade keeps every vehicle's alarms, open trip
 * and charging session, and pending records (store.ts reads a vehicle's legacy keys when it has no state
 * of this release, and its next commit writes the new layout).
 *
 * Kept for the upgrade from the release before per-type streams (docs/upgrading.md); version 1
 * goes with the next release that drops version 2.
 */

/** Committed scores version 2 and 1 remembered (both types in one ring). */
const RING = 64;
/** Version 2 and 1 ranked a record's type at equal times: types without a position first. */
const RANKS = 2;
const RANK_CAN = 0;
const RANK_GPS = 1;

/** A pending record as version 2 and 1 kept it. */
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
  am: number;
  av: number;
}

interface LegacyState {
  pending: Rec[];
  maxSeen: number;
  lastArrivalMs: number;
  wmT: number;
  wmK: number;
  ring: Float64Array;
  ringN: number;
  ringAt: number;
  ign: 0 | 1;
  alarms: number;
  soc: number | undefined;
  pos: { t: number; lat: number; lng: number } | undefined;
  trip: { start: number; lat: number; lng: number; distanceM: number; maxSpeed: number; socStart: number | undefined } | undefined;
  charge: { start: number; socStart: number | undefined; energyWh: number; integrated: boolean; pT: number | undefined; p: number | undefined } | undefined;
}

function legacyState(): LegacyState {
  return { pending: [], maxSeen: -Infinity, lastArrivalMs: -Infinity, wmT: -Infinity, wmK: 0, ring: new Float64Array(RING), ringN: 0, ringAt: 0, ign: 0, alarms: 0, soc: undefined, pos: undefined, trip: undefined, charge: undefined };
}

/** Whether a stored committed part is of a version before this release's. */
export function isLegacy(committed: Buffer): boolean {
  return committed[0] === TAG || committed[0] === 0x7b; // 0xe2, or `{` (version 1's JSON)
}

/** This release's state of a version 2 or 1 state and its pending records (as its one sorted set held them, in score order). */
export function fromLegacy(committed: Buffer, pending: readonly Buffer[]): VehicleState {
  const old = restoreLegacy(committed, pending);
  const s = newState();
  const gps = STREAMS.get('gps')!;
  const can = STREAMS.get('can')!;
  // Version 2 committed every record at or before (wmT, wmK): a CAN record at wmT always, a GPS one only if wmK is its rank.
  const watermark = [old.wmT, old.wmK >= RANK_GPS ? old.wmT : old.wmT - 1];
  for (const [k, plan] of [[RANK_CAN, can], [RANK_GPS, gps]] as const) {
    const st = s.streams[plan.streamId]!;
    st.newest = old.maxSeen;
    st.newestArrivalMs = old.lastArrivalMs;
    st.lastArrivalMs = old.lastArrivalMs;
    st.watermark = watermark[k]!;
    const times: number[] = [];
    for (let j = 0; j < old.ringN; j++) {
      const score = old.ring[(old.ringAt - old.ringN + j + RING) % RING]!;
      if (score % RANKS === k) times.push((score - k) / RANKS);
    }
    for (const t of times.slice(-STREAM_RING)) st.ring[st.ringN++] = t;
    st.ringAt = st.ringN % STREAM_RING;
    st.pending = PendingRecords.of(plan.streamId, old.pending.filter((r) => r.k === k).map((r) => recordOfLegacy(r, plan)));
  }
  s.ignition.on = old.ign;
  s.alarms.raised = old.alarms; // version 2's bits were the alarms' order in the schema, which their frozen bits keep
  if (old.soc !== undefined) {
    s.soc.latest = old.soc;
    s.soc.changes[0] = old.wmT;
    s.soc.changes[1] = old.soc;
    s.soc.changesN = 1;
    s.soc.changesAt = 1;
  }
  if (old.pos !== undefined) s.track.anchor = { time: old.pos.t, lat: old.pos.lat, lng: old.pos.lng, speed: NaN };
  if (old.trip !== undefined) {
    const t = old.trip;
    Object.assign(s.trips, { open: 1, start: t.start, startLat: t.lat, startLng: t.lng, endLat: old.pos?.lat ?? t.lat, endLng: old.pos?.lng ?? t.lng, distanceM: t.distanceM, maxSpeed: t.maxSpeed, socStart: t.socStart ?? NaN });
  }
  s.trips.lastTime = old.pos?.t ?? -Infinity;
  if (old.charge !== undefined) {
    const c = old.charge;
    Object.assign(s.charging, { phase: 2, start: c.start, startSoc: c.socStart ?? NaN, energyWh: c.energyWh, integrated: c.integrated ? 1 : 0, powerTime: c.pT ?? NaN, power: c.p ?? NaN, lastTime: c.pT ?? c.start });
  }
  return s;
}

function recordOfLegacy(r: Rec, plan: StreamPlan): StreamRecord {
  const out = emptyRecord(plan.streamId, r.t);
  const set = (at: number, x: number | undefined): void => {
    if (at >= 0 && x !== undefined) setValue(out, at, x);
  };
  set(plan.ignition, r.ign);
  set(plan.lat, r.lat);
  set(plan.lng, r.lng);
  set(plan.speed, r.spd);
  set(plan.soc, r.soc);
  set(plan.voltage, r.v);
  set(plan.current, r.i);
  set(plan.load, r.ls);
  // Version 2's alarm bits were the alarms' order in the schema, which their frozen bits keep.
  out.alarmMask = r.am;
  out.alarmValues = r.av & r.am;
  return out;
}

const TAG = 0xe2;

// The committed part's doubles.
const MAX_SEEN = 0;
const LAST_ARRIVAL = 1;
const WM_T = 2;
const WM_K = 3;
const IGN = 4;
const ALARMS = 5;
const SOC = 6;
const POS = 7; // t, lat, lng
const TRIP = 10; // start, lat, lng, distance, max speed, soc at start
const CHARGE = 16; // start, soc at start, energy, integrated (0/1), last power's time, last power
const RING_N = 22;
const RING_AT = 23;
const FIELDS = 24;
const HEAD_BYTES = 1 + FIELDS * 8;

/** Presence bits of a pending record's values, in the order written. */
const F_IGN = 1;
const F_POS = 2;
const F_SPD = 4;
const F_SOC = 8;
const F_V = 16;
const F_I = 32;
const F_LS = 64;
const F_ALARM = 128;

/** Doubles are gathered here and copied out as bytes (a Buffer from the pool need not be 8-aligned). */
const scratch = new Float64Array(FIELDS);
const scratchBytes = Buffer.from(scratch.buffer);

const orUndefined = (x: number): number | undefined => (Number.isNaN(x) ? undefined : x);

function readCommitted(b: Buffer): LegacyState {
  if (b.length < HEAD_BYTES) throw new Error('vehicle events: a truncated state');
  b.copy(scratchBytes, 0, 1, HEAD_BYTES);
  const f = scratch;
  const n = f[RING_N]!;
  const at = f[RING_AT]!;
  if (!Number.isInteger(n) || n < 0 || n > RING || !Number.isInteger(at) || at < 0 || at >= RING || (n < RING && at !== n) || b.length !== HEAD_BYTES + n * 8) {
    throw new Error('vehicle events: a state with a bad ring');
  }
  const s = legacyState();
  s.maxSeen = f[MAX_SEEN]!;
  s.lastArrivalMs = f[LAST_ARRIVAL]!;
  s.wmT = f[WM_T]!;
  s.wmK = f[WM_K]!;
  s.ign = f[IGN] === 1 ? 1 : 0;
  s.alarms = f[ALARMS]!;
  s.soc = orUndefined(f[SOC]!);
  if (!Number.isNaN(f[POS]!)) s.pos = { t: f[POS]!, lat: f[POS + 1]!, lng: f[POS + 2]! };
  if (!Number.isNaN(f[TRIP]!)) s.trip = { start: f[TRIP]!, lat: f[TRIP + 1]!, lng: f[TRIP + 2]!, distanceM: f[TRIP + 3]!, maxSpeed: f[TRIP + 4]!, socStart: orUndefined(f[TRIP + 5]!) };
  if (!Number.isNaN(f[CHARGE]!)) {
    s.charge = { start: f[CHARGE]!, socStart: orUndefined(f[CHARGE + 1]!), energyWh: f[CHARGE + 2]!, integrated: f[CHARGE + 3] === 1, pT: orUndefined(f[CHARGE + 4]!), p: orUndefined(f[CHARGE + 5]!) };
  }
  for (const x of [s.maxSeen, s.lastArrivalMs, s.wmT, s.wmK, s.alarms]) if (Number.isNaN(x)) throw new Error('vehicle events: a state with a value that is not a number');
  new Uint8Array(s.ring.buffer, s.ring.byteOffset, n * 8).set(b.subarray(HEAD_BYTES));
  s.ringN = n;
  s.ringAt = at;
  return s;
}

function readPending(b: Buffer): Rec {
  const bits = b[1]!;
  let n = 1;
  for (let bit = 1; bit <= F_ALARM; bit <<= 1) if (bits & bit) n += bit === F_POS || bit === F_ALARM ? 2 : 1;
  if (b.length !== 2 + n * 8) throw new Error('vehicle events: not a pending record');
  b.copy(scratchBytes, 0, 2, 2 + n * 8);
  const f = scratch;
  const score = f[0]!;
  const k = score % RANKS;
  let j = 1;
  const next = (bit: number): number | undefined => (bits & bit ? f[j++]! : undefined);
  const ign = next(F_IGN);
  const lat = next(F_POS);
  const lng = lat === undefined ? undefined : f[j++]!;
  const spd = next(F_SPD);
  const soc = next(F_SOC);
  const v = next(F_V);
  const i = next(F_I);
  const ls = next(F_LS);
  const am = next(F_ALARM) ?? 0;
  const av = am === 0 ? 0 : f[j++]!;
  if (!Number.isSafeInteger(score)) throw new Error('vehicle events: a pending record with a bad score');
  return { t: (score - k) / RANKS, k, ign, lat, lng, spd, soc, v, i, ls, am, av };
}

/** A legacy state (version 2 binary, or version 1 JSON) and its pending records (members of its one sorted set). */
function restoreLegacy(committed: Buffer, pending: readonly Buffer[]): LegacyState {
  const s = committed[0] === TAG ? readCommitted(committed) : readCommittedV1(committed.toString('utf8'));
  const members = pending.map((m) => (m[0] === TAG ? readPending(m) : readPendingV1(m.toString('latin1'))));
  // A one-piece state of the first release holds its pending records itself (`q`); a store writes them out.
  s.pending = s.pending.length === 0 ? members : [...s.pending, ...members].sort((a, b) => a.t - b.t || a.k - b.k);
  return s;
}

// ---- version 1: the first release's texts ----------------------------------------------------------

const WIRE_VERSION = 1;

/**
 * JSON: {v:1, m:[maxSeen, lastArrival, watermark time, watermark rank (-1: none)], g, x, s, p, t, c,
 * r: the ring newest first, each back from the next newer, and, in a one-piece state, q: the pending
 * records, flat: (offset back from maxSeen × RANKS + rank), presence bits, then the values present,
 * each a scaled integer (lat/lng 1e-7°, as a difference from the previous fix; the rest hundredths) or
 * the value itself boxed in a one-element array}.
 */
function readCommittedV1(text: string): LegacyState {
  const w = JSON.parse(text) as unknown;
  if (typeof w !== 'object' || w === null || (w as { v?: unknown }).v !== WIRE_VERSION) throw new Error('vehicle events: not a state of a known version');
  const o = w as Record<string, unknown>;
  const s = legacyState();
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
    const scores: number[] = [];
    let next = s.wmT;
    for (const e of r) {
      const x = num(e);
      const k = x % RANKS;
      const t = next - (x - k) / RANKS;
      scores.push(t * RANKS + k);
      next = t;
    }
    scores.reverse().forEach((score, j) => (s.ring[j] = score));
    s.ringN = scores.length;
    s.ringAt = scores.length % RING;
  }
  const q = arr(o.q);
  if (q !== undefined) {
    let j = 0;
    const raw = (): unknown => {
      if (j >= q.length) throw new Error('vehicle events: a truncated pending buffer');
      return q[j++];
    };
    const value = (scale: number): number => {
      const e = raw();
      return typeof e === 'number' ? num(e) / scale : unbox(e);
    };
    let lat0 = 0;
    let lng0 = 0;
    while (j < q.length) {
      const x = num(raw());
      const k = x % RANKS;
      const bits = num(raw());
      const ign = bits & F_IGN ? value(1) : undefined;
      let lat: number | undefined;
      let lng: number | undefined;
      if (bits & F_POS) {
        const a = raw();
        const b = raw();
        if (typeof a === 'number' && typeof b === 'number') {
          lat0 += num(a);
          lng0 += num(b);
          lat = lat0 / V1_POS_SCALE;
          lng = lng0 / V1_POS_SCALE;
        } else {
          lat = unbox(a);
          lng = unbox(b);
        }
      }
      const spd = bits & F_SPD ? value(V1_VALUE_SCALE) : undefined;
      const soc = bits & F_SOC ? value(V1_VALUE_SCALE) : undefined;
      const v = bits & F_V ? value(V1_VALUE_SCALE) : undefined;
      const i = bits & F_I ? value(V1_VALUE_SCALE) : undefined;
      const ls = bits & F_LS ? value(1) : undefined;
      const am = bits & F_ALARM ? num(raw()) : 0;
      const av = bits & F_ALARM ? num(raw()) : 0;
      s.pending.push({ t: s.maxSeen - (x - k) / RANKS, k, ign, lat, lng, spd, soc, v, i, ls, am, av });
    }
  }
  return s;
}

const V1_POS_SCALE = 1e7;
const V1_VALUE_SCALE = 100;

function unbox(x: unknown): number {
  if (!Array.isArray(x) || x.length !== 1) throw new Error('vehicle events: a state with a value of the wrong shape');
  return num(x[0]);
}

/** Comma-separated: t, k, ign, lat, lng, spd, soc, v, i, ls, am, av (an absent value empty). */
function readPendingV1(text: string): Rec {
  const a = text.split(',');
  if (a.length !== 12) throw new Error('vehicle events: not a pending record');
  const o = (x: string): number | undefined => (x === '' ? undefined : num(Number(x)));
  return { t: num(Number(a[0])), k: num(Number(a[1])), ign: o(a[2]!), lat: o(a[3]!), lng: o(a[4]!), spd: o(a[5]!), soc: o(a[6]!), v: o(a[7]!), i: o(a[8]!), ls: o(a[9]!), am: num(Number(a[10])), av: num(Number(a[11])) };
}

function num(x: unknown): number {
  if (typeof x !== 'number' || !Number.isFinite(x)) throw new Error('vehicle events: a state with a value that is not a number');
  return x;
}

function opt(x: unknown): number | undefined {
  return x === null ? undefined : num(x);
}

function arr(x: unknown, length?: number): unknown[] | undefined {
  if (x === undefined) return undefined;
  if (!Array.isArray(x) || (length !== undefined && x.length !== length)) throw new Error('vehicle events: a state of the wrong shape');
  return x as unknown[];
}
