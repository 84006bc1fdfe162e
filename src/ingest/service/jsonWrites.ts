import type { MiddlewareHandler } from 'hono';
import { failure } from '../../telemetry/envelope.js';

const SAFE = /^(GET|HEAD|OPTIONS)$/;

/**
 * Writes with a body take JSON alone: 415 for any other type (a form's, or the `text/plain` a page may
 * send without asking the browser first), so that no body a page can send unasked is ever read.
 */
export function jsonWrites(): MiddlewareHandler {
  return async (c, next) => {
    if (SAFE.test(c.req.method)) return next();
    const type = c.req.header('content-type');
    const hasBody = type !== undefined || Number(c.req.header('content-length') ?? 0) > 0 || c.req.header('transfer-encoding') !== undefined;
    if (!hasBody) return next();
    const media = (type ?? '').split(';', 1)[0]!.trim().toLowerCase();
    if (media === 'application/json' || media.endsWith('+json')) return next();
    return c.json(failure('unsupported_media_type', `Content-Type ${JSON.stringify(media || '(none)')} is not accepted here: send application/json`), 415);
  };
}
