import { newState, RANKS, RING, type PendingRecord, type Rec, type VehicleState } from './derive.js';

/**
 * A vehicle's derivation state as Redis keeps it, in two parts (store.ts): the committed part, rewritten
 * by each job of the vehicle, and each pending record on its own, written once when it arrives.
 *
 * Both are binary, exact and cheap: every number is its double, eight bytes little-endian, as the
 * process holds it. No number is turned into text and back (that was two thirds of a job's derivation
 * cost with JSON), and a state is written by every job of its vehicle.
 *
 * - Committed part: TAG, then the FIELDS doubles below (NaN where a value is absent), then the ring's
 *   ringN scores as the process holds them (circular, the next written at ringAt).
 * - Pending record: TAG, its presence bits, its score, then the values present in the order of the bits.
 *
 * The first release of vehicle events wrote JSON and comma-separated text (`WIRE_VERSION` 1 below):
 * they are still read, so an upgrade keeps every state; this release writes only binary.
 */
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
/** Its first n doubles as bytes, by n: copied with TypedArray#set (a native copy, nothing allocated). */
const FIRST = Array.from({ length: FIELDS + 1 }, (_, n) => new Uint8Array(scratch.buffer, 0, n * 8));

const orNaN = (x: number | undefined): number => (x === undefined ? NaN : x);
const orUndefined = (x: number): number | undefined => (Number.isNaN(x) ? undefined : x);

/** The bytes `writeCommittedAt` writes. */
export function committedSize(s: VehicleState, head = ''): number {
  return head.length + HEAD_BYTES + s.ringN * 8;
}

/** The committed part (the state without its pending records), after `head` (latin1 text, e.g. a version). */
export function writeCommitted(s: VehicleState, head = ''): Buffer {
  const out = Buffer.allocUnsafe(committedSize(s, head));
  writeCommittedAt(s, head, out, 0);
  return out;
}

/** The committed part, after `head` (latin1), written into `out` at `at` (committedSize bytes free there); returns its end. */
export function writeCommittedAt(s: VehicleState, head: string, out: Buffer, at: number): number {
  const f = scratch;
  f[MAX_SEEN] = s.maxSeen;
  f[LAST_ARRIVAL] = s.lastArrivalMs;
  f[WM_T] = s.wmT;
  f[WM_K] = s.wmK;
  f[IGN] = s.ign;
  f[ALARMS] = s.alarms;
  f[SOC] = orNaN(s.soc);
  const p = s.pos;
  f[POS] = p === undefined ? NaN : p.t;
  f[POS + 1] = p === undefined ? NaN : p.lat;
  f[POS + 2] = p === undefined ? NaN : p.lng;
  const t = s.trip;
  f[TRIP] = t === undefined ? NaN : t.start;
  f[TRIP + 1] = t === undefined ? NaN : t.lat;
  f[TRIP + 2] = t === undefined ? NaN : t.lng;
  f[TRIP + 3] = t === undefined ? NaN : t.distanceM;
  f[TRIP + 4] = t === undefined ? NaN : t.maxSpeed;
  f[TRIP + 5] = t === undefined ? NaN : orNaN(t.socStart);
  const c = s.charge;
  f[CHARGE] = c === undefined ? NaN : c.start;
  f[CHARGE + 1] = c === undefined ? NaN : orNaN(c.socStart);
  f[CHARGE + 2] = c === undefined ? NaN : c.energyWh;
  f[CHARGE + 3] = c === undefined ? NaN : c.integrated ? 1 : 0;
  f[CHARGE + 4] = c === undefined ? NaN : orNaN(c.pT);
  f[CHARGE + 5] = c === undefined ? NaN : orNaN(c.p);
  f[RING_N] = s.ringN;
  f[RING_AT] = s.ringAt;
  let o = at + out.write(head, at, 'latin1');
  out[o++] = TAG;
  out.set(FIRST[FIELDS]!, o);
  o += FIELDS * 8;
  out.set(new Uint8Array(s.ring.buffer, s.ring.byteOffset, s.ringN * 8), o);
  return o + s.ringN * 8;
}

