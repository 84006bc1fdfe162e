import { flush, holdAgain, ingest, replayAfter, type Derived, type VehicleState } from '../derive.js';
import { SOC_STREAM, STREAMS, type EventInput } from '../inputs.js';
import type { DeriveOptions } from '../detectors/context.js';
import { outputsOf, type OutboxEntry } from '../outbox.js';
import { restore, writeCheckpoint } from '../wire.js';
import { correctionsBegun } from './state.js';

/** A kept checkpoint (README.md beside this file): the epoch it begins, its cut, its committed part. */
export interface Checkpoint {
  epoch: number;
  cut: number;
  committed: Buffer;
}

/** Records a replay hands derivation at once: a few thousand, so no stream's buffer holds more than maxPending. */
const CHUNK = 2_000;

export interface Replayed {
  /** The vehicle's state after every record: what the live state becomes. */
  state: VehicleState;
  /** What it derived, each with the epoch it was derived in. */
  outputs: Array<{ entry: OutboxEntry; epoch: number }>;
  /** The checkpoints it took (after `from`'s), oldest first. */
  checkpoints: Checkpoint[];
}

/** Where each stream's records begin for a replay from `from`: after its watermark, or for a waiting stream after what its waiting detectors took. */
export function replayFrom(from: Checkpoint, opts: DeriveOptions): Map<number, number> {
  return replayAfter(stateOf(from, opts));
}

function stateOf(from: Checkpoint, opts: DeriveOptions): VehicleState {
  const s = restore(from.committed, []);
  if (!correctionsBegun(s.late)) {
    // Epoch 0 of a state whose corrections began afresh (derive.ts `begin`): as that call began them.
    s.late.firstCut = from.cut;
    s.late.bucket = Math.floor(from.cut / opts.checkpointIntervalMs);
    s.late.chargingThrough = s.streams[SOC_STREAM]!.watermark;
  }
  s.late.epoch = from.epoch;
  return s;
}

/**
 * The vehicle's derivation again from checkpoint `from`, over `records` (every record of the vehicle after
 * `replayFrom(from)`, each stream's, in time order; at one instant, types without a position first, as
 * derivation commits them): what in-order delivery of the same records derives. Pure.
 *
 * What wall time did to the live state `live` is done again at its end: each stream keeps the live one's
 * arrivals, and what they let go (a stream fallen idle commits all it holds; one silent for
 * EVENTS_MAX_SKEW stops the other waiting for it) goes, as the live state's sweep would let it now.
 *
 * A correction the replay itself would ask for from a time after the checkpoint is dropped: the replay is
 * that correction, and the same records would derive the same again.
 */
export function replay(vehicleno: string, from: Checkpoint, records: readonly EventInput[], nowMs: number, opts: DeriveOptions, live: VehicleState): Replayed {
  const s = stateOf(from, opts);
  const carried = s.late.correctFrom;
  const fresh: EventInput[] = [];
  for (const input of records) {
    const plan = STREAMS.get(input.type);
    if (plan === undefined) continue;
    // Taken by the stream's other detectors before the checkpoint, not yet by those that wait for the track: held again.
    if (input.time > s.streams[plan.streamId]!.watermark) fresh.push(input);
    else holdAgain(s, input, opts);
  }
  const out: Replayed = { state: s, outputs: [], checkpoints: [] };
  const took = (d: Derived) => {
    for (const entry of outputsOf(d)) out.outputs.push({ entry, epoch: d.epoch });
    if (d.checkpoint) out.checkpoints.push({ ...d.checkpoint, committed: writeCheckpoint(s) });
  };
  for (let i = 0; i < fresh.length || i === 0; i += CHUNK) took(ingest(vehicleno, s, fresh.slice(i, i + CHUNK), nowMs, opts));
  for (const plan of STREAMS.values()) {
    const [mine, theirs] = [s.streams[plan.streamId]!, live.streams[plan.streamId]!];
    mine.lastArrivalMs = theirs.lastArrivalMs;
    mine.newestArrivalMs = theirs.newestArrivalMs;
  }
  took(flush(vehicleno, s, nowMs, opts));
  if (s.late.correctFrom > from.cut) s.late.correctFrom = carried;
  return out;
}
