import { newState, SLICES, type VehicleState } from './derive.js';
import { emptyRecord, MAX_VALUES, setValue, STREAM_BY_ID, valuesInto, type StreamPlan, type StreamRecord } from './inputs.js';
import { HELD, newStream, RING } from './streams.js';
import { PendingRecords } from './pending.js';
import type { Slice } from './detectors/context.js';

/**
 * A vehicle's derivation state as Redis keeps it (store/), in two parts: the committed part, rewritten
 * by each job of the vehicle, and each pending record on its own, in its stream's sorted set, written
 * once when it arrives. Binary and exact: every number its eight-byte double, as the process holds it
 * (no number is printed and parsed: that was two thirds of a job's derivation cost).
 *
 * The byte tables are src/formats/README.md ("Vehicle state"); the golden state its readers are held to
 * is src/formats/testdata/v3-state.json. Everything stored is named by a frozen id, never by a position in
 * a list that may grow, so a release that adds a record type, an alarm, a field, a detector or a double at
 * the end of a slice reads every state stored before it exactly.
 */
const TAG = 0xe3;

const STREAM_HEAD = 5;
const FLAG_ONE = 0x8000;
const FLAG_ZERO = 0x4000;
const ID_MASK = 0x3fff;

type SliceKey = keyof typeof SLICES;
const SLICE_KEYS = Object.keys(SLICES) as SliceKey[];
const SLICE_BY_ID = new Map<number, SliceKey>(SLICE_KEYS.map((k) => [SLICES[k].id, k]));

/**
 * A committed part is written in two steps, so each slice is saved once: `prepareCommitted` gathers its
 * doubles here (rings copied as blocks) and returns the size; `writePrepared` writes them.
 */
const MAX_DOUBLES = 4096;
const gathered = new Float64Array(MAX_DOUBLES);
const gatheredBytes = Buffer.from(gathered.buffer);
/** Per section: its id and its count of doubles. Streams first, then slices. */
const sectionHead = new Uint8Array(2 * 64);
let sectionCount = 0;
let streamSections = 0;
let doubles = 0;
let preparedHead = '';

/**
 * Gathers the committed part of `s` after `head` (latin1 text, e.g. a version); returns its size in bytes.
 * Without `rings`, each stream's ring of committed times is left out (a checkpoint: a replay from it
 * commits records after its watermarks only, so nothing there is a duplicate of what the ring held).
 */
export function prepareCommitted(s: VehicleState, head = '', rings = true): number {
  let at = 0;
  sectionCount = 0;
  streamSections = 0;
  preparedHead = head;
  const streams = s.streams;
  for (let streamId = 0; streamId < streams.length; streamId++) {
    const st = streams[streamId];
    if (st === undefined) continue;
    gathered[at] = st.newest;
    gathered[at + 1] = st.newestArrivalMs;
    gathered[at + 2] = st.lastArrivalMs;
    gathered[at + 3] = st.watermark;
    const ringN = rings ? st.ringN : 0;
    gathered[at + 4] = rings ? st.ringAt : 0;
    for (let j = 0; j < ringN; j++) gathered[at + STREAM_HEAD + j] = st.ring[j]!;
    sectionHead[2 * sectionCount] = streamId;
    sectionHead[2 * sectionCount + 1] = STREAM_HEAD + ringN;
    sectionCount++;
    at += STREAM_HEAD + ringN;
    streamSections++;
  }
  for (const k of SLICE_KEYS) {
    const slice = SLICES[k] as Slice<unknown>;
    const from = at;
    at = slice.save(s[k], gathered, at, s);
    if (at - from > 255) throw new Error(`vehicle events: slice ${slice.name} saves more than 255 doubles`);
    sectionHead[2 * sectionCount] = slice.id;
    sectionHead[2 * sectionCount + 1] = at - from;
    sectionCount++;
  }
  doubles = at;
  return head.length + 3 + sectionCount * 2 + doubles * 8;
}

