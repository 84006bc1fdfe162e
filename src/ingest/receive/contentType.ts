import type { MiddlewareHandler } from 'hono';
import { PushRefused } from './answer.js';

const JSON_TYPES = new Set(['application/json', 'text/json', 'text/plain']);

/** Senders that set no type, or a JSON-ish one, are accepted; a form or binary type is not. */
export function checkContentType(header: string | null): string | undefined {
  if (!header) return undefined;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  if (JSON_TYPES.has(type) || type.endsWith('+json')) return undefined;
  return `Content-Type ${type} is not accepted; send application/json`;
}

export function acceptJson(): MiddlewareHandler {
  return async (c, next) => {
    const bad = checkContentType(c.req.header('content-type') ?? null);
    if (bad) throw new PushRefused(415, 'unsupported_media_type', bad);
    await next();
  };
}
