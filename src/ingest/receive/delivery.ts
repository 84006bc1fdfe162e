import type { Context } from 'hono';
import type { Sender } from '../../config/senders.js';

/**
 * One push as the receiver's steps know it: the delivery id every answer carries, and the sender its
 * token named (unset until a signature names it, for a signing sender that sent no token).
 */
export interface Delivery {
  deliveryId: string;
  sender?: Sender;
}

/**
 * A check run before the body is read; it throws PushRefused to refuse the push. Checks are plain
 * synchronous functions run in order by the route's one handler, rather than a chain of Hono
 * middlewares, each of which would cost every push an async layer.
 */
export type PushCheck = (c: Context, delivery: Delivery) => void;
