/** Answers in the telematics service's own `{status, data, err, msg}` envelope style. */

export interface RejectedRecord {
  index: number;
  error: string;
}

export interface PushAccepted {
  deliveryId: string;
  accepted: number;
  rejected: RejectedRecord[];
}

export interface Envelope<T> {
  status: 'SUCCESS' | 'FAILURE';
  data: T | null;
  err: string;
  msg: string;
}

export const success = <T>(data: T, msg: string): Envelope<T> => ({ status: 'SUCCESS', data, err: '', msg });
export const failure = (err: string, msg: string): Envelope<never> => ({ status: 'FAILURE', data: null, err, msg });

/** Error codes a sender can branch on; `msg` says what was wrong in words. */
export type FailureCode =
  | 'unauthorized'
  | 'invalid_json'
  | 'invalid_shape'
  | 'invalid_record'
  | 'bad_encoding'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unavailable'
  | 'overloaded'
  | 'not_found'
  | 'internal';
