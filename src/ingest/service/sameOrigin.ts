import type { MiddlewareHandler } from 'hono';
import { failure } from '../../telemetry/envelope.js';

const SAFE = /^(GET|HEAD|OPTIONS)$/;

/**
 * Refuses a write another site's page makes the operator's browser send (with its cached Basic
 * credentials): by Fetch Metadata (`Sec-Fetch-Site`: only `same-origin`, or `none`, a request the user
 * made by hand), else, from a browser that sends none, by `Origin` (only this listener's own). A client
 * that is no browser (curl, the CLI) sends neither and is not a page's tool. OWASP's CSRF cheat sheet
 * names both checks.
 */
export function refuseCrossSite(): MiddlewareHandler {
  return async (c, next) => {
    if (SAFE.test(c.req.method)) return next();
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined) {
      if (site === 'same-origin' || site === 'none') return next();
      return c.json(failure('cross_site', `a ${site} request may not change anything here (Sec-Fetch-Site: ${site}); use the CLI or the listener's own pages`), 403);
    }
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== new URL(c.req.url).origin) {
      return c.json(failure('cross_site', `a request from ${origin.slice(0, 200)} may not change anything here; use the CLI or the listener's own pages`), 403);
    }
    return next();
  };
}
