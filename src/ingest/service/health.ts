import { Hono } from 'hono';
import { failure, success } from '../../telemetry/envelope.js';

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

/** The process's one HTTP app: health always, push routes where it receives. */
export function createApp(parts: { push?: Hono; health: Hono }): Hono {
  const app = new Hono();
  app.route('/', parts.health);
  if (parts.push) app.route('/', parts.push);
  app.notFound((c) => c.json(failure('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`), 404));
  app.onError((err, c) => c.json(failure('internal', `internal error: ${err.message}`), 500));
  return app;
}
