import type { Sender } from './senders.js';

/**
 * What the push middlewares hand on: the delivery id every answer carries, and the sender a token
 * named (unset until a signature names it, for a signing sender that sent no token).
 */
export type PushEnv = { Variables: { deliveryId: string; sender?: Sender } };
