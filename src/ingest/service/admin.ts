import { Hono } from 'hono';
import type { Metrics } from '../../metrics/index.js';

/** The admin listener's routes: what operators and Prometheus reach, apart from the port senders reach. */
export function adminRoutes(metrics: Metrics): Hono {
  const app = new Hono();
  app.get('/metrics', async (c) => c.body(await metrics.text(), 200, { 'Content-Type': metrics.contentType }));
  return app;
}
