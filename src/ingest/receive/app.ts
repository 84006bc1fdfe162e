import { randomUUID } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { Logger } from '../../log/index.js';
import type { PushShape } from '../../telemetry/push.js';
import { admit, type AdmissionGate } from './admission.js';
import { answerRefusal, PushRefused } from './answer.js';
import { requireToken } from './auth.js';
import { acceptJson } from './contentType.js';
import { receivePush, type QuarantineSink, type RecordSink } from './push.js';

export type { AdmissionGate } from './admission.js';
export type { QuarantineSink, RecordSink } from './push.js';

/** What the push middlewares hand on: the delivery id every answer carries. */
export type PushEnv = { Variables: { deliveryId: string } };

export interface ReceiverOptions {
  /** Undefined turns authentication off (PUSH_AUTH=none). */
  tokens: readonly string[] | undefined;
  bodyLimit: number;
  /** Records one push may carry; more is answered 413. */
  maxRecords: number;
  quarantineRawLimit: number;
  /** Retry-After of a push that was not stored. */
  retryAfterSeconds: number;
  admission?: AdmissionGate;
  log: Logger;
}

/**
 * The push input: token, admission and content type are checked before the body is read (one
 * middleware each, in that order), then `receivePush` stores the push. A 2xx is sent only after
 * Redis confirmed it.
 */
export function pushRoutes(records: RecordSink, quarantine: QuarantineSink, opts: ReceiverOptions): Hono {
  const app = new Hono<PushEnv>();

  /** A refusal is answered as such; anything else kept us from storing the push: the sender's cue to retry. */
  const answerError = (c: Context, err: unknown, deliveryId?: string): Response => {
    if (err instanceof PushRefused) return answerRefusal(c, err, deliveryId);
    const message = err instanceof Error ? err.message : String(err);
    opts.log.warn({ err: message, deliveryId, path: new URL(c.req.url).pathname }, 'push not stored; answered 503');
    return answerRefusal(c, new PushRefused(503, 'unavailable', `push not stored, retry later: ${message}`, opts.retryAfterSeconds), deliveryId);
  };

  // Every answer carries the push's delivery id from here on, refusals included.
  const checks: MiddlewareHandler<PushEnv>[] = [
    async (c, next) => {
      c.set('deliveryId', randomUUID());
      await next();
    },
  ];
  if (opts.tokens) checks.push(requireToken(opts.tokens, opts.log));
  if (opts.admission) checks.push(admit(opts.admission));
  checks.push(acceptJson());

  const handler = (shape: PushShape) => (c: Context<PushEnv>) => {
    const deliveryId = c.get('deliveryId');
    return receivePush(c, shape, deliveryId, records, quarantine, opts).catch((err: unknown) => answerError(c, err, deliveryId));
  };

  const routes: Array<[string, PushShape]> = [['/push', 'any'], ['/push/bulk', 'bulk'], ['/push/realtime', 'realtime']];
  for (const [path, shape] of routes) {
    for (const check of checks) app.post(path, check);
    app.post(path, handler(shape));
  }
  app.onError((err, c) => answerError(c, err, c.get('deliveryId')));
  return new Hono().route('/', app);
}
