/**
 * What the package offers programs, beside its three commands: the typed client of the telematics
 * service and its zod schemas, the emulator and its push feed, and what a sender needs to push to
 * the receiver (the envelope, the push record's JSON Schema, Standard Webhooks signing).
 */
export * from './upstream/client/index.js';
export * from './upstream/emulator/index.js';
export { envelopeSchema, pushAcceptedSchema, type Envelope, type FailureCode, type PushAccepted } from './telemetry/envelope.js';
export { bulkPushSchema, pushRecordSchema } from './telemetry/schema.js';
export { sign as signDelivery, verify as verifyDelivery } from './telemetry/signature.js';
export type { TelemetryRecord } from './telemetry/record.js';
