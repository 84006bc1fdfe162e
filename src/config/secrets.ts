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

/** `redis://user:pass@host` → `redis://<mark>host`: the URL as it may be logged. */
export const withoutCredentials = (url: string, mark = ''): string => url.replace(/\/\/[^@/]*@/, `//${mark}`);
