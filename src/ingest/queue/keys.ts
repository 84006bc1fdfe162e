/**
 * Every Redis key the service uses, named in this one module (as BullMQ's queue-keys.ts names its
 * own): the push queues and BullMQ's structures under them, the quarantine stream, the fuel
 * sync's queue and watermarks, the workers' announcements of the job formats they read, senders'
 * rate limits and idempotency keys, each vehicle's last seen and position (the fleet), and the
 * vehicle events' derivation state, outbox streams and webhook queue. All derive from QUEUE_NAME, so one Redis can hold several deployments.
 *
 * Redis Cluster runs a Lua script only when all its keys hash to one slot, and every BullMQ command
 * is such a script over one queue's keys; so in cluster mode each queue's name carries a hash tag
 * (`{…}`), which puts all of that queue on one slot, and so on one master. A queue thus cannot use
 * more than one master: QUEUE_PARTITIONS spreads records over several queues, each tagged for its own
 * share of the 16384 slots, so that partitions spread evenly over the masters. The other keys are
 * only ever touched by single-key commands (a stream, a hash, a string, a one-key script), which
 * Redis Cluster runs wherever the key lives, so they need no tag.
 */

import type { Config } from '../../config/index.js';
import { CLUSTER_SLOTS, keySlot } from '../../redis/slots.js';

/** BullMQ's default key prefix: its keys are `bull:<queue>:<kind>`. */
export const BULL_PREFIX = 'bull';

export interface KeyLayout {
  /** QUEUE_PARTITIONS: how many push queues records are spread over, by vehicle. */
  partitions: number;
  /** Whether Redis is a Cluster (REDIS_CLUSTER_NODES), whose multi-key scripts need hash tags. */
  cluster: boolean;
}

export const SINGLE_QUEUE: KeyLayout = { partitions: 1, cluster: false };

export interface RedisKeys {
  /**
   * The BullMQ queues of pushed records, partition i at index i. One partition on one Redis keeps
   * today's name, QUEUE_NAME itself, so an upgrade reads the queue the previous release wrote.
   */
  partitions: readonly string[];
  /** Stream of what did not land: records the receiver refused, points InfluxDB refused. */
  quarantine: string;
  /**
   * Hash: bytes the quarantine holds per sender (`sender` of its entries; empty for the service's own
   * stages), each sender's share counted against QUARANTINE_MAX_BYTES (queue/quarantine.ts). Its name
   * is the stream's in a hash tag, so one script updates both on a Redis Cluster.
   */
  quarantineBytes: string;
  /** String: the key receivers seal their jobs with and workers check them by (queue/seal.ts). */
  jobSeal: string;
  /** Set: the plates the upstream lists (`listvehicles`, kept by the fuel sync), admitted whatever MAX_VEHICLES (fleet/admission.ts). */
  listedVehicles: string;
  /** BullMQ's list of a queue's jobs being processed now (`bull:<queue>:active`): a partition's jobs are derived in their order (worker/batches.ts). */
  activeJobs(queue: string): string;
  /** BullMQ queue whose job scheduler runs the fuel sync on one replica at a time. */
  fuelQueue: string;
  /** Hash `<vehicleno>|<unit>` → time (ms) of the newest fuel reading stored. */
  fuelWatermarks: string;
  /** Sorted set: vehicleno → when (ms) the fuel sync last read its history up to (sync/plan.ts): who is due, longest unsynced first. */
  fuelSynced: string;
  /**
   * Hash: vehicleno → `getfuelhistory` calls made for it on one UTC day (`YYYY-MM-DD`), against the
   * provider's per-vehicle daily budget (UPSTREAM_HISTORY_CALLS_PER_DAY); expires two days after its day began.
   */
  fuelHistoryCalls(day: string): string;
  /**
   * Hash: the upstream account's pacing, shared by every process calling with its token (sync/pacer.ts,
   * upstream-pace-1.lua): the moments given out and any Retry-After hold; expires a minute after them.
   */
  upstreamPacing: string;
  /** BullMQ queue whose job scheduler runs the fleet status job (fleet/changes.ts) on one replica at a time. */
  fleetQueue: string;
  /** The first answer to a delivery with an idempotency key, by the key's digest (a string with a TTL). */
  idempotency(digest: string): string;
  /** A sender's rate-limit buckets (a hash with a TTL). */
  rateLimit(sender: string): string;
  /** Set: the field names a measurement's points carry beyond the schema (plausibility/fieldNames.ts, EXTRA_FIELDS_MAX). */
  extraFieldNames(measurement: string): string;
  /**
   * Hash: the fleet's geofences (geofences/registry.ts): `g:<id>` → a geofence's JSON (every version,
   * removed ones with their end), `next` the last id given, `version` bumped by every change. One key,
   * so a change (a MULTI on it) is whole on a Redis Cluster too.
   */
  geofences: string;
  /** Hash: vehicleno → its speed limits over time (speedLimits/registry.ts), `version` bumped by every change. */
  speedLimits: string;
  /**
   * Hash: worker process id → the job formats it reads, until when (queue/formats.ts). One key for the
   * deployment, whatever its partitions: receivers read it whole (HGETALL), never by SCAN.
   */
  readers: string;
  /**
   * Hash: vehicleno → its event derivation state (its streams, and each detector's slice: events/wire.ts),
   * beside partition i's queue: in cluster mode it carries the partition's hash tag, so one script
   * writes the states and appends to the outbox on one slot.
   */
  vehicleState(partition: number): string;
  /** Stream of partition i's derived events, points and deliveries (the outbox), on its queue's slot. */
  eventsOutbox(partition: number): string;
  /** Sorted set: vehicles of partition i with records still pending derivation, by the wall time they last sent (the window's sweep reads it). */
  vehiclesPending(partition: number): string;
  /**
   * Sorted set: one vehicle's records of one stream (a record type, by its frozen stream id) pending
   * derivation, by time, beside its partition (the partition's hash tag comes first in the name, so a
   * plate's own braces do not move the key's slot).
   */
  vehicleRecords(partition: number, vehicleno: string, streamId: number): string;
  /** Sorted set: vehicles of partition i with a correction due (events/corrections/), by the wall time it is due. */
  eventsCorrections(partition: number): string;
  /**
   * Hash: one vehicle's corrections (events/corrections/): its checkpoints (`c<epoch>:<cut>` → the state's
   * committed part) and what was told (`t<epoch>:<id>` → the ledger's entry), beside its partition.
   */
  vehicleCorrections(partition: number, vehicleno: string): string;
  /** BullMQ queue of event webhook deliveries (events/webhook.ts), a job per event. */
  eventsWebhookQueue: string;
  /** Partition i's fleet state (fleet/state.ts), beside its queue. */
  fleet(partition: number): FleetKeys;
  /** The command ledger (commands/ledger.ts), its keys on one slot. */
  commands: CommandKeys;
}

