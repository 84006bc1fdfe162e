import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { failure, success, type FailureCode, type PushAccepted, type RefusedFieldAnswer, type RejectedRecord } from '../../telemetry/envelope.js';

/** Statuses a push can be answered with besides 202. */
export type PushStatus = 400 | 401 | 403 | 408 | 413 | 415 | 429 | 503;

/**
 * A push refused with an envelope answer. Thrown by the checks run before the body is read
 * (`PushCheck`) and by `receivePush`, and answered (`answerRefusal`) by the push route's handler in
 * `app.ts`, which catches both. Hono's HTTPException so that one escaping elsewhere is still an HTTP
 * answer, not a crash: the app's `onError` (`createApp`) answers it the same way.
 */
export class PushRefused extends HTTPException {
  constructor(
    override readonly status: PushStatus,
    readonly code: FailureCode,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(status, { message });
  }
}

/** The answer to a refused push; 429 and 503 tell the sender when to retry. */
export function answerRefusal(c: Context, err: PushRefused, deliveryId: string | undefined): Response {
  if (deliveryId !== undefined) c.header('X-Delivery-Id', deliveryId);
  if (err.retryAfterSeconds !== undefined) c.header('Retry-After', String(err.retryAfterSeconds));
  return c.json(failure(err.code, err.message), err.status);
}

/**
 * The 202. Built with plain-object headers rather than c.header(), which makes Hono build a WHATWG
 * Headers object and takes every 202 off @hono/node-server's fast path for plain-object headers
 * (a seventh of a realtime push's cost).
 */
export function answerAccepted(deliveryId: string, body: string): Response {
  return new Response(body, { status: 202, headers: { 'Content-Type': 'application/json', 'X-Delivery-Id': deliveryId } });
}

/** The 202's body; `refusedFields` only when some field was refused, with their count over the whole push. */
export function acceptedBody(
  deliveryId: string,
  accepted: number,
  total: number,
  rejected: RejectedRecord[],
  refusedFields: RefusedFieldAnswer[] = [],
  fieldsRefused = { fields: 0, records: 0 },
): string {
  // Every record taken (nearly every push): the same text as below, written without the object.
  if (rejected.length === 0 && fieldsRefused.fields === 0) {
    return `{"status":"SUCCESS","data":{"deliveryId":${JSON.stringify(deliveryId)},"accepted":${accepted},"rejected":[]},"err":"","msg":"accepted ${accepted} record(s)"}`;
  }
  const data: PushAccepted = { deliveryId, accepted, rejected, ...(refusedFields.length > 0 ? { refusedFields } : {}) };
  let msg =
    rejected.length === 0
      ? `accepted ${accepted} record(s)`
      : `accepted ${accepted} of ${total} record(s); ${rejected.length} rejected and quarantined`;
  if (fieldsRefused.fields > 0) msg += `; ${fieldsRefused.fields} implausible field(s) of ${fieldsRefused.records} record(s) not stored (refusedFields) and quarantined`;
  return JSON.stringify(success(data, msg));
}

/** A refusal as status and body, for an answer that is stored to be given again. */
export function refusalAnswer(err: PushRefused): { status: number; body: string } {
  return { status: err.status, body: JSON.stringify(failure(err.code, err.message)) };
}