/** Writes what `prepareCommitted` gathered into `out` at `at` (its size free there); returns the end. */
export function writePrepared(out: Buffer, at: number): number {
  let o = at;
  // The head is a few ASCII digits and a space: a byte a character.
  for (let i = 0; i < preparedHead.length; i++) out[o++] = preparedHead.charCodeAt(i);
  out[o] = TAG;
  out[o + 1] = streamSections;
  out[o + 2] = sectionCount - streamSections;
  o += 3;
  for (let i = 0; i < 2 * sectionCount; i++) out[o++] = sectionHead[i]!;
  gatheredBytes.copy(out, o, 0, doubles * 8);
  return o + doubles * 8;
}

/** The committed part, after `head` (latin1 text, e.g. a version). */
export function writeCommitted(s: VehicleState, head = ''): Buffer {
  const out = Buffer.allocUnsafe(prepareCommitted(s, head));
  writePrepared(out, 0);
  return out;
}

/** A checkpoint of `s` (corrections/): its committed part without the rings of committed times. */
export function writeCheckpoint(s: VehicleState): Buffer {
  const out = Buffer.allocUnsafe(prepareCommitted(s, '', false));
  writePrepared(out, 0);
  return out;
}

export { HELD, heldSetId } from './streams.js';

/** The most bytes `writePendingAt` writes for a record of `plan`. */
export const pendingMax = (plan: StreamPlan): number => 10 + plan.fields.length * 10 + plan.alarms.length * 2;

/** A pending record on its own. */
export function writePending(plan: StreamPlan, r: StreamRecord): Buffer {
  const out = Buffer.allocUnsafe(pendingMax(plan));
  return out.subarray(0, writePendingAt(plan, r, out, 0));
}

/** A record's values as `writePendingAt` reads them (reused: never re-entered). */
const WRITING_VALUES = new Float64Array(MAX_VALUES);

