import { newState, SLICES, type VehicleState } from './derive.js';
import { STREAM_BY_ID, type StreamPlan, type StreamRecord } from './inputs.js';
import { newStream, RING, type Stream } from './streams.js';
import type { Slice } from './detectors/context.js';

/**
 * A vehicle's derivation state as Redis keeps it (store.ts), in two parts: the committed part, rewritten
 * by each job of the vehicle, and each pending record on its own, in its stream's sorted set, written
 * once when it arrives. Binary and exact: every number its eight-byte double, little-endian, as the
 * process holds it (no number is printed and parsed: that was two thirds of a job's derivation cost).
 *
 * Everything stored is named by a frozen id, never by a position in a list that may grow: streams by
 * their type's `streamId`, detectors' slices by their `id`, alarms by their `alarmBit`, a pending
 * record's values by their field's wire id (src/telemetry/vehicleData.ts). So a release that adds a
 * record type, an alarm (wherever in the list), a field, a detector or a double at the end of a slice
 * reads every state stored before it exactly.
 *
 * Committed part (version 3), after the store's `<version> ` head:
 *
 * | bytes | what |
 * |---|---|
 * | 1 | TAG, 0xe3 |
 * | 1 | S, the number of streams |
 * | S × (2 + 8n) | each: its stream id (1 byte), n (1 byte), then n doubles: newest, newest's arrival, last arrival, watermark, ring's next index, then the ring's n − 5 committed times |
 * | 1 | D, the number of slices |
 * | D × (2 + 8m) | each: its slice id (1 byte), m (1 byte), then its m doubles (`Slice.save`; NaN: absent) |
 *
 * Pending record (one member of its stream's sorted set, scored by its time):
 *
 * | bytes | what |
 * |---|---|
 * | 1 | TAG, 0xe3 |
 * | 1 | V, the number of values |
 * | 8 | its time, a double (so two records of equal values are two members) |
 * | V × 2 or 10 | each: its field's wire id (2 bytes, big-endian; bit 15: a flag at 1, bit 14: a flag at 0, with no double after), else the wire id and its double |
 *
 * The previous releases' states (version 2, binary, one watermark for all types; version 1, JSON) are
 * read by `legacy.ts` and become this layout at the vehicle's next commit.
 */
export const TAG = 0xe3;

const STREAM_HEAD = 5;
const FLAG_ONE = 0x8000;
const FLAG_ZERO = 0x4000;
const ID_MASK = 0x3fff;

/** Doubles are gathered here and copied out as bytes (a Buffer from the pool need not be 8-aligned). */
const scratch = new Float64Array(256);
const scratchBytes = new Uint8Array(scratch.buffer);

type SliceKey = keyof typeof SLICES;
const SLICE_KEYS = Object.keys(SLICES) as SliceKey[];
const SLICE_BY_ID = new Map<number, SliceKey>(SLICE_KEYS.map((k) => [SLICES[k].id, k]));

function streamDoubles(st: Stream): number {
  return STREAM_HEAD + st.ringN;
}

/** The bytes `writeCommittedAt` writes. */
export function committedSize(s: VehicleState, head = ''): number {
  let n = head.length + 3;
  for (const st of s.streams) if (st !== undefined) n += 2 + 8 * streamDoubles(st);
  for (const k of SLICE_KEYS) n += 2 + 8 * (SLICES[k] as Slice<unknown>).save(s[k]).length;
  return n;
}

/** The committed part, after `head` (latin1 text, e.g. a version). */
export function writeCommitted(s: VehicleState, head = ''): Buffer {
  const out = Buffer.allocUnsafe(committedSize(s, head));
  writeCommittedAt(s, head, out, 0);
  return out;
}

/** The committed part after `head` (latin1), into `out` at `at` (committedSize bytes free there); returns its end. */
export function writeCommittedAt(s: VehicleState, head: string, out: Buffer, at: number): number {
  let o = at + out.write(head, at, 'latin1');
  out[o++] = TAG;
  const streamCountAt = o++;
  let streams = 0;
  s.streams.forEach((st, streamId) => {
    if (st === undefined) return;
    streams++;
    const f = scratch;
    f[0] = st.newest;
    f[1] = st.newestArrivalMs;
    f[2] = st.lastArrivalMs;
    f[3] = st.watermark;
    f[4] = st.ringAt;
    f.set(st.ring.subarray(0, st.ringN), STREAM_HEAD);
    o = section(out, o, streamId, STREAM_HEAD + st.ringN);
  });
  out[streamCountAt] = streams;
  out[o++] = SLICE_KEYS.length;
  for (const k of SLICE_KEYS) {
    const slice = SLICES[k] as Slice<unknown>;
    const doubles = slice.save(s[k]);
    scratch.set(doubles);
    o = section(out, o, slice.id, doubles.length);
  }
  return o;
}

/** An id, a count and the first `n` doubles of scratch. */
function section(out: Buffer, o: number, id: number, n: number): number {
  out[o] = id;
  out[o + 1] = n;
  out.set(scratchBytes.subarray(0, n * 8), o + 2);
  return o + 2 + n * 8;
}

/** The most bytes `writePendingAt` writes for a record of `plan`. */
export const pendingMax = (plan: StreamPlan): number => 10 + plan.fields.length * 10;

