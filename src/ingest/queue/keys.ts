/**
 * Every Redis key the service uses, named in this one module (as BullMQ's queue-keys.ts names its
 * own): the push queue and BullMQ's structures under it, the quarantine stream, and the fuel sync's
 * queue and watermarks. All derive from QUEUE_NAME, so one Redis can hold several deployments.
 */

/** BullMQ's default key prefix: its keys are `bull:<queue>:<kind>`. */
export const BULL_PREFIX = 'bull';

export interface RedisKeys {
  /** The BullMQ queue of pushed records. */
  queue: string;
  /** Stream of what did not land: records the receiver refused, points InfluxDB refused. */
  quarantine: string;
  /** BullMQ queue whose job scheduler runs the fuel sync on one replica at a time. */
  fuelQueue: string;
  /** Hash `<vehicleno>|<unit>` → time (ms) of the newest fuel reading stored. */
  fuelWatermarks: string;
  /** The first answer to a delivery with an idempotency key, by the key's digest (a string with a TTL). */
  idempotency(digest: string): string;
  /** A sender's rate-limit buckets (a hash with a TTL). */
  rateLimit(sender: string): string;
}

export function redisKeys(queueName: string): RedisKeys {
  return {
    queue: queueName,
    quarantine: `${queueName}:quarantine`,
    fuelQueue: `${queueName}-fuel`,
    fuelWatermarks: `${queueName}:fuel:watermarks`,
    idempotency: (digest) => `${queueName}:idem:${digest}`,
    rateLimit: (sender) => `${queueName}:rate:${sender}`,
  };
}

/** A BullMQ structure of `queue`: `wait` (a list of waiting job ids), `failed`, or a job's hash by its id. */
export function bullKey(queue: string, kind: string): string {
  return `${BULL_PREFIX}:${queue}:${kind}`;
}
