import { STREAM_BY_ID, type StreamPlan } from '../inputs.js';
import { heldSetId } from '../wire.js';

/**
 * What the store keeps of a partition in Redis: its keys, as the store takes them (every name is made in
 * `src/ingest/queue/keys.ts`; `../index.ts` hands them over), and a vehicle's record sets. A partition's
 * keys carry its hash tag, so a Redis Cluster keeps them on the queue's master.
 */
export interface PartitionKeys {
  /** Hash: vehicleno → `<version> <committed part>` (`commit.ts`, `stateValuePrefix`). */
  state: string;
  /** Stream of derived outputs (`../outbox.ts`). */
  outbox: string;
  /** Sorted set: vehicles with records still pending, by when they are next swept, less the idle time (`pendingSince`). */
  pending: string;
  /** Sorted set: vehicles with a correction due, by when (`../corrections/`). */
  corrections: string;
  /** Sorted set of one vehicle's pending records of one stream (or, at `HELD` above its id, its held records), by time. */
  records(vehicleno: string, streamId: number): string;
  /** Hash of one vehicle's checkpoints and ledger (`../corrections/`). */
  late(vehicleno: string): string;
}

/**
 * A vehicle's record sets, in the order the scripts list them (their keys, and their part of the
 * arguments): each stream's pending records by stream id, then each waiting stream's held records.
 */
export interface RecordSet {
  plan: StreamPlan;
  /** The set's id: the stream's, or its held records' (`heldSetId`). */
  id: number;
  /** Its records are held for charging (else the stream's pending records). */
  held: boolean;
}
const STREAM_ORDER: readonly StreamPlan[] = [...STREAM_BY_ID.values()].sort((a, b) => a.streamId - b.streamId);
export const RECORD_SETS: readonly RecordSet[] = [
  ...STREAM_ORDER.map((plan) => ({ plan, id: plan.streamId, held: false })),
  ...STREAM_ORDER.filter((p) => p.waits).map((plan) => ({ plan, id: heldSetId(plan.streamId), held: true })),
];

/** A vehicle's record sets' keys, in the order of `RECORD_SETS`. */
export const recordSetKeys = (keys: PartitionKeys, vehicleno: string): string[] => RECORD_SETS.map((set) => keys.records(vehicleno, set.id));