function readCommitted(b: Buffer): VehicleState {
  if (b.length < HEAD_BYTES) throw new Error('vehicle events: a truncated state');
  b.copy(scratchBytes, 0, 1, HEAD_BYTES);
  const f = scratch;
  const n = f[RING_N]!;
  const at = f[RING_AT]!;
  if (!Number.isInteger(n) || n < 0 || n > RING || !Number.isInteger(at) || at < 0 || at >= RING || (n < RING && at !== n) || b.length !== HEAD_BYTES + n * 8) {
    throw new Error('vehicle events: a state with a bad ring');
  }
  const s = newState();
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

/** The most bytes `writePendingAt` writes. */
export const PENDING_MAX = 2 + 12 * 8;

/** A pending record on its own. */
export function writePending(r: PendingRecord): Buffer {
  const out = Buffer.allocUnsafe(PENDING_MAX);
  return out.subarray(0, writePendingAt(r, out, 0));
}

/** A pending record written into `out` at `at` (PENDING_MAX bytes free there); returns its end. */
export function writePendingAt(r: PendingRecord, out: Buffer, at: number): number {
  const f = scratch;
  let bits = 0;
  let n = 0;
  f[n++] = r.t * RANKS + r.k;
  if (r.ign !== undefined) {
    bits |= F_IGN;
    f[n++] = r.ign;
  }
  if (r.lat !== undefined && r.lng !== undefined) {
    bits |= F_POS;
    f[n++] = r.lat;
    f[n++] = r.lng;
  }
  if (r.spd !== undefined) {
    bits |= F_SPD;
    f[n++] = r.spd;
  }
  if (r.soc !== undefined) {
    bits |= F_SOC;
    f[n++] = r.soc;
  }
  if (r.v !== undefined) {
    bits |= F_V;
    f[n++] = r.v;
  }
  if (r.i !== undefined) {
    bits |= F_I;
    f[n++] = r.i;
  }
  if (r.ls !== undefined) {
    bits |= F_LS;
    f[n++] = r.ls;
  }
  if (r.am !== 0) {
    bits |= F_ALARM;
    f[n++] = r.am;
    f[n++] = r.av;
  }
  out[at] = TAG;
  out[at + 1] = bits;
  out.set(FIRST[n]!, at + 2);
  return at + 2 + n * 8;
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

/** The state of a committed part (none: a new vehicle) and its pending records, in score order, as `write*` gave them (or the first release wrote them). */
export function restore(committed: Buffer | undefined, pending: readonly Buffer[]): VehicleState {
  const s = committed === undefined ? newState() : committed[0] === TAG ? readCommitted(committed) : readCommittedV1(committed.toString('utf8'));
  const members = pending.map((m) => (m[0] === TAG ? readPending(m) : readPendingV1(m.toString('latin1'))));
  // A one-piece state of the first release holds its pending records itself (`q`); a store writes them out.
  s.pending = s.pending.length === 0 ? members : [...s.pending, ...members].sort((a, b) => a.t - b.t || a.k - b.k);
  return s;
}

// ---- the first release's texts, read only ---------------------------------------------------------

const WIRE_VERSION = 1;

/**
 * JSON: {v:1, m:[maxSeen, lastArrival, watermark time, watermark rank (-1: none)], g, x, s, p, t, c,
 * r: the ring newest first, each back from the next newer, and, in a one-piece state, q: the pending
 * records, flat: (offset back from maxSeen × RANKS + rank), presence bits, then the values present,
 * each a scaled integer (lat/lng 1e-7°, as a difference from the previous fix; the rest hundredths) or
 * the value itself boxed in a one-element array}.
 */
function readCommittedV1(text: string): VehicleState {
  const w = JSON.parse(text) as unknown;
  if (typeof w !== 'object' || w === null || (w as { v?: unknown }).v !== WIRE_VERSION) throw new Error('vehicle events: not a state of a known version');
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
