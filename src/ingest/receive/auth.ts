import { throttleOf } from '../../log/throttle.js';
import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import type { Logger } from '../../log/index.js';
import { PushRefused } from './answer.js';
import type { PushCheck } from './delivery.js';
import { tokenDigest, type Sender } from '../../config/senders.js';

/**
 * Push authentication. The spec leaves it open; senders differ in what they can set, so a
 * token is taken from `Authorization: Bearer`, `X-Api-Key` or `?token=`, and names its sender.
 * Several tokens may be valid at once so they can be rotated without downtime. A sender that signs
 * (Standard Webhooks) may send no token: its signature, checked on the body, says who it is.
 */
export class SenderAuth {
  private readonly tokens: Array<{ digest: Buffer; sender: Sender }>;
  /** Senders with signing secrets: one of them must have signed a push that came without a token. */
  readonly signers: readonly Sender[];

  /**
   * Tokens already found valid, as presented: a sender's next push skips the hash. It holds at most the
   * configured tokens (an unknown token is never kept); a lookup compares full (seeded) string hashes
   * before any byte, so it tells nothing a 401 or 202 does not.
   */
  private readonly known = new Map<string, Sender>();

  constructor(readonly senders: readonly Sender[]) {
    this.tokens = senders.flatMap((sender) => sender.tokenDigests.map((digest) => ({ digest, sender })));
    this.signers = senders.filter((s) => s.signingKeys.length > 0);
  }

  /**
   * The sender whose token `presented` is. Hashing first makes every comparison the same length,
   * and every configured token is compared, so neither a token's length nor its place leaks.
   */
  byToken(presented: string): Sender | undefined {
    const seen = this.known.get(presented);
    if (seen !== undefined) return seen;
    const d = tokenDigest(presented);
    let found: Sender | undefined;
    for (const t of this.tokens) if (timingSafeEqual(d, t.digest)) found = t.sender;
    if (found !== undefined) this.known.set(presented, found);
    return found;
  }
}

export function tokenOf(req: Request): string | undefined {
  // A Bearer token wins; any other Authorization scheme (a proxy's Basic) leaves X-Api-Key and ?token= to say.
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.get('authorization')?.trim() ?? '');
  if (bearer) return bearer[1];
  const key = req.headers.get('x-api-key');
  if (key) return key.trim();
  const q = req.url.indexOf('?');
  if (q < 0) return undefined;
  return new URLSearchParams(req.url.slice(q + 1)).get('token') ?? undefined;
}

/**
 * Names the push's sender from its token before anything else is done for it; a push without a
 * known token goes on only when it is signed and some sender signs (the signature is checked on the
 * body). Refusals are logged with the reason and the source address, never with the token.
 */
export function authenticate(auth: SenderAuth, log: Logger): PushCheck {
  return (c, delivery) => {
    const presented = tokenOf(c.req.raw);
    const sender = presented === undefined ? undefined : auth.byToken(presented);
    if (sender) delivery.sender = sender;
    else if (presented !== undefined || !c.req.header('webhook-signature') || auth.signers.length === 0) {
      const why = presented === undefined ? 'no token' : 'unknown token';
      // A stranger may knock as fast as it likes: said once a minute, with how many times.
      const source = remoteAddress(c);
      throttleOf(log, `unauthorized:${why}`).pass((times) => log.info({ why, source, deliveryId: delivery.deliveryId, times }, 'push refused: unauthorized'));
      throw new PushRefused(401, 'unauthorized', 'missing or invalid token: send Authorization: Bearer <token>, X-Api-Key or ?token=');
    }
  };
}

/** The peer's address as @hono/node-server exposes it (`env.incoming`); undefined elsewhere. */
export function remoteAddress(c: Context): string | undefined {
  return (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress;
}
