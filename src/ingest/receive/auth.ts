import { hash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
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
  const auth = req.headers.get('authorization');
  if (auth) {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return m?.[1];
  }
  const key = req.headers.get('x-api-key');
  if (key) return key.trim();
  const q = req.url.indexOf('?');
  if (q < 0) return undefined;
  return new URLSearchParams(req.url.slice(q + 1)).get('token') ?? undefined;
}

/** Refuses a push without a configured token before anything else is done for it. */
export function requireToken(tokens: readonly string[]): MiddlewareHandler {
  const auth = new TokenAuth(tokens);
  return async (c, next) => {
    if (!auth.check(c.req.raw)) {
      throw new PushRefused(401, 'unauthorized', 'missing or invalid token: send Authorization: Bearer <token>, X-Api-Key or ?token=');
    }
    await next();
  };
}
