import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks signatures (standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "<webhook-id>.<webhook-timestamp>.<body>">`, secrets written `whsec_<base64>`. The feed signs with
 * `sign`, the receiver checks with `verify`. Written here rather than taken from the `standardwebhooks`
 * package, whose verify decodes the body to a string first (not the raw bytes) and has a fixed
 * 5-minute tolerance; pushes signed by that package are tested to verify.
 */

const PREFIX = 'whsec_';

/** The key bytes of a `whsec_…` secret (or of a bare base64 one). */
export function secretKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  if (key.length < 16) throw new Error('a signing secret must hold at least 16 bytes of base64 after whsec_');
  return key;
}

function mac(key: Buffer, id: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The `webhook-signature` value for a delivery. */
export function sign(secret: string, id: string, timestampSeconds: number, body: Uint8Array | string): string {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return `v1,${mac(secretKey(secret), id, String(timestampSeconds), bytes).toString('base64')}`;
}

export type Verdict = { ok: true } | { ok: false; reason: string };

/**
 * Whether one of `keys` signed this delivery within `toleranceSeconds` of `nowSeconds`. Every
 * signature given is compared with every key, in constant time per comparison.
 */
export function verify(
  keys: readonly Buffer[],
  headers: { id?: string; timestamp?: string; signature?: string },
  body: Uint8Array,
  toleranceSeconds: number,
  nowSeconds: number,
): Verdict {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'webhook-timestamp must be whole seconds since the epoch' };
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) {
    return { ok: false, reason: `webhook-timestamp is more than ${toleranceSeconds} s from now (a replay, or a clock off)` };
  }
  const given = signature
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  let ok = false;
  for (const key of keys) {
    const expected = mac(key, id, timestamp, body);
    for (const g of given) ok = (g.length === expected.length && timingSafeEqual(g, expected)) || ok;
  }
  return ok ? { ok: true } : { ok: false, reason: 'no v1 signature matches a signing secret of this sender' };
}
