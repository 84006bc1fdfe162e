import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import type { RedisClient } from '../../redis/connect.js';
import { PushRefused } from './answer.js';

/** An answer as it is stored and replayed. */
export interface StoredAnswer {
  status: number;
  body: string;
}

/**
 * Idempotent deliveries. A sender that names a delivery (`Idempotency-Key`, or Standard Webhooks'
 * `webhook-id`) may send it again after an ambiguous failure: within the TTL its records are enqueued
 * at most once (BullMQ deduplication, set in the same script as the enqueue: `Producer.enqueueOnce`),
 * and a retry after the first answer gets that answer again, marked `Idempotent-Replayed: true`.
 * The delivery id is derived from the key, so even a retry racing the first is answered alike.
 */
export interface IdempotencyStore {
  get(digest: string): Promise<StoredAnswer | undefined>;
  put(digest: string, answer: StoredAnswer): Promise<void>;
  readonly ttlMs: number;
}

export class RedisIdempotency implements IdempotencyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keyOf: (digest: string) => string,
    readonly ttlMs: number,
  ) {}

  async get(digest: string): Promise<StoredAnswer | undefined> {
    const v = await this.redis.get(this.keyOf(digest));
    return v === null ? undefined : (JSON.parse(v) as StoredAnswer);
  }

  async put(digest: string, answer: StoredAnswer): Promise<void> {
    await this.redis.set(this.keyOf(digest), JSON.stringify(answer), 'PX', this.ttlMs);
  }
}

const KEY = /^[\x21-\x7e]{1,255}$/;

/** The delivery's idempotency key, scoped to its sender; undefined when it names none. */
export function idempotencyDigest(c: Context, sender: string): string | undefined {
  const key = c.req.header('idempotency-key') ?? c.req.header('webhook-id');
  if (key === undefined) return undefined;
  if (!KEY.test(key)) throw new PushRefused(400, 'invalid_idempotency_key', 'Idempotency-Key (or webhook-id) must be 1 to 255 printable ASCII characters');
  return createHash('sha256').update(`${sender}\0${key}`).digest('hex');
}

/** A UUID-shaped delivery id that is the same for every delivery of one key. */
export function deliveryIdOf(digest: string): string {
  const h = digest.slice(0, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
