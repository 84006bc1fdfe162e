import { readCapped } from '../../bytes/capped.js';
import { Hono } from 'hono';
import { failure, success } from '../../telemetry/envelope.js';
import { featureOf, GEOFENCE_LIMITS, GeofenceLimitError, parseGeofencesYielding, type GeofenceLimits } from './geofence.js';
import type { GeofenceRef, GeofenceRegistry } from './registry.js';

/** Where the routes sit under the fleet's. */
export const GEOFENCES_PATH = '/geofences';

/**
 * A POST's body at most, counted as it arrives (whatever Content-Length says, or without one): 4 MiB
 * holds 10,000 small geofences, or ten of the largest (10,000 vertices, ~400 kB of GeoJSON each).
 */
export const GEOFENCES_BODY_MAX = 4 << 20;

export interface GeofenceRouteOptions {
  /** Bytes of a POST's body (GEOFENCES_BODY_MAX). */
  bodyMax?: number;
  /** Vertices of a geofence, geofences of a body (GEOFENCE_LIMITS; the registry holds its own live ones). */
  limits?: GeofenceLimits;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body's bytes, read from its stream with a running count; undefined as soon as they pass `max`
 * (declared so, or once that many arrived: a chunked body, or one whose Content-Length lies, is cut
 * there, not read on into memory).
 */
async function readBody(req: Request, max: number): Promise<Uint8Array | undefined> {
  if (Number(req.headers.get('content-length') ?? 0) > max) return undefined;
  if (!req.body) return new Uint8Array(0);
  const r = await readCapped(req.body, max);
  return r.ok ? r.bytes : undefined;
}

/**
 * The admin listener's geofence routes (under `/fleet`, behind its credentials):
 * `GET /fleet/geofences[?all=1]` (GeoJSON), `POST /fleet/geofences` (a FeatureCollection or a Feature:
 * added, or replacing the one of the same name), `DELETE /fleet/geofences/<id>` (digits: an id, only)
 * and `DELETE /fleet/geofences?name=<name>` (a name, only). As the CLI's `telematics-fleet geofences`,
 * on the same registry.
 */
export function geofenceRoutes(registry: GeofenceRegistry, now: () => number = Date.now, opts: GeofenceRouteOptions = {}): Hono {
  const bodyMax = opts.bodyMax ?? GEOFENCES_BODY_MAX;
  const limits = opts.limits ?? GEOFENCE_LIMITS;
  const app = new Hono();
  app.get('/', async (c) => {
    const all = await registry.all();
    const shown = c.req.query('all') === '1' ? all : all.filter((g) => g.to === undefined);
    return c.json(success({ type: 'FeatureCollection', features: shown.map(featureOf) }, `${shown.length} geofence(s)`));
  });
  app.post('/', async (c) => {
    const encoding = c.req.header('content-encoding')?.trim().toLowerCase();
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      return c.json(failure('unsupported_media_type', `Content-Encoding ${encoding} is not taken here: send the GeoJSON as it is`), 415);
    }
    const bytes = await readBody(c.req.raw, bodyMax);
    if (bytes === undefined) {
      // What is left of the body is not read: the connection closes after the answer.
      return c.json(failure('payload_too_large', `a body of geofences is at most ${bodyMax} bytes; send them in parts`), 413, { Connection: 'close' });
    }
    let json: unknown;
    try {
      json = JSON.parse(utf8.decode(bytes));
    } catch {
      return c.json(failure('invalid_json', 'the body is not JSON: send a GeoJSON FeatureCollection or Feature'), 400);
    }
    let inputs;
    try {
      inputs = await parseGeofencesYielding(json, limits);
    } catch (err) {
      if (err instanceof GeofenceLimitError) return c.json(failure(err.code, err.message), 413);
      return c.json(failure('invalid_geofence', (err as Error).message), 400);
    }
    let change;
    try {
      change = await registry.add(inputs, now());
    } catch (err) {
      if (err instanceof GeofenceLimitError) return c.json(failure(err.code, err.message), 413);
      throw err;
    }
    return c.json(
      success({ added: change.added.map(featureOf), replaced: change.ended.map((g) => g.id), unchanged: change.unchanged.map((g) => g.id) }, `${change.added.length} added, ${change.unchanged.length} unchanged`),
      change.added.length > 0 ? 201 : 200,
    );
  });
  const remove = async (ref: GeofenceRef) => {
    const removed = await registry.remove(ref, now());
    if (!removed) return { status: 404 as const, body: failure('not_found', `no geofence ${'id' in ref ? `with id ${ref.id}` : `named ${JSON.stringify(ref.name)}`} holds now`) };
    return { status: 200 as const, body: success(featureOf(removed), `removed ${removed.id} ${JSON.stringify(removed.name)}`) };
  };
  // By name: a query parameter, so that a name of digits is never taken for an id.
  app.delete('/', async (c) => {
    const name = c.req.query('name');
    if (name === undefined || name === '') return c.json(failure('invalid_request', 'give the geofence: DELETE /fleet/geofences/<id>, or DELETE /fleet/geofences?name=<name>'), 400);
    const { status, body } = await remove({ name });
    return c.json(body, status);
  });
  // By id: digits only.
  app.delete('/:id', async (c) => {
    const id = c.req.param('id');
    if (!/^[0-9]{1,15}$/.test(id)) {
      return c.json(failure('invalid_id', `DELETE /fleet/geofences/<id> takes a geofence's id (digits), not ${JSON.stringify(id)}: to remove one by name, DELETE /fleet/geofences?name=<name>`), 400);
    }
    const { status, body } = await remove({ id: Number(id) });
    return c.json(body, status);
  });
  return app;
}
