import type { Context } from 'hono';
import type { Logger } from '../../log/index.js';
import type { RejectedRecord } from '../../telemetry/envelope.js';
import { splitPush, type PushShape } from '../../telemetry/push.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { quarantineEntry, type NewQuarantineEntry, type QuarantineOrigin } from '../queue/quarantine.js';
import { validateRecord, type ValidationResult } from '../validate/record.js';
import { boundedJson } from '../../telemetry/json.js';
import { answerAccepted, PushRefused } from './answer.js';
import { BodyError, readBody } from './body.js';

/** What the receiver needs from the queue stage; the real ones are Producer and Quarantine. */
export interface RecordSink {
  enqueue(records: TelemetryRecord[]): Promise<void>;
}
export interface QuarantineSink {
  add(entries: readonly NewQuarantineEntry[]): Promise<void>;
}

export interface PushHandlerOptions {
  bodyLimit: number;
  /** Records one push may carry (MAX_RECORDS_PER_PUSH); more is answered 413. */
  maxRecords: number;
  quarantineRawLimit: number;
  log: Logger;
}

/**
 * Rejected records of one push that get their own reason in the answer and their own quarantine
 * entry; beyond them the answer names each by index only, and the whole body is kept once. A push of
 * ten thousand bad records thus costs a bounded answer and a bounded quarantine.
 */
export const REJECTED_IN_DETAIL = 100;

// Invalid UTF-8 is refused rather than replaced: two plates differing in one bad byte would
// otherwise merge into one series.
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * One push, past the checks that need no body: read it, parse it, validate each record, queue the
 * valid ones and quarantine the rest, and answer 202 only once Redis confirmed both. Anything that
 * is the push's fault is thrown as PushRefused (after its bytes are quarantined); anything else
 * means the push was not stored.
 */
export async function receivePush(
  c: Context,
  shape: PushShape,
  deliveryId: string,
  records: RecordSink,
  quarantine: QuarantineSink,
  opts: PushHandlerOptions,
): Promise<Response> {
  // Only quarantine entries and logs need the route, and parsing the URL is not free on every push.
  let origin: QuarantineOrigin | undefined;
  const receivedAt = Date.now();
  const originOf = () => (origin ??= { deliveryId, receivedAt, route: new URL(c.req.url).pathname, stage: 'receive' });
  const keepWhole = (raw: string, reason: string) => quarantine.add([quarantineEntry(originOf(), -1, reason, raw, opts.quarantineRawLimit)]);

  let bytes: Uint8Array;
  try {
    bytes = await readBody(c.req.raw, opts.bodyLimit);
  } catch (err) {
    if (err instanceof BodyError && err.raw) await keepWhole(`base64:${Buffer.from(err.raw).toString('base64')}`, err.message);
    throw err;
  }

  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    const msg = 'body is not valid UTF-8; send JSON encoded as UTF-8';
    await keepWhole(`base64:${Buffer.from(bytes).toString('base64')}`, msg);
    throw new PushRefused(400, 'invalid_text', msg);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    const msg = `body is not valid JSON: ${(err as Error).message}`;
    await keepWhole(text, msg);
    throw new PushRefused(400, 'invalid_json', msg);
  }

  const push = splitPush(body, shape);
  if (!push.ok) {
    await keepWhole(text, push.problem);
    throw new PushRefused(400, 'invalid_shape', push.problem);
  }

  const { items } = push;
  if (items.length > opts.maxRecords) {
    throw new PushRefused(413, 'too_many_records', `push of ${items.length} records exceeds MAX_RECORDS_PER_PUSH (${opts.maxRecords}); split it`);
  }
  const valid: TelemetryRecord[] = [];
  const rejected: RejectedRecord[] = [];
  const held: NewQuarantineEntry[] = [];
  for (let i = 0; i < items.length; i++) {
    const r = validated(items[i], receivedAt);
    if (r.ok) valid.push(r.record);
    else if (rejected.length < REJECTED_IN_DETAIL) {
      rejected.push({ index: i, error: r.error });
      const { text: raw, truncated } = boundedJson(items[i], opts.quarantineRawLimit);
      held.push({ ...quarantineEntry(originOf(), i, r.error, raw), truncated });
    } else rejected.push({ index: i, error: BEYOND_DETAIL });
  }
  if (rejected.length > REJECTED_IN_DETAIL) {
    const more = rejected.length - REJECTED_IN_DETAIL;
    held.push(quarantineEntry(originOf(), -1, `${more} more rejected record(s), from index ${rejected[REJECTED_IN_DETAIL]!.index}; the whole push is kept here`, text, opts.quarantineRawLimit));
  }

  // Only counts are used after the wait: the parsed push and its records are then garbage as soon
  // as the producer has encoded them, not kept through the Redis round trip (fewer survivors for
  // each young-generation collection, which otherwise copies and promotes every push in flight).
  const accepted = valid.length;
  const total = items.length;
  await (held.length === 0 ? records.enqueue(valid) : Promise.all([records.enqueue(valid), quarantine.add(held)]));
  if (rejected.length > 0) {
    opts.log.info({ deliveryId, route: originOf().route, accepted, rejected: rejected.length }, 'push had invalid records; quarantined');
    if (!push.bulk) throw new PushRefused(400, 'invalid_record', `invalid record (quarantined): ${rejected[0]!.error}`);
  }
  return answerAccepted(deliveryId, accepted, total, rejected);
}

/** The error of a rejected record beyond the first REJECTED_IN_DETAIL: short, since there may be thousands; the reasons are in the quarantine. */
const BEYOND_DETAIL = 'invalid';

/** A record's verdict; whatever goes wrong while judging it is that record's fault, never a 5xx. */
function validated(item: unknown, receivedAt: number): ValidationResult {
  try {
    return validateRecord(item, receivedAt);
  } catch (err) {
    return { ok: false, error: `could not be validated: ${err instanceof Error ? err.message : String(err)}` };
  }
}
