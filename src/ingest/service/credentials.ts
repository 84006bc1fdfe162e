import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { failure } from '../../telemetry/envelope.js';
import type { AdminCredential } from '../../config/adminCredentials.js';

export { parseAdminCredentials, type AdminCredential, type AdminVariables, type Right } from '../../config/adminCredentials.js';

/** Basic auth for the admin listener against ADMIN_CREDENTIALS' named credentials (src/config/adminCredentials.ts: the format, the rights). */

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Compares in time independent of where two texts differ (digests of equal length). */
const same = (a: string, b: string): boolean => timingSafeEqual(digest(a), digest(b));

/** The credential a request's `Authorization: Basic …` names, or undefined. Every credential is compared, so timing says nothing of which matched. */
export function credentialOf(header: string | undefined, credentials: readonly AdminCredential[]): AdminCredential | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  const name = text.slice(0, colon);
  const password = text.slice(colon + 1);
  let found: AdminCredential | undefined;
  for (const c of credentials) {
    const ok = same(c.name, name) && same(c.password, password);
    if (ok && found === undefined) found = c;
  }
  return found;
}


/** Basic auth against the named credentials; the one let in is `c.get('credential')`. */
// Of any env: mounted on apps that do not declare the variable; the commands' routes read it, typed there (AdminVariables).
export function basicAuthOf(credentials: readonly AdminCredential[], realm = 'telematics-ingest admin'): MiddlewareHandler<any> {
  return async (c, next) => {
    const who = credentialOf(c.req.header('authorization'), credentials);
    if (!who) return c.json(failure('unauthorized', 'basic auth: a named admin credential (ADMIN_CREDENTIALS) is needed'), 401, { 'WWW-Authenticate': `Basic realm="${realm}", charset="UTF-8"` });
    c.set('credential', who);
    return next();
  };
}
