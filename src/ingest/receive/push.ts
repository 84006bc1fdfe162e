import type { Context } from 'hono';
import type { Logger } from '../../log/index.js';
import type { RejectedRecord } from '../../telemetry/envelope.js';
import { splitPush, type PushShape } from '../../telemetry/push.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { quarantineEntry, type NewQuarantineEntry, type QuarantineOrigin } from '../queue/quarantine.js';
import { validateRecord } from '../validate/record.js';
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
  quarantineRawLimit: number;
  log: Logger;
}

const decoder = new TextDecoder('utf-8', { fatal: false });

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

  const text = decoder.decode(bytes);
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
  const valid: TelemetryRecord[] = [];
  const rejected: RejectedRecord[] = [];
  const held: NewQuarantineEntry[] = [];
  for (let i = 0; i < items.length; i++) {
    const r = validateRecord(items[i], receivedAt);
    if (r.ok) valid.push(r.record);
    else {
      rejected.push({ index: i, error: r.error });
      held.push(quarantineEntry(originOf(), i, r.error, JSON.stringify(items[i]) ?? 'undefined', opts.quarantineRawLimit));
    }
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
