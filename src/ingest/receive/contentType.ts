import { PushRefused } from './answer.js';
import type { PushCheck } from './delivery.js';

const JSON_TYPES = new Set(['application/json', 'text/json', 'text/plain']);

/**
 * Senders that set no type, or a JSON-ish one, are accepted; a form or binary type is not, nor a
 * charset other than UTF-8 (JSON is UTF-8; another declared charset means bytes we would misread).
 */
export function checkContentType(header: string | null): string | undefined {
  if (!header) return undefined;
  const [typePart, ...params] = header.split(';');
  const type = typePart!.trim().toLowerCase();
  if (!JSON_TYPES.has(type) && !type.endsWith('+json')) return `Content-Type ${type} is not accepted; send application/json`;
  for (const p of params) {
    const [name, value] = p.split('=', 2).map((x) => x.trim().toLowerCase());
    if (name !== 'charset') continue;
    const charset = value?.replace(/^"(.*)"$/, '$1');
    if (charset !== 'utf-8' && charset !== 'utf8') return `charset ${charset ?? ''} is not accepted; send JSON encoded as UTF-8`;
  }
  return undefined;
}

export function acceptJson(): PushCheck {
  return (c) => {
    const bad = checkContentType(c.req.header('content-type') ?? null);
    if (bad) throw new PushRefused(415, 'unsupported_media_type', bad);
  };
}
