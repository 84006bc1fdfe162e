import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import { Hono, type MiddlewareHandler } from 'hono';
import { basicAuth } from 'hono/basic-auth';
import type { Metrics } from '../../metrics/index.js';
import { failure } from '../../telemetry/envelope.js';
import { FLEET_PATH } from '../fleet/routes.js';

export const QUEUE_UI_PATH = '/admin/queues';

/**
 * The admin listener's routes: what operators and Prometheus reach, apart from the port senders
 * reach. `/metrics` always; the queue UI (bull-board: the push queue and its failed jobs, the dead
 * letter) when given the queues (a partition each), behind basic auth unless `credentials` is undefined on purpose.
 */
export function adminRoutes(
  metrics: Metrics,
  ui?: { queues: readonly Queue[]; credentials: { username: string; password: string } | undefined },
  fleet?: { routes: Hono; credentials: { username: string; password: string } | undefined; open: boolean },
): Hono {
  const app = new Hono();
  app.get('/metrics', async (c) => c.body(await metrics.text(), 200, { 'Content-Type': metrics.contentType }));
  if (fleet) {
    // Plates and positions: behind the admin credentials, or open only with ADMIN_AUTH=none.
    const guard: MiddlewareHandler | undefined = fleet.credentials
      ? basicAuth({ ...fleet.credentials, realm: 'telematics-ingest admin' })
      : fleet.open
        ? undefined
        : async (c) => c.json(failure('unauthorized', 'the fleet routes show plates and positions: set ADMIN_CREDENTIALS=user:password, or ADMIN_AUTH=none to expose them on purpose'), 403);
    if (guard) for (const path of [FLEET_PATH, `${FLEET_PATH}/*`]) app.use(path, guard);
    app.route(FLEET_PATH, fleet.routes);
  }
  if (ui) {
    const board = new HonoAdapter(serveStatic);
    createBullBoard({ queues: ui.queues.map((q) => new BullMQAdapter(q)), serverAdapter: board, options: { uiConfig: { boardTitle: 'telematics-ingest' } } });
    board.setBasePath(QUEUE_UI_PATH);
    if (ui.credentials) {
      // The UI's own static files (scripts, styles, translations) hold nothing of ours; the page and its API do.
      const auth = basicAuth({ ...ui.credentials, realm: 'telematics-ingest admin' });
      app.use(`${QUEUE_UI_PATH}/*`, (c, next) => (c.req.path.startsWith(`${QUEUE_UI_PATH}/static/`) ? next() : auth(c, next)));
    }
    app.route(QUEUE_UI_PATH, board.registerPlugin());
  }
  return app;
}
