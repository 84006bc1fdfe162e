import { pino, type Logger } from 'pino';
import { SECRET_SETTINGS } from '../config/secrets.js';

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
        ...SECRET_SETTINGS.flatMap((key) => [key, `*.${key}`]),
      ],
      censor: '[redacted]',
    },
  });
}
