import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';
import { Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { secureHeaders } from 'hono/secure-headers';
import type { Metrics } from '../../metrics/index.js';
import { failure } from '../../telemetry/envelope.js';
import { FLEET_PATH } from '../fleet/routes.js';
import { GEOFENCES_BODY_MAX } from '../geofences/routes.js';
import { jsonWrites } from './jsonWrites.js';
import { refuseCrossSite } from './sameOrigin.js';
import { basicAuthOf, type AdminCredential } from './credentials.js';

export const QUEUE_UI_PATH = '/admin/queues';

/** The largest body the admin listener reads, counted on the bytes as they arrive (chunked or not): the geofences' own bound, its largest body. */
export const ADMIN_BODY_LIMIT = GEOFENCES_BODY_MAX;
/** What a body past ADMIN_BODY_LIMIT is told. */
export const adminBodyTooLarge = `a body on the admin listener is at most ${ADMIN_BODY_LIMIT} bytes; send geofences in parts`;

/**
 * The admin listener's routes: what operators and Prometheus reach, apart from the port senders
 * reach. `/metrics` always; the queue UI (bull-board: the push queue and its failed jobs, the dead
 * letter) when given the queues (a partition each), behind basic auth unless `credentials` is undefined on purpose;
 * read-only unless `ui.writes` (QUEUE_UI_WRITES=on).
 *
 * A browser cannot be turned against it: no page of it may be framed; a write another site's page sends
 * (with the operator's cached credentials) is refused, and so is any write whose body is not JSON; no
 * body is read past ADMIN_BODY_LIMIT.
 */
export function adminRoutes(
  metrics: Metrics,
  ui?: { queues: readonly Queue[]; credentials: readonly AdminCredential[] | undefined; writes?: boolean },
  fleet?: { routes: Hono<any>; credentials: readonly AdminCredential[] | undefined; open: boolean },
): Hono {
  const app = new Hono();
  app.use(
    '*',
    secureHeaders({ xFrameOptions: 'DENY', contentSecurityPolicy: { frameAncestors: ["'none'"] }, crossOriginEmbedderPolicy: false }),
    refuseCrossSite(),
    jsonWrites(),
    bodyLimit({ maxSize: ADMIN_BODY_LIMIT, onError: (c) => c.json(failure('payload_too_large', adminBodyTooLarge), 413) }),
  );
  app.get('/metrics', async (c) => c.body(await metrics.text(), 200, { 'Content-Type': metrics.contentType }));
  if (fleet) {
    // Plates and positions: behind the admin credentials, or open only with ADMIN_AUTH=none. The
    // credential let in is the routes' `credential` (commands are refused to one not named for them).
    const guard: MiddlewareHandler<any> | undefined = fleet.credentials
      ? basicAuthOf(fleet.credentials)
      : fleet.open
        ? undefined
        : async (c) => c.json(failure('unauthorized', 'the fleet routes show plates and positions: set ADMIN_CREDENTIALS=user:password, or ADMIN_AUTH=none to expose them on purpose'), 403);
    if (guard) for (const path of [FLEET_PATH, `${FLEET_PATH}/*`]) app.use(path, guard);
    app.route(FLEET_PATH, fleet.routes);
  }
  if (ui) {
    const board = new HonoAdapter(serveStatic);
    createBullBoard({ queues: ui.queues.map((q) => new BullMQAdapter(q, { readOnlyMode: !ui.writes })), serverAdapter: board, options: { uiConfig: { boardTitle: 'telematics-ingest' } } });
    board.setBasePath(QUEUE_UI_PATH);
    if (ui.credentials) {
      // The UI's own static files (scripts, styles, translations) hold nothing of ours; the page and its API do.
      const auth = basicAuthOf(ui.credentials);
      app.use(`${QUEUE_UI_PATH}/*`, (c, next) => (c.req.path.startsWith(`${QUEUE_UI_PATH}/static/`) ? next() : auth(c, next)));
    }
    app.route(QUEUE_UI_PATH, board.registerPlugin());
  }
  return app;
}
