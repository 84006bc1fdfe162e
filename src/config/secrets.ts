/**
 * What must never reach a log: the settings that hold secrets (the logger redacts them wherever they
 * appear in a logged object; `redactedConfig` shows only their presence), and credentials in a URL.
 */
export const SECRET_SETTINGS = [
  'INFLUX_TOKEN',
  'UPSTREAM_TOKEN',
  'PUSH_TOKENS',
  'PUSH_SIGNING_SECRETS',
  'ADMIN_CREDENTIALS',
  'EVENTS_WEBHOOK_SECRET',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
] as const;

/**
 * `redis://user:pass@host` → `redis://<mark>host`: the URL as it may be logged. Read as a URL parser
 * reads it (the credentials end at the last `@` before the host, so a password holding `@` is cut
 * whole); text that is no URL is cut at its last `@` before any path.
 */
export function withoutCredentials(url: string, mark = ''): string {
  const scheme = url.indexOf('://');
  if (scheme < 0) return url;
  const from = scheme + 3;
  const slash = url.indexOf('/', from);
  const authority = url.slice(from, slash < 0 ? url.length : slash);
  const at = authority.lastIndexOf('@');
  return at < 0 ? url : `${url.slice(0, from)}${mark}${url.slice(from + at + 1)}`;
}

/** Whether a URL carries credentials (`user:pass@`), which a setting may then refuse. */
export const hasCredentials = (url: string): boolean => withoutCredentials(url) !== url;
