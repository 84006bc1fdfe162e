import { Hono } from 'hono';
import { failure, success } from '../../telemetry/envelope.js';
import { featureOf, parseGeofences } from './geofence.js';
import type { GeofenceRegistry } from './registry.js';

/** Where the routes sit under the fleet's. */
export const GEOFENCES_PATH = '/geofences';

/** Bodies of geofences are GeoJSON: a city's worth of polygons, not more. */
const BODY_MAX = 16 << 20;

/**
 * The admin listener's geofence routes (under `/fleet`, behind its credentials):
 * `GET /fleet/geofences[?all=1]` (GeoJSON), `POST /fleet/geofences` (a FeatureCollection or a Feature:
 * added, or replacing the one of the same name), `DELETE /fleet/geofences/<id or name>`. As the CLI's
 * `telematics-fleet geofences`, on the same registry.
 */
export function geofenceRoutes(registry: GeofenceRegistry, now: () => number = Date.now): Hono {
  const app = new Hono();
  app.get('/', async (c) => {
    const all = await registry.all();
    const shown = c.req.query('all') === '1' ? all : all.filter((g) => g.to === undefined);
    return c.json(success({ type: 'FeatureCollection', features: shown.map(featureOf) }, `${shown.length} geofence(s)`));
  });
  app.post('/', async (c) => {
    if (Number(c.req.header('content-length') ?? 0) > BODY_MAX) return c.json(failure('too_large', `a body of geofences is at most ${BODY_MAX} bytes`), 413);
    let json: unknown;
    try {
      json = await c.req.json();
    } catch {
      return c.json(failure('invalid_json', 'the body is not JSON: send a GeoJSON FeatureCollection or Feature'), 400);
    }
    let inputs;
    try {
      inputs = parseGeofences(json);
    } catch (err) {
      return c.json(failure('invalid_geofence', (err as Error).message), 400);
    }
    const change = await registry.add(inputs, now());
    return c.json(success({ added: change.added.map(featureOf), replaced: change.ended.map((g) => g.id), unchanged: change.unchanged.map((g) => g.id) }, `${change.added.length} added, ${change.unchanged.length} unchanged`), change.added.length > 0 ? 201 : 200);
  });
  app.delete('/:id', async (c) => {
    const removed = await registry.remove(c.req.param('id'), now());
    if (!removed) return c.json(failure('not_found', `no geofence ${JSON.stringify(c.req.param('id'))} holds now`), 404);
    return c.json(success(featureOf(removed), `removed ${removed.id} ${removed.name}`));
  });
  return app;
}
