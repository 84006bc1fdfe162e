import { hash } from 'node:crypto';
import { secretKey } from '../telemetry/signature.js';

/**
 * Who may push, by name, so that logs, metrics and the quarantine say which sender did what.
 *
 * `PUSH_TOKENS` entries: `<name>:<token>`, `<name>:sha256:<hex digest of the token>` (the plain token
 * then need not sit in the environment), or a bare `<token>` (named `token-<n>` by its place).
 * `PUSH_SIGNING_SECRETS` entries: `<name>:whsec_…`, several per name while one is rotated. A sender with
 * signing secrets must sign every push (Standard Webhooks); one with secrets and no token
 * authenticates by its signature alone.
 */
export interface Sender {
  name: string;
  /** SHA-256 digests of its tokens. */
  tokenDigests: Buffer[];
  signingKeys: Buffer[];
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const HEX_DIGEST = /^[0-9a-f]{64}$/i;

/** SHA-256 of a presented token, one-shot (Node 20.12+: half the cost of createHash per push). */
export const tokenDigest = (token: string): Buffer => hash('sha256', token, 'buffer');

export function parseSenders(tokens: readonly string[], secrets: readonly string[]): { senders: Sender[]; problems: string[] } {
  const byName = new Map<string, Sender>();
  const problems: string[] = [];
  const senderNamed = (name: string) => {
    let s = byName.get(name);
    if (!s) byName.set(name, (s = { name, tokenDigests: [], signingKeys: [] }));
    return s;
  };
  tokens.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const named = colon > 0 && NAME.test(entry.slice(0, colon));
    const name = named ? entry.slice(0, colon) : `token-${i + 1}`;
    const secret = named ? entry.slice(colon + 1) : entry;
    if (secret.startsWith('sha256:')) {
      const hex = secret.slice('sha256:'.length);
      if (!HEX_DIGEST.test(hex)) problems.push(`PUSH_TOKENS: the sha256 token of ${name} must be 64 hex digits`);
      else senderNamed(name).tokenDigests.push(Buffer.from(hex, 'hex'));
    } else if (secret.length < 16) problems.push(`PUSH_TOKENS: every token must be at least 16 characters long (${name})`);
    else senderNamed(name).tokenDigests.push(tokenDigest(secret));
  });
  for (const entry of secrets) {
    const colon = entry.indexOf(':');
    const name = entry.slice(0, colon);
    if (colon <= 0 || !NAME.test(name)) {
      problems.push('PUSH_SIGNING_SECRETS: write each as <sender name>:whsec_<base64>');
      continue;
    }
    try {
      senderNamed(name).signingKeys.push(secretKey(entry.slice(colon + 1)));
    } catch (err) {
      problems.push(`PUSH_SIGNING_SECRETS: ${name}: ${(err as Error).message}`);
    }
  }
  return { senders: [...byName.values()], problems };
}
