import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from '../../log/index.js';
import { failure, success } from '../../telemetry/envelope.js';
import { answerRefusal, PushRefused } from '../receive/answer.js';

export interface HealthCheck {
  name: string;
  check: () => Promise<boolean>;
}

/** `/healthz`: the process answers. `/readyz`: every dependency of this process's mode answers. */
export function healthRoutes(checks: readonly HealthCheck[]): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json(success({ alive: true }, 'alive')));
  app.get('/readyz', async (c) => {
    const results = await Promise.all(
      checks.map(async (h) => [h.name, await withTimeout(h.check(), 2_000).catch(() => false)] as const),
    );
    const data = Object.fromEntries(results);
    const down = results.filter(([, ok]) => !ok).map(([n]) => n);
    if (down.length > 0) return c.json({ ...failure('unavailable', `not ready: ${down.join(', ')} unreachable`), data }, 503);
    return c.json(success(data, 'ready'));
  });
  return app;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(resolve, reject).finally(() => clearTimeout(t));
  });
}

/**
 * The process's one HTTP app: health always, push routes where it receives. The push routes answer
 * their own errors; what reaches `onError` is anything else. An HTTPException is an answer (a
 * PushRefused in the envelope); any other error is a bug: logged with its stack under a fresh
 * delivery id, and answered 500 with that id and nothing of its message, which may carry internals.
 */
export function createApp(parts: { push?: Hono; health: Hono }, log: Logger): Hono {
  const app = new Hono();
  app.route('/', parts.health);
  if (parts.push) app.route('/', parts.push);
  app.notFound((c) => c.json(failure('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`), 404));
  app.onError((err, c) => {
    const deliveryId = randomUUID();
    if (err instanceof PushRefused) return answerRefusal(c, err, deliveryId);
    if (err instanceof HTTPException) return err.getResponse();
    log.error({ err, deliveryId, method: c.req.method, path: c.req.path }, 'unexpected error; answered 500');
    c.header('X-Delivery-Id', deliveryId);
    return c.json(failure('internal', `internal error; logged under delivery id ${deliveryId}`), 500);
  });
  return app;
}