/**
 * The command ledger's keys (commands/ledger.ts; layout and version in src/formats/README.md "Command
 * ledger"): all in one hash tag, `{<queue>:commands}`, so that its scripts run on a Redis Cluster too;
 * `v1` in their names, so that a later layout is new keys beside these, which an older release ignores.
 */
export interface CommandKeys {
  /** Hash: command id → the command's JSON (format v1), every state it went through. */
  entries: string;
  /** Hash: vehicleno → the id of its one command in flight (not yet ended). */
  live: string;
  /** Hash: idempotency key → `<request digest>\n<command id>`. */
  idempotency: string;
  /** Sorted set: command id by the time it was asked (listing, and the bound COMMANDS_KEEP). */
  order: string;
  /** Hash: vehicleno → its immobilisations of a stopping type: the one it is under and its last ended ones (commands/immobilisations.ts). */
  immobilised: string;
  /** Stream: each state change (`id`, `state`, `at`) until told (InfluxDB `commands`, the webhook, the counter); consumer group `tell`. */
  changes: string;
}

/** A partition's fleet state: each vehicle's last seen and position (fleet/state.ts). */
export interface FleetKeys {
  /** Sorted set: vehicleno → newest record time (ms). */
  seen: string;
  /** Hash: vehicleno → `time,lat,lng` of the newest position. */
  positions: string;
  /** Hash: vehicleno → time (ms) of the record that ended its latest silence (fleet/state.ts). */
  resumed: string;
  /** Set of the vehicles last written to InfluxDB as silent for `after` (a SILENT_AFTER label). */
  silent(after: string): string;
  /**
   * Hash: vehicleno → the `last_seen` last written for it as silent for `after`, so that a silent vehicle
   * whose late records move its last seen is written again (fleet/changes.ts). Absent for vehicles an
   * older release wrote silent: they are written once more.
   */
  silentLastSeen(after: string): string;
  /** Hash: vehicleno → its latest values (commands/latest.ts): each field's newest with its time, when last active, charging, discharging. */
  latest: string;
}

/** The fleet keys beside a partition's queue: `<partition queue>:fleet:…`, which keeps the queue's hash tag. */
export function fleetKeys(partitionQueue: string): FleetKeys {
  const base = `${partitionQueue}:fleet`;
  return {
    seen: `${base}:seen`,
    positions: `${base}:positions`,
    resumed: `${base}:resumed`,
    silent: (after) => `${base}:silent:${after}`,
    silentLastSeen: (after) => `${base}:silent:${after}:last-seen`,
    latest: `${base}:latest`,
  };
}

