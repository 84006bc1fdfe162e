import { randomUUID } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { PushShape } from '../../telemetry/push.js';
import { admit, type AdmissionGate } from './admission.js';
import { answerRefusal, PushRefused } from './answer.js';
import { authenticate, SenderAuth } from './auth.js';
import { acceptJson } from './contentType.js';
import type { PushEnv } from './env.js';
import { receivePush, type PushHandlerOptions, type QuarantineSink, type RecordSink } from './push.js';
import type { Sender } from './senders.js';
import { openApiJson } from './openapi.js';

export type { AdmissionGate } from './admission.js';
export type { QuarantineSink, RecordSink } from './push.js';

export interface ReceiverOptions extends Omit<PushHandlerOptions, 'auth'> {
  /** Who may push; undefined turns authentication off (PUSH_AUTH=none). */
  senders: readonly Sender[] | undefined;
  /** Retry-After of a push that was not stored. */
  retryAfterSeconds: number;
  admission?: AdmissionGate;
}

/**
 * The push input: the delivery id, the sender, admission and content type are settled before the
 * body is read (one middleware each, in that order), then `receivePush` stores the push. A 2xx is
 * sent only after Redis confirmed it.
 */
export function pushRoutes(records: RecordSink, quarantine: QuarantineSink, opts: ReceiverOptions): Hono {
  const app = new Hono<PushEnv>();
  const auth = opts.senders ? new SenderAuth(opts.senders) : undefined;
  const handlerOptions: PushHandlerOptions = { ...opts, auth };

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
  if (auth) checks.push(authenticate(auth, opts.log));
  if (opts.admission) checks.push(admit(opts.admission));
  checks.push(acceptJson());

  const handler = (shape: PushShape) => (c: Context<PushEnv>) =>
    receivePush(c, shape, records, quarantine, handlerOptions).catch((err: unknown) => answerError(c, err, c.get('deliveryId')));

  const routes: Array<[string, PushShape]> = [['/push', 'any'], ['/push/bulk', 'bulk'], ['/push/realtime', 'realtime']];
  for (const [path, shape] of routes) {
    for (const check of checks) app.post(path, check);
    app.post(path, handler(shape));
  }
  app.onError((err, c) => answerError(c, err, c.get('deliveryId')));
  const described = openApiJson();
  return new Hono().get('/openapi.json', (c) => c.body(described, 200, { 'Content-Type': 'application/json' })).route('/', app);
}
