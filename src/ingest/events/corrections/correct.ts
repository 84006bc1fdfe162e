import { STREAMS, type EventInput } from '../inputs.js';
import type { DeriveOptions, VehicleState } from '../derive.js';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { diffTold, readTold, toldField, toldLine, type Diff, type Told } from './ledger.js';
import { replay, replayFrom, type Checkpoint, type Replayed } from './replay.js';
import { inputOfRecord } from './records.js';

/**
 * A correction of one vehicle, as pure steps (README.md beside this file): which checkpoint it replays
 * from, which records it needs, whether the records read back are complete, and what it writes: the
 * replayed state, the checkpoints and ledger entries of the epochs it replayed, and what it tells.
 */

/** What a vehicle's corrections hash holds, read. */
export interface VehicleCorrections {
  checkpoints: Array<Checkpoint & { field: string }>;
  /** What was emitted, by epoch (the field `t<epoch>` each came from). */
  told: Told[];
  /** The ledger's fields (`t<epoch>`), by epoch. */
  toldFields: Map<number, string>;
  /** Corrections asked for from outside the records (`r<time>`: what the derivation read besides them changed at that time), and the earliest. */
  requested: string[];
  requestedFrom: number;
}

/** A correction asked for from `time` on (the store's `requestCorrection`): its field. */
export const requestField = (time: number): string => `r${time}`;
/** A field `requestField` made, its time captured. */
const REQUEST_FIELD = /^r(\d{1,16})$/;
/** Whether a field of the corrections hash asks for a correction (`requestField`). */
export const isRequestField = (field: string): boolean => REQUEST_FIELD.test(field);

/** A checkpoint's field: `c<epoch>:<cut>` (`-` for a cut before any record). */
export const checkpointField = (c: Pick<Checkpoint, 'epoch' | 'cut'>): string => `c${c.epoch}:${c.cut === -Infinity ? '-' : String(c.cut)}`;

/** A checkpoint's committed part as the hash keeps it: raw-deflated (a state's doubles are mostly NaN and alike: about 40 %). */
export const packCheckpoint = (committed: Buffer): Buffer => deflateRawSync(committed);

/** A vehicle's corrections hash, read (`vehicleno`: its outputs' ids are made again from what names them). */
export function readCorrections(vehicleno: string, hash: Readonly<Record<string, Buffer>>): VehicleCorrections {
  const out: VehicleCorrections = { checkpoints: [], told: [], toldFields: new Map(), requested: [], requestedFrom: Infinity };
  for (const [field, value] of Object.entries(hash)) {
    const c = /^c(\d+):(-|-?[\d.e+]+)$/.exec(field);
    if (c) {
      out.checkpoints.push({ field, epoch: Number(c[1]), cut: c[2] === '-' ? -Infinity : Number(c[2]), committed: inflateRawSync(value) });
      continue;
    }
    const r = REQUEST_FIELD.exec(field);
    if (r) {
      out.requested.push(field);
      out.requestedFrom = Math.min(out.requestedFrom, Number(r[1]));
      continue;
    }
    const t = /^t(\d+)$/.exec(field);
    if (!t) continue;
    out.toldFields.set(Number(t[1]), field);
    out.told.push(...readTold(vehicleno, Number(t[1]), value.toString('utf8')));
  }
  out.checkpoints.sort((a, b) => a.epoch - b.epoch);
  return out;
}

/** Emitted entries as the ledger's fields: one field an epoch, a line an output. */
export function toldFields(told: readonly Told[]): Array<[string, string]> {
  const by = new Map<number, string[]>();
  for (const t of told) by.set(t.epoch, [...(by.get(t.epoch) ?? []), toldLine(t)]);
  return [...by.entries()].map(([epoch, lines]) => [toldField(epoch), `${lines.join('\n')}\n`]);
}

/** The checkpoint a correction from `time` replays from: the latest cut before it (undefined: none, the record is too late). */
export function chooseCheckpoint<C extends Checkpoint>(checkpoints: readonly C[], time: number): C | undefined {
  let from: C | undefined;
  for (const c of checkpoints) if (c.cut < time && (from === undefined || c.epoch > from.epoch)) from = c;
  return from;
}

/**
 * The epoch before which checkpoints (and what was emitted in their epochs) are dropped once one cut at
 * `newest` is kept: the newest at or before `newest - horizon` stays, so every record the horizon admits
 * has a checkpoint before it. -1: none to drop. (The commit script does the same, events-commit.lua.)
 */
