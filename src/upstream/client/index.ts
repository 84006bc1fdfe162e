export * from './client.js';
export * from './errors.js';
export * from './schema.js';
export * from './pacer.js';
export * from './token.js';
export { type TimeUnit } from './time.js';
export { toEpochMs } from '../../telemetry/numbers.js';
