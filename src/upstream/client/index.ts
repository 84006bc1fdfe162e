export * from './client.js';
export * from './errors.js';
export * from './schema.js';
export { toEpochMs, type TimeUnit } from './time.js';
