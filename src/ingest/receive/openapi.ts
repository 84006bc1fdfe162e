import { TYPE_NAMES } from '../../telemetry/fields.js';
import { bulkPushSchema, pushRecordSchema } from '../../telemetry/schema.js';

/**
 * The push API as OpenAPI 3.1: both shapes, every answer and header. Served at `/openapi.json` and
 * checked in as `docs/openapi.json` (a test keeps the two the same, and checks real answers against it).
 */
const envelope = (dataSchema: object) => ({
  type: 'object',
  required: ['status', 'data', 'err', 'msg'],
  properties: { status: { enum: ['SUCCESS', 'FAILURE'] }, data: dataSchema, err: { type: 'string' }, msg: { type: 'string' } },
});
const failureBody = { $ref: '#/components/schemas/Failure' };
const deliveryId = { $ref: '#/components/headers/X-Delivery-Id' };
const retryAfter = { $ref: '#/components/headers/Retry-After' };
const failure = (description: string, codes: string[], headers: Record<string, object> = {}) => ({
  description: `${description} (err: ${codes.join(', ')})`,
  headers: { 'X-Delivery-Id': deliveryId, ...headers },
  content: { 'application/json': { schema: failureBody } },
});

const answers = {
  '202': {
    description: 'Stored: the valid records are queued (Redis confirmed), the invalid ones quarantined and listed in `rejected`',
    headers: { 'X-Delivery-Id': deliveryId, 'Idempotent-Replayed': { description: '`true` when this is the first answer to a delivery with the same idempotency key, given again', schema: { type: 'string' } } },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Accepted' } } },
  },
  '400': failure('The push can never be stored as sent: do not retry it unchanged', ['invalid_json', 'invalid_shape', 'invalid_record', 'implausible_record', 'invalid_text', 'bad_encoding', 'invalid_idempotency_key']),
  '401': failure('No known token, or a signing sender whose signature is missing or wrong', ['unauthorized', 'invalid_signature']),
  '403': failure('A realtime record of a new vehicle the service does not admit (MAX_VEHICLES reached; the vehicle neither known nor listed by the upstream): in a bulk, such records are listed in `rejected`', ['vehicle_not_admitted']),
  '408': { description: 'The request did not arrive within HTTP_REQUEST_TIMEOUT (the connection is closed)' },
  '413': failure('Too large: the body (BODY_LIMIT), its record count (MAX_RECORDS_PER_PUSH), or more than the rate limit can admit; split it', ['payload_too_large', 'too_many_records']),
  '415': failure('A Content-Type other than JSON, a charset other than UTF-8, or a Content-Encoding other than gzip/deflate', ['unsupported_media_type']),
  '429': failure(
    'Over the queue bound or the sender’s rate limit; or the push has records that cannot be stored and the sender’s share of the quarantine is full (nothing of the push was stored): retry after Retry-After',
    ['overloaded', 'rate_limited', 'quarantine_share_full'],
    { 'Retry-After': retryAfter },
  ),
  '503': failure('Not stored (Redis down, slow or full): retry after Retry-After', ['unavailable', 'overloaded'], { 'Retry-After': retryAfter }),
};

/** The record's schema as a component: its own references (`#/$defs/…`) made to point inside the component. */
const pushRecordComponent = JSON.parse(
  JSON.stringify({ ...pushRecordSchema, $schema: undefined, $id: undefined }).replaceAll('"#/$defs/', '"#/components/schemas/PushRecord/$defs/'),
) as Record<string, unknown>;

const security = [{ bearer: [] }, { apiKey: [] }, { queryToken: [] }, { webhookSignature: [] }];
const idempotencyHeaders = [
  { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 }, description: 'names the delivery: a retry within IDEMPOTENCY_TTL gets the first answer and stores nothing again' },
  { name: 'webhook-id', in: 'header', required: false, schema: { type: 'string' }, description: 'Standard Webhooks message id; also an idempotency key' },
  { name: 'webhook-timestamp', in: 'header', required: false, schema: { type: 'string', pattern: '^\\d+$' }, description: 'seconds since the epoch, within SIGNATURE_TOLERANCE of now' },
  { name: 'webhook-signature', in: 'header', required: false, schema: { type: 'string' }, description: '`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, several separated by spaces' },
  { name: 'Content-Encoding', in: 'header', required: false, schema: { enum: ['gzip', 'x-gzip', 'deflate', 'identity'] } },
];
const operation = (summary: string, schema: object) => ({
  summary,
  security,
  parameters: idempotencyHeaders,
  requestBody: { required: true, content: { 'application/json': { schema } } },
  responses: answers,
});

export const OPENAPI = {
  openapi: '3.1.0',
  info: {
    title: 'telematics-ingest push API',
    version: '1',
    description: `Receives ${TYPE_NAMES.join(' and ')} records pushed by a vehicle telematics service, in bulk or one at a time. A 202 is sent only after Redis confirmed the records are queued.`,
  },
  paths: {
    '/push': { post: operation('A push of either shape: bulk when the body has bulkData, else one record', { oneOf: [{ $ref: '#/components/schemas/BulkPush' }, { $ref: '#/components/schemas/PushRecord' }] }) },
    '/push/bulk': { post: operation('A bulk push', { $ref: '#/components/schemas/BulkPush' }) },
    '/push/realtime': { post: operation('One record', { $ref: '#/components/schemas/PushRecord' }) },
  },
  components: {
    schemas: {
      PushRecord: pushRecordComponent,
      BulkPush: { ...bulkPushSchema, $schema: undefined, $id: undefined, properties: { bulkData: { type: 'array', items: { $ref: '#/components/schemas/PushRecord' } } } },
      Accepted: envelope({
        type: 'object',
        required: ['deliveryId', 'accepted', 'rejected'],
        properties: {
          deliveryId: { type: 'string' },
          accepted: { type: 'integer', minimum: 0 },
          rejected: {
            type: 'array',
            description: 'every rejected record by its index in bulkData; the first 100 with their reason, the rest with "invalid" (their reasons are in the quarantine)',
            items: {
              type: 'object',
              required: ['index', 'error'],
              properties: { index: { type: 'integer', minimum: 0 }, error: { type: 'string' }, rule: { type: 'string', description: 'the plausibility rule, when the record was well-formed but cannot be true (time_future, time_past, …)' } },
            },
          },
          refusedFields: {
            type: 'array',
            description: 'present when fields of accepted records were not stored because their values cannot be true (docs/sending.md, Data quality); the first 100 records\' fields',
            items: {
              type: 'object',
              required: ['index', 'field', 'value', 'rule', 'error'],
              properties: { index: { type: 'integer', minimum: 0 }, field: { type: 'string' }, value: { type: 'number' }, rule: { type: 'string' }, error: { type: 'string' } },
            },
          },
        },
      }),
      Failure: envelope({ type: 'null' }),
    },
    headers: {
      'X-Delivery-Id': { description: 'the id under which this delivery’s rejected records are quarantined', schema: { type: 'string' } },
      'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } },
    },
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer' },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
      queryToken: { type: 'apiKey', in: 'query', name: 'token' },
      webhookSignature: { type: 'apiKey', in: 'header', name: 'webhook-signature', description: 'Standard Webhooks signature, for senders with signing secrets' },
    },
  },
};

/** The description as served and checked in. */
export const openApiJson = (): string => `${JSON.stringify(OPENAPI, null, 2)}\n`;