/** A pending record on its own. */
export function writePending(plan: StreamPlan, r: StreamRecord): Buffer {
  const out = Buffer.allocUnsafe(pendingMax(plan));
  return out.subarray(0, writePendingAt(plan, r, out, 0));
}

/** A pending record into `out` at `at` (pendingMax bytes free there); returns its end. */
export function writePendingAt(plan: StreamPlan, r: StreamRecord, out: Buffer, at: number): number {
  out[at] = TAG;
  out.writeDoubleLE(r.time, at + 2);
  let o = at + 10;
  let n = 0;
  const v = r.values;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    if (x !== x) continue;
    n++;
    const id = plan.wireIds[i]!;
    if (plan.isAlarm[i] && (x === 0 || x === 1)) {
      out.writeUInt16BE(id | (x === 1 ? FLAG_ONE : FLAG_ZERO), o);
      o += 2;
    } else {
      out.writeUInt16BE(id, o);
      out.writeDoubleLE(x, o + 2);
      o += 10;
    }
  }
  out[at + 1] = n;
  return o;
}

/** A stream's pending record from its bytes (values of fields the stream does not know are left out). */
export function readPending(plan: StreamPlan, b: Buffer): StreamRecord {
  if (b[0] !== TAG || b.length < 10) throw new Error('vehicle events: not a pending record');
  const time = b.readDoubleLE(2);
  if (!Number.isSafeInteger(time)) throw new Error('vehicle events: a pending record with a bad time');
  const values = new Float64Array(plan.fields.length).fill(NaN);
  let o = 10;
  for (let j = 0; j < b[1]!; j++) {
    if (o + 2 > b.length) throw new Error('vehicle events: a truncated pending record');
    const word = b.readUInt16BE(o);
    const id = word & ID_MASK;
    let x: number;
    if (word & (FLAG_ONE | FLAG_ZERO)) {
      x = word & FLAG_ONE ? 1 : 0;
      o += 2;
    } else {
      if (o + 10 > b.length) throw new Error('vehicle events: a truncated pending record');
      x = b.readDoubleLE(o + 2);
      o += 10;
    }
    const i = plan.wireIds.indexOf(id);
    if (i >= 0) values[i] = x;
  }
  if (o !== b.length) throw new Error('vehicle events: not a pending record');
  return { time, values };
}

/** One stream's pending records as stored: members in score (time) order. */
export interface StoredPending {
  streamId: number;
  members: readonly Buffer[];
}

/**
 * The state of a committed part (none: a new vehicle) and its streams' pending records. `plans`: the
 * streams this release knows (a stream stored by a release that knew more is left out).
 */
export function restore(committed: Buffer | undefined, pending: readonly StoredPending[], plans: ReadonlyMap<number, StreamPlan> = STREAM_BY_ID): VehicleState {
  const s = newState();
  s.streams = [];
  for (const id of plans.keys()) s.streams[id] = newStream();
  if (committed !== undefined) readCommitted(s, committed, plans);
  for (const p of pending) {
    const plan = plans.get(p.streamId);
    const stream = s.streams[p.streamId];
    if (plan === undefined || stream === undefined) continue;
    stream.pending = p.members.map((m) => readPending(plan, m));
  }
  return s;
}

function readCommitted(s: VehicleState, b: Buffer, plans: ReadonlyMap<number, StreamPlan>): void {
  if (b[0] !== TAG) throw new Error('vehicle events: not a state of a known version');
  let o = 1;
  const read = (): { id: number; n: number; x: (i: number) => number } => {
    if (o + 2 > b.length) throw new Error('vehicle events: a truncated state');
    const id = b[o]!;
    const n = b[o + 1]!;
    const start = o + 2;
    o = start + n * 8;
    if (o > b.length) throw new Error('vehicle events: a truncated state');
    return { id, n, x: (i) => (i < n ? b.readDoubleLE(start + i * 8) : NaN) };
  };
  const streams = b[o++]!;
  for (let j = 0; j < streams; j++) {
    const { id, n, x } = read();
    if (!plans.has(id)) continue;
    const ringN = n - STREAM_HEAD;
    if (ringN < 0 || ringN > RING) throw new Error('vehicle events: a state with a bad ring');
    const st = newStream();
    st.newest = x(0);
    st.newestArrivalMs = x(1);
    st.lastArrivalMs = x(2);
    st.watermark = x(3);
    st.ringAt = x(4);
    st.ringN = ringN;
    for (let r = 0; r < ringN; r++) st.ring[r] = x(STREAM_HEAD + r);
    if (!Number.isInteger(st.ringAt) || st.ringAt < 0 || st.ringAt >= RING || (ringN < RING && st.ringAt !== ringN)) throw new Error('vehicle events: a state with a bad ring');
    s.streams[id] = st;
  }
  if (o >= b.length) throw new Error('vehicle events: a truncated state');
  const slices = b[o++]!;
  for (let j = 0; j < slices; j++) {
    const { id, n, x } = read();
    const key = SLICE_BY_ID.get(id);
    if (key === undefined) continue;
    (s as unknown as Record<string, unknown>)[key] = (SLICES[key] as Slice<unknown>).load(x, n);
  }
  if (o !== b.length) throw new Error('vehicle events: a state with bytes after its end');
}