export function prunedBefore(checkpoints: readonly Checkpoint[], newest: number, horizonMs: number): number {
  let keepFrom = -1;
  for (const c of checkpoints) if (c.cut <= newest - horizonMs && c.epoch > keepFrom) keepFrom = c.epoch;
  return keepFrom;
}

/** Where each stream's records end for a correction: the live state's newest, or its last pending or held record. */
export function replayUntil(live: VehicleState): Map<number, number> {
  const until = new Map<number, number>();
  for (const plan of STREAMS.values()) {
    const st = live.streams[plan.streamId]!;
    let t = st.newest;
    if (st.pending.length > 0) t = Math.max(t, st.pending.timeAt(st.pending.length - 1));
    until.set(plan.streamId, t);
  }
  return until;
}

/**
 * The records a replay takes: those read back, and the live state's pending and held records (a store
 * may not show a record written a moment ago); one a stream and time, the store's first. Undefined when
 * the store misses a record the live state committed in the replayed span (its ring of committed times
 * says so): the store does not show it yet, and the correction waits.
 */
export function recordsFor(live: VehicleState, after: ReadonlyMap<number, number>, read: readonly EventInput[]): EventInput[] | undefined {
  const byKey = new Map<string, EventInput>();
  for (const r of read) byKey.set(`${r.type}:${r.time}`, r);
  for (const plan of STREAMS.values()) {
    const st = live.streams[plan.streamId]!;
    const from = after.get(plan.streamId)!;
    for (const list of [st.pending, st.held]) {
      for (const r of list.records()) if (r.time > from && !byKey.has(`${plan.name}:${r.time}`)) byKey.set(`${plan.name}:${r.time}`, inputOfRecord(plan, r));
    }
    for (let j = 0; j < st.ringN; j++) {
      const t = st.ring[j]!;
      if (t > from && !byKey.has(`${plan.name}:${t}`)) return undefined;
    }
  }
  const at = (r: EventInput) => Number(STREAMS.get(r.type)!.latAt >= 0);
  return [...byKey.values()].sort((a, b) => a.time - b.time || at(a) - at(b));
}

export interface Correction {
  from: Checkpoint;
  replayed: Replayed;
  diff: Diff;
  /** Fields of the corrections hash to drop: the checkpoints after `from` and the ledger of its epochs on. */
  drop: string[];
  /** Fields to write: the replay's checkpoints and the ledger of the replayed epochs. */
  write: Array<[string, string | Buffer]>;
}

/** A correction from `from` over `records`: the replay, what it tells, and what the corrections hash becomes. */
export function correction(vehicleno: string, live: VehicleState, kept: VehicleCorrections, from: Checkpoint, records: readonly EventInput[], nowMs: number, opts: DeriveOptions): Correction {
  const replayed = replay(vehicleno, from, records, nowMs, opts, live);
  const before = kept.told.filter((t) => t.epoch >= from.epoch);
  const diff = diffTold(vehicleno, before, replayed.outputs);
  // What stays of the kept checkpoints, and the replay's; the horizon then drops the oldest, as a commit would.
  const checkpoints = [...kept.checkpoints.filter((c) => c.epoch <= from.epoch), ...replayed.checkpoints];
  const newest = checkpoints.reduce((m, c) => Math.max(m, c.cut), -Infinity);
  const keepFrom = replayed.checkpoints.length > 0 ? prunedBefore(checkpoints, newest, opts.horizonMs) : -1;
  const drop = new Set([
    ...kept.checkpoints.filter((c) => c.epoch > from.epoch || c.epoch < keepFrom).map((c) => c.field),
    ...[...kept.toldFields].filter(([epoch]) => epoch >= from.epoch || epoch < keepFrom).map(([, field]) => field),
    // Asked for, and done by this replay (its checkpoint is before the earliest, correctVehicle).
    ...kept.requested,
  ]);
  const write: Array<[string, string | Buffer]> = [
    ...replayed.checkpoints.filter((c) => c.epoch >= keepFrom).map((c): [string, Buffer] => [checkpointField(c), packCheckpoint(c.committed)]),
    ...toldFields(diff.told.filter((t) => t.epoch >= keepFrom)),
  ];
  // A field both dropped and written (the same epoch's ledger entry again) is written.
  for (const [f] of write) drop.delete(f);
  return { from, replayed, diff, drop: [...drop], write };
}

export { replayFrom };