export function redisKeys(queueName: string, layout: KeyLayout = SINGLE_QUEUE): RedisKeys {
  const tagged = layout.cluster || layout.partitions > 1;
  const partitions = tagged
    ? Array.from({ length: layout.partitions }, (_, i) => `${queueName}{${partitionTag(i, layout.partitions)}}`)
    : [queueName];
  return {
    partitions,
    quarantine: `${queueName}:quarantine`,
    quarantineBytes: `{${queueName}:quarantine}:bytes`,
    jobSeal: `${queueName}:jobs:seal`,
    listedVehicles: `${queueName}:vehicles:listed`,
    activeJobs: (queue) => `${BULL_PREFIX}:${queue}:active`,
    fuelQueue: layout.cluster ? `{${queueName}-fuel}` : `${queueName}-fuel`,
    fuelWatermarks: `${queueName}:fuel:watermarks`,
    fuelSynced: `${queueName}:fuel:synced`,
    fuelHistoryCalls: (day) => `${queueName}:fuel:history-calls:${day}`,
    upstreamPacing: `${queueName}:upstream:pacing`,
    fleetQueue: layout.cluster ? `{${queueName}-fleet}` : `${queueName}-fleet`,
    idempotency: (digest) => `${queueName}:idem:${digest}`,
    rateLimit: (sender) => `${queueName}:rate:${sender}`,
    extraFieldNames: (measurement) => `${queueName}:fields:extra:${measurement}`,
    geofences: `${queueName}:geofences`,
    speedLimits: `${queueName}:speed-limits`,
    readers: `${queueName}:readers`,
    vehicleState: (i) => `${partitionQueue(partitions, i)}:events:v3:state`,
    eventsOutbox: (i) => `${partitionQueue(partitions, i)}:events:outbox`,
    vehiclesPending: (i) => `${partitionQueue(partitions, i)}:events:pending`,
    vehicleRecords: (i, vehicleno, streamId) => `${partitionQueue(partitions, i)}:events:v3:records:${streamId}:${vehicleno}`,
    eventsCorrections: (i) => `${partitionQueue(partitions, i)}:events:corrections`,
    vehicleCorrections: (i, vehicleno) => `${partitionQueue(partitions, i)}:events:v3:late:${vehicleno}`,
    eventsWebhookQueue: layout.cluster ? `{${queueName}-events-webhook}` : `${queueName}-events-webhook`,
    fleet: (i) => fleetKeys(partitionQueue(partitions, i)),
    commands: commandKeys(queueName),
  };
}

/** The command ledger's keys of a deployment. */
export function commandKeys(queueName: string): CommandKeys {
  const base = `{${queueName}:commands}:v1`;
  return { entries: `${base}:entries`, live: `${base}:live`, idempotency: `${base}:idem`, order: `${base}:order`, immobilised: `${base}:immobilised`, changes: `${base}:changes` };
}

/** Partition i's queue name; a partition beyond the layout is a bug, not a key to invent. */
function partitionQueue(partitions: readonly string[], i: number): string {
  const q = partitions[i];
  if (q === undefined) throw new RangeError(`partition ${i} is not below the ${partitions.length} partition(s)`);
  return q;
}

/** A BullMQ structure of `queue`: `wait` (a list of waiting job ids), `failed`, or a job's hash by its id. */
export function bullKey(queue: string, kind: string): string {
  return `${BULL_PREFIX}:${queue}:${kind}`;
}

/**
 * The partition of a vehicle's records: FNV-1a (32 bits) of its plate's UTF-16 code units, modulo
 * the partition count. A vehicle stays on one partition, so its points are written in order by one
 * queue. Fixed forever: a change would split a vehicle's backlog over two partitions.
 */
export function partitionOf(vehicleno: string, partitions: number): number {
  if (partitions === 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < vehicleno.length; i++) {
    h ^= vehicleno.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % partitions;
}

/**
 * The hash tag of partition i of n: `p<i>`, or `p<i>.<k>` for the smallest k whose slot lies in the
 * middle half of the i-th of n equal ranges of the slots. A cluster made by `redis-cli --cluster
 * create` gives each master an equal run of slots, so partitions spread over masters as evenly as n
 * allows. The middle half keeps a partition clear of the edges of a master's run, which rounding moves.
 */
export function partitionTag(i: number, n: number): string {
  const lo = (i * CLUSTER_SLOTS) / n;
  const width = CLUSTER_SLOTS / n;
  const [from, to] = width >= 4 ? [lo + width / 4, lo + (3 * width) / 4] : [lo, lo + width];
  for (let k = 0; ; k++) {
    const tag = k === 0 ? `p${i}` : `p${i}.${k}`;
    const slot = keySlot(tag);
    if (slot >= from && slot < to) return tag;
  }
}

/** The keys of the queue the configuration names. */
export const keysOf = (cfg: Config): RedisKeys => redisKeys(cfg.QUEUE_NAME, { partitions: cfg.QUEUE_PARTITIONS, cluster: cfg.REDIS_CLUSTER_NODES.length > 0 });
