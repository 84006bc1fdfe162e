import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { PushShape } from '../../telemetry/push.js';
import { admit, type AdmissionGate } from './admission.js';
import { answerRefusal, PushRefused } from './answer.js';
import { authenticate, SenderAuth } from './auth.js';
import { acceptJson } from './contentType.js';
import type { Delivery, PushCheck } from './delivery.js';
import { openApiJson } from './openapi.js';
import { receivePush, type PushHandlerOptions, type QuarantineSink, type RecordSink } from './push.js';
import type { Sender } from '../../config/senders.js';

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
 * The push input: the sender, admission and content type are settled before the body is read (one
 * check a module, in that order), then `receivePush` stores the push. A 2xx is sent only after Redis
 * confirmed it; every answer carries the delivery id.
 */
export function pushRoutes(records: RecordSink, quarantine: QuarantineSink, opts: ReceiverOptions): Hono {
  const app = new Hono();
  const auth = opts.senders ? new SenderAuth(opts.senders) : undefined;
  const handlerOptions: PushHandlerOptions = { ...opts, auth };

  /** A refusal is answered as such; anything else kept us from storing the push: the sender's cue to retry. */
  const answerError = (c: Context, err: unknown, deliveryId: string): Response => {
    if (err instanceof PushRefused) return answerRefusal(c, err, deliveryId);
    const message = err instanceof Error ? err.message : String(err);
    opts.log.warn({ err: message, deliveryId, path: new URL(c.req.url).pathname }, 'push not stored; answered 503');
    return answerRefusal(c, new PushRefused(503, 'unavailable', `push not stored, retry later: ${message}`, opts.retryAfterSeconds), deliveryId);
  };

  const checks: PushCheck[] = [];
  if (auth) checks.push(authenticate(auth, opts.log));
  if (opts.admission) checks.push(admit(opts.admission));
  checks.push(acceptJson());

  const { metrics } = opts;
  const handler = (shape: PushShape) => {
    const route = shape === 'any' ? 'push' : shape;
    // Metric children resolved once per label set: prom-client hashes a label object on every call.
    const duration = metrics?.pushDuration.labels({ route });
    const pushes = new Map<string, { inc(): void }>();
    const answered = (delivery: Delivery, started: number) => (res: Response) => {
      if (metrics) {
        const sender = delivery.sender?.name ?? (auth ? 'none' : 'anonymous');
        const key = `${res.status} ${sender}`;
        let counter = pushes.get(key);
        if (counter === undefined) pushes.set(key, (counter = metrics.pushes.labels({ route, status: res.status, sender })));
        counter.inc();
        duration!.observe((performance.now() - started) / 1000);
      }
      return res;
    };
    return (c: Context) => {
      const delivery: Delivery = { deliveryId: randomUUID() };
      const done = answered(delivery, performance.now());
      try {
        for (const check of checks) check(c, delivery);
      } catch (err) {
        return done(answerError(c, err, delivery.deliveryId));
      }
      return receivePush(c, shape, delivery, records, quarantine, handlerOptions)
        .catch((err: unknown) => answerError(c, err, delivery.deliveryId))
        .then(done);
    };
  };

  app.post('/push', handler('any'));
  app.post('/push/bulk', handler('bulk'));
  app.post('/push/realtime', handler('realtime'));
  const described = openApiJson();
  app.get('/openapi.json', (c) => c.body(described, 200, { 'Content-Type': 'application/json' }));
  return app;
}
