/**
 * When an upstream token expires, read from the token itself where it carries it. The provider says
 * its tokens expire (after about 15 days) but not how a client learns when; a token that is a JWT
 * carries it as `exp` (RFC 7519 §4.1.4, seconds since the epoch). Any other token's expiry is unknown,
 * and said so: nothing is guessed from when it was configured.
 *
 * Only the payload's `exp` is read; the signature is not checked (the client holds no key, and the
 * service is the judge of its own tokens). Nothing of the token is ever returned or put in a message.
 */

export type TokenExpiry =
  | { known: true; /** epoch ms */ expiresAt: number }
  | { known: false; /** why, in words that hold no part of the token */ reason: string };

const BASE64URL = /^[A-Za-z0-9_-]+$/;

export function tokenExpiry(token: string): TokenExpiry {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p, i) => (i === 2 ? p === '' || BASE64URL.test(p) : BASE64URL.test(p)))) {
    return { known: false, reason: 'the token is not a JWT (three base64url parts), so it carries no expiry' };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    return { known: false, reason: 'the token looks like a JWT but its payload is not JSON' };
  }
  if (typeof payload !== 'object' || payload === null || !('exp' in payload)) {
    return { known: false, reason: 'the token is a JWT without exp' };
  }
  const exp = (payload as { exp: unknown }).exp;
  if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= 0) {
    return { known: false, reason: 'the token is a JWT whose exp is not a positive number of seconds' };
  }
  return { known: true, expiresAt: Math.round(exp * 1000) };
}
