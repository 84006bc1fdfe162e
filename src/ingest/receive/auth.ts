import { hash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import type { Logger } from '../../log/index.js';
import { PushRefused } from './answer.js';

/**
 * Push authentication. The spec leaves it open; senders differ in what they can set, so a
 * token is taken from `Authorization: Bearer`, `X-Api-Key` or `?token=`. Several tokens may be
 * valid at once so they can be rotated without downtime.
 */
export class TokenAuth {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  /**
   * Hashing first makes every comparison the same length, and every configured token is
   * compared, so neither a token's length nor its position leaks through timing.
   */
  check(req: Request): boolean {
    const presented = tokenOf(req);
    if (presented === undefined) return false;
    const d = digest(presented);
    let ok = false;
    for (const t of this.digests) ok = timingSafeEqual(d, t) || ok;
    return ok;
  }
}

function digest(s: string): Buffer {
  // One-shot hash (Node 20.12+): half the cost of createHash per push.
  return hash('sha256', s, 'buffer');
}

function tokenOf(req: Request): string | undefined {
  // A Bearer token wins; any other Authorization scheme (a proxy's Basic) leaves X-Api-Key and ?token= to say.
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.get('authorization')?.trim() ?? '');
  if (bearer) return bearer[1];
  const key = req.headers.get('x-api-key');
  if (key) return key.trim();
  const q = req.url.indexOf('?');
  if (q < 0) return undefined;
  return new URLSearchParams(req.url.slice(q + 1)).get('token') ?? undefined;
}

/** Refuses a push without a configured token before anything else is done for it; says so in the log, never with the token. */
export function requireToken(tokens: readonly string[], log: Logger): MiddlewareHandler {
  const auth = new TokenAuth(tokens);
  return async (c, next) => {
    if (!auth.check(c.req.raw)) {
      const why = tokenOf(c.req.raw) === undefined ? 'no token' : 'unknown token';
      log.info({ why, source: remoteAddress(c), deliveryId: c.get('deliveryId') as string | undefined }, 'push refused: unauthorized');
      throw new PushRefused(401, 'unauthorized', 'missing or invalid token: send Authorization: Bearer <token>, X-Api-Key or ?token=');
    }
    await next();
  };
}

/** The peer's address as @hono/node-server exposes it (`env.incoming`); undefined elsewhere. */
function remoteAddress(c: Context): string | undefined {
  return (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress;
}
