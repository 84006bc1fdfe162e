import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs on stdout. The redact list is a second line of defence: code never logs a
 * token on purpose, but a header or config object logged whole must not leak one.
 */
export function createLogger(level: string, name = 'telematics-ingest'): Logger {
  return pino({
    name,
    level,
    // Level names ("warn"), not pino's numbers: what people and log pipelines search for.
    formatters: { level: (label) => ({ level: label }) },
    redact: {
      paths: [
        'token',
        '*.token',
        'headers.authorization',
        'headers["x-api-key"]',
        '*.headers.authorization',
        '*.headers["x-api-key"]',
        'INFLUX_TOKEN',
        'UPSTREAM_TOKEN',
        '*.UPSTREAM_TOKEN',
        'PUSH_TOKENS',
        'PUSH_SIGNING_SECRETS',
        'ADMIN_CREDENTIALS',
        '*.ADMIN_CREDENTIALS',
        '*.PUSH_SIGNING_SECRETS',
        '*.INFLUX_TOKEN',
        '*.PUSH_TOKENS',
      ],
      censor: '[redacted]',
    },
  });
}
