import { z } from 'zod';

/**
 * The telematics service's `{status, data, err, msg}` envelope (spec §2.1): the answers of its six
 * operations, and the answers our receiver gives pushes, in the same style. One schema for every
 * side that writes or reads it: the receiver, the emulator, the client and the push feed.
 */

export const STATUSES = ['SUCCESS', 'FAILURE'] as const;

export const envelopeSchema = z.object({
  status: z.enum(STATUSES),
  data: z.unknown(),
  err: z.string(),
  msg: z.string(),
});

export interface SuccessEnvelope<T> {
  status: 'SUCCESS';
  data: T;
  err: string;
  msg: string;
}
/** FAILURE carries `data: null` (the spec does not show `data` on failure). */
export interface FailureEnvelope {
  status: 'FAILURE';
  data: null;
  err: string;
  msg: string;
}
export type Envelope<T> = SuccessEnvelope<T> | FailureEnvelope;

export const success = <T>(data: T, msg: string): SuccessEnvelope<T> => ({ status: 'SUCCESS', data, err: '', msg });
export const failure = (err: string, msg: string): FailureEnvelope => ({ status: 'FAILURE', data: null, err, msg });

/** A record of a bulk push the receiver refused, by its place in `bulkData`; `rule` when it was well-formed but implausible. */
export interface RejectedRecord {
  index: number;
  error: string;
  rule?: string;
}

/** A field of an accepted record that was not stored because its value cannot be true. */
export interface RefusedFieldAnswer {
  index: number;
  field: string;
  value: number;
  rule: string;
  error: string;
}

/**
 * `data` of the receiver's 202: what a sender counts as acknowledged (every record not in `rejected`);
 * `refusedFields`, present only when some were, lists fields of acknowledged records not stored.
 */
export interface PushAccepted {
  deliveryId: string;
  accepted: number;
  rejected: RejectedRecord[];
  refusedFields?: RefusedFieldAnswer[];
}

/** The receiver's 202 as a sender reads it. */
export const pushAcceptedSchema = z.object({
  status: z.literal('SUCCESS'),
  data: z.object({
    deliveryId: z.string().optional(),
    accepted: z.number().int().nonnegative(),
    rejected: z.array(z.object({ index: z.number().int().nonnegative(), error: z.string(), rule: z.string().optional() })),
    refusedFields: z.array(z.object({ index: z.number().int().nonnegative(), field: z.string(), value: z.number(), rule: z.string(), error: z.string() })).optional(),
  }),
});

/** Error codes of the receiver's answers a sender can branch on; `msg` says what was wrong in words. */
export type FailureCode =
  | 'unauthorized'
  | 'invalid_json'
  | 'invalid_shape'
  | 'invalid_record'
  | 'implausible_record'
  | 'bad_encoding'
  | 'invalid_text'
  | 'too_many_records'
  | 'invalid_idempotency_key'
  | 'invalid_signature'
  | 'rate_limited'
  | 'quarantine_share_full'
  | 'vehicle_not_admitted'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unavailable'
  | 'overloaded'
  | 'not_found'
  | 'internal';
