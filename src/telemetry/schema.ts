import { CAN_FIELDS, GPS_FIELDS } from './fields.js';
import { VEHICLENO_MAX } from './record.js';

/**
 * JSON Schema (2020-12) of what a sender pushes: one record, or `{"bulkData": [records]}`. It
 * describes the wire shape for people writing senders; the receiver's own rules (validate/) are
 * stricter in places a schema cannot say (a plate's line-protocol limits, epoch seconds vs ms).
 */
const numberish = {
  oneOf: [{ type: 'number' }, { type: 'string', pattern: '^\\s*[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?\\s*$' }],
  description: 'a number, or a number written as a string ("51.2")',
};
const epochMs = { type: 'integer', minimum: 100_000_000_000, maximum: 9_200_000_000_000, description: 'epoch milliseconds' };

export const pushRecordSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://telematics-ingest.example/schemas/push-record.json',
  title: 'Push record',
  type: 'object',
  required: ['vehicleno', 'type', 'data'],
  properties: {
    vehicleno: { type: 'string', minLength: 1, maxLength: VEHICLENO_MAX, description: 'the vehicle; becomes the InfluxDB tag' },
    type: { enum: ['gps', 'can'] },
    data: { type: 'object' },
  },
  oneOf: [
    {
      properties: {
        type: { const: 'gps' },
        data: {
          type: 'object',
          required: [...GPS_FIELDS, 'time'],
          properties: {
            lat: { type: 'number', minimum: -90, maximum: 90 },
            lng: { type: 'number', minimum: -180, maximum: 180 },
            alti: numberish,
            speed: numberish,
            ignstatus: { oneOf: [numberish, { type: 'boolean' }] },
            time: epochMs,
          },
          additionalProperties: numberish,
        },
      },
    },
    {
      properties: {
        type: { const: 'can' },
        data: {
          type: 'object',
          description: `only the parameters received; the spec names ${CAN_FIELDS.length} (see the README), others are kept when numeric`,
          properties: { time: epochMs },
          additionalProperties: { oneOf: [numberish, { type: 'boolean' }, { type: 'null' }] },
          minProperties: 1,
          maxProperties: 257,
        },
      },
    },
  ],
} as const;

export const bulkPushSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://telematics-ingest.example/schemas/bulk-push.json',
  title: 'Bulk push',
  type: 'object',
  required: ['bulkData'],
  properties: { bulkData: { type: 'array', items: { $ref: 'push-record.json' } } },
} as const;