/** A pending record into `out` at `at` (pendingMax bytes free there); returns its end. */
export function writePendingAt(plan: StreamPlan, r: StreamRecord, out: Buffer, at: number): number {
  out[at] = TAG;
  out.writeDoubleLE(r.time, at + 2);
  let o = at + 10;
  let n = 0;
  const values = valuesInto(r, WRITING_VALUES);
  for (let i = 0; i < plan.fields.length; i++) {
    const x = values[i]!;
    if (x !== x) continue;
    n++;
    out.writeUInt16BE(plan.wireIds[i]!, o);
    out.writeDoubleLE(x, o + 2);
    o += 10;
  }
  if (r.alarmMask !== 0) {
    for (const a of plan.alarms) {
      if ((r.alarmMask & (1 << a.bit)) === 0) continue;
      n++;
      out.writeUInt16BE(a.wireId | (r.alarmValues & (1 << a.bit) ? FLAG_ONE : FLAG_ZERO), o);
      o += 2;
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
  const r = emptyRecord(plan.streamId, time);
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
    if (i >= 0) setValue(r, i, x);
    else {
      const a = plan.alarms.find((al) => al.wireId === id);
      if (a !== undefined && (x === 0 || x === 1)) {
        r.alarmMask |= 1 << a.bit;
        if (x === 1) r.alarmValues |= 1 << a.bit;
      }
    }
  }
  if (o !== b.length) throw new Error('vehicle events: not a pending record');
  return r;
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
  for (const id of plans.keys()) s.streams[id] = newStream(id, plans.get(id)!.fields.length);
  if (committed !== undefined) readCommitted(s, committed, plans);
  for (const p of pending) {
    const held = p.streamId >= HELD;
    const id = held ? p.streamId - HELD : p.streamId;
    const plan = plans.get(id);
    const stream = s.streams[id];
    if (plan === undefined || stream === undefined) continue;
    const records = PendingRecords.of(plan.streamId, p.members.map((m) => readPending(plan, m)), plan.fields.length);
    if (held) stream.held = records;
    else stream.pending = records;
  }
  return s;
}

function readCommitted(s: VehicleState, b: Buffer, plans: ReadonlyMap<number, StreamPlan>): void {
  if (b[0] !== TAG) throw new Error('vehicle events: not a state of a known version');
  if (b.length < 3) throw new Error('vehicle events: a truncated state');
  const streams = b[1]!;
  const slices = b[2]!;
  let doubles = 3 + 2 * (streams + slices);
  if (doubles > b.length) throw new Error('vehicle events: a truncated state');
  for (let j = 0; j < streams + slices; j++) {
    const id = b[3 + 2 * j]!;
    const n = b[4 + 2 * j]!;
    const start = doubles;
    doubles += 8 * n;
    if (doubles > b.length) throw new Error('vehicle events: a truncated state');
    const x = (i: number): number => (i < n ? b.readDoubleLE(start + i * 8) : NaN);
    if (j < streams) {
      if (!plans.has(id)) continue;
      const ringN = n - STREAM_HEAD;
      if (ringN < 0 || ringN > RING) throw new Error('vehicle events: a state with a bad ring');
      const st = newStream(id, plans.get(id)!.fields.length);
      st.newest = x(0);
      st.newestArrivalMs = x(1);
      st.lastArrivalMs = x(2);
      st.watermark = x(3);
      st.ringAt = x(4);
      st.ringN = ringN;
      for (let r = 0; r < ringN; r++) st.ring[r] = x(STREAM_HEAD + r);
      if (!Number.isInteger(st.ringAt) || st.ringAt < 0 || st.ringAt >= RING || (ringN < RING && st.ringAt !== ringN)) throw new Error('vehicle events: a state with a bad ring');
      s.streams[id] = st;
    } else {
      const key = SLICE_BY_ID.get(id);
      if (key === undefined) continue;
      (s as unknown as Record<string, unknown>)[key] = (SLICES[key] as Slice<unknown>).load(x, n);
    }
  }
  if (doubles !== b.length) throw new Error('vehicle events: a state with bytes after its end');
}

/** Each section of a committed part as stored, by `stream <id>` / `slice <id>`: its doubles (streams first, then slices). */
export function committedSections(committed: Buffer): Map<string, number[]> {
  const streams = committed[1]!;
  const all = streams + committed[2]!;
  const out = new Map<string, number[]>();
  let at = 3 + 2 * all;
  for (let j = 0; j < all; j++) {
    const n = committed[4 + 2 * j]!;
    out.set(`${j < streams ? 'stream' : 'slice'} ${committed[3 + 2 * j]!}`, Array.from({ length: n }, (_, i) => committed.readDoubleLE(at + 8 * i)));
    at += 8 * n;
  }
  return out;
}

/**
 * A section's first `length` doubles as this release reads them: those a slice's save left out at its end
 * (`Slice.leftOut`, a flat slice's fresh values) taken as what it reads them as.
 */
export function asStored(section: string, doubles: readonly number[], length: number): number[] {
  const key = section.startsWith('slice ') ? SLICE_BY_ID.get(Number(section.slice(6))) : undefined;
  const leftOut = key === undefined ? undefined : (SLICES[key] as Slice<unknown>).leftOut;
  return Array.from({ length }, (_, i) => (i < doubles.length ? doubles[i]! : leftOut !== undefined && i < leftOut.length ? leftOut[i]! : NaN));
}

/**
 * Whether a state another release (or this one) stored is read exactly: the sections of `stored` that
 * `rewritten` (this release's read of it, written back) does not keep, by name (none: read exactly). Every
 * double stored must come back at its place; what a slice gained since sits after them; a stream's ring of
 * committed times is compared as a set (the same times, maybe at other places). For the golden fixtures
 * (wire.test.ts) and the states a release mix leaves (test/bench/mix.ts).
 */
export function sectionsLost(stored: Buffer, rewritten: Buffer): string[] {
  const again = committedSections(rewritten);
  const lost: string[] = [];
  const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
  for (const [id, doubles] of committedSections(stored)) {
    const now = again.get(id);
    const kept =
      now !== undefined &&
      (id.startsWith('stream') ? same([...now.slice(0, 5), ...now.slice(5).sort()], [...doubles.slice(0, 5), ...doubles.slice(5).sort()]) : same(asStored(id, now, doubles.length), doubles));
    if (!kept) lost.push(id);
  }
  return lost;
}
