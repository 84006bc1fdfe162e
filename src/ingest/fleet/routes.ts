import { Hono } from 'hono';
import { parseDuration } from '../../config/duration.js';
import { failure, success } from '../../telemetry/envelope.js';
import type { SilentAfter } from './changes.js';
import type { FleetState } from './state.js';

export const FLEET_PATH = '/fleet';
const LIMIT_MAX = 100_000;

/**
 * The admin listener's fleet routes, for operators and their scripts: `GET /fleet` (vehicles known,
 * reporting and silent per SILENT_AFTER threshold) and `GET /fleet/silent?after=1h&limit=100` (the
 * silent vehicles, longest silent first, with last-seen time and last position).
 */
export function fleetRoutes(fleet: FleetState, thresholds: readonly SilentAfter[], now: () => number = Date.now): Hono {
  const app = new Hono();
  app.get('/', async (c) => {
    const at = now();
    const counts = await fleet.counts(at, thresholds.map((t) => t.ms));
    const silent = thresholds.map((t, i) => ({ after: t.label, reporting: counts.known - counts.silent[i]!, silent: counts.silent[i]! }));
    return c.json(success({ at, known: counts.known, thresholds: silent }, 'OK'));
  });
  app.get('/silent', async (c) => {
    const afterText = c.req.query('after');
    const limitText = c.req.query('limit');
    const after = afterText === undefined ? thresholds[0]!.ms : parseDuration(afterText);
    if (after === undefined || after <= 0) return c.json(failure('invalid_query', `after: "${afterText}" is not a duration such as 15m, 1h or 2d`), 400);
    const limit = limitText === undefined ? 100 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX) return c.json(failure('invalid_query', `limit: "${limitText}" is not a whole number from 1 to ${LIMIT_MAX}`), 400);
    const at = now();
    const vehicles = await fleet.silent(at, after, limit);
    return c.json(success({ at, afterMs: after, vehicles }, `${vehicles.length} vehicle(s) silent for more than ${afterText ?? thresholds[0]!.label}`));
  });
  return app;
}
