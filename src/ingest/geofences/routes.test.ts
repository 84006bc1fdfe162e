import { describe, expect, it } from 'vitest';
import { GEOFENCE_LIMITS, parseGeofences, type Geofence, type GeofenceInput } from './geofence.js';
import type { GeofenceRef, GeofenceRegistry } from './registry.js';
import { GEOFENCES_BODY_MAX, geofenceRoutes } from './routes.js';
import { square } from './geofences.testkit.js';

/** A registry in memory, telling what it was asked: the routes' side of it only. */
function fakeRegistry() {
  const held: Geofence[] = [];
  const asked: { removed: GeofenceRef[]; added: GeofenceInput[][] } = { removed: [], added: [] };
  const registry = {
    all: async () => held,
    add: async (inputs: GeofenceInput[], now: number) => {
      asked.added.push(inputs);
      const added = inputs.map((g, i) => ({ ...g, id: held.length + i + 1, from: now }));
      held.push(...added);
      return { added, ended: [], unchanged: [] };
    },
    remove: async (ref: GeofenceRef, now: number) => {
      asked.removed.push(ref);
      const g = held.find((x) => x.to === undefined && ('id' in ref ? x.id === ref.id : x.name === ref.name));
      if (g) g.to = now;
      return g;
    },
  };
  return { registry: registry as unknown as GeofenceRegistry, held, asked };
}

const zone = (name: string) => ({ type: 'Feature', properties: { name, kind: 'customer' }, geometry: { type: 'Polygon', coordinates: square(12.9, 77.5, 100) } });

/** A body of `total` bytes as a stream of 64-KiB chunks, counting what was pulled from it. */
function streamed(total: number) {
  const chunk = new Uint8Array(64 << 10).fill(0x20);
  const source = { pulled: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (source.pulled >= total) return controller.close();
      source.pulled += chunk.length;
      controller.enqueue(chunk);
    },
  });
  return { body, source };
}

describe('POST /fleet/geofences: the body', () => {
  const post = (app: ReturnType<typeof geofenceRoutes>, body: BodyInit, headers: Record<string, string> = {}) =>
    app.request('/', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, duplex: 'half' } as RequestInit);

  it(`is counted as it arrives: ${GEOFENCES_BODY_MAX} bytes at most, whatever Content-Length says or without one, reading no further`, async () => {
    const { registry, asked } = fakeRegistry();
    const app = geofenceRoutes(registry);
    for (const headers of [{}, { 'content-length': '100' }] as Record<string, string>[]) {
      const { body, source } = streamed(64 << 20);
      const res = await post(app, body, headers);
      expect(res.status).toBe(413);
      expect(res.headers.get('connection')).toBe('close');
      expect(await res.json()).toMatchObject({ err: 'payload_too_large', msg: `a body of geofences is at most ${GEOFENCES_BODY_MAX} bytes; send them in parts` });
      // Stopped at the cap (and what the stream had queued), not at the 64 MiB.
      expect(source.pulled).toBeLessThan(GEOFENCES_BODY_MAX + (1 << 20));
    }
    // Declared over the cap: refused before a byte is read.
    const { body, source } = streamed(GEOFENCES_BODY_MAX + 1);
    expect((await post(app, body, { 'content-length': String(GEOFENCES_BODY_MAX + 1) })).status).toBe(413);
    expect(source.pulled).toBeLessThanOrEqual(64 << 10);
    expect(asked.added).toEqual([]);
  });

  it('takes a body at the cap; a smaller cap is an option', async () => {
    const { registry } = fakeRegistry();
    const doc = JSON.stringify(zone('Zone A'));
    expect((await post(geofenceRoutes(registry), doc.padEnd(GEOFENCES_BODY_MAX, ' '))).status).toBe(201);
    expect((await post(geofenceRoutes(registry, Date.now, { bodyMax: doc.length - 1 }), doc)).status).toBe(413);
  });

  it('refuses a compressed body (415), one not UTF-8 or not JSON (400), and answers what is over the caps with 413', async () => {
    const { registry } = fakeRegistry();
    const app = geofenceRoutes(registry, Date.now, { limits: { ...GEOFENCE_LIMITS, perDocument: 1 } });
    expect((await post(app, JSON.stringify(zone('x')), { 'content-encoding': 'gzip' })).status).toBe(415);
    expect(await (await post(app, new Uint8Array([0x7b, 0xff, 0x7d]))).json()).toMatchObject({ err: 'invalid_json' });
    const many = await post(app, JSON.stringify({ type: 'FeatureCollection', features: [zone('a'), zone('b')] }));
    expect(many.status).toBe(413);
    expect(await many.json()).toMatchObject({ err: 'too_many_geofences' });
    const name = await post(app, JSON.stringify(zone('a\nb')));
    expect(name.status).toBe(400);
    expect(await name.json()).toMatchObject({ err: 'invalid_geofence', msg: expect.stringContaining('geofences: properties.name: must not contain control characters') });
  });
});

describe('DELETE /fleet/geofences: by id or by name, never one taken for the other', () => {
  it('/<digits> is an id, ?name= a name (digits too); a path of anything else is refused, pointing at ?name=', async () => {
    const { registry, asked } = fakeRegistry();
    const app = geofenceRoutes(registry);
    await registry.add([...parseGeofences(zone('Depot A')), ...parseGeofences(zone('1'))], 0);
    const del = async (path: string) => {
      const res = await app.request(path, { method: 'DELETE' });
      return { status: res.status, body: (await res.json()) as { err: string; msg: string; data: { id: number; properties: { name: string } } } };
    };
    const byName = await del('/?name=1');
    expect(byName).toMatchObject({ status: 200, body: { data: { id: 2, properties: { name: '1' } } } });
    expect((await del('/1')).body.data.properties.name).toBe('Depot A');
    expect(await del('/1')).toMatchObject({ status: 404, body: { msg: 'no geofence with id 1 holds now' } });
    expect(await del('/?name=Depot%20B')).toMatchObject({ status: 404, body: { msg: 'no geofence named "Depot B" holds now' } });
    expect(await del('/Depot%20A')).toMatchObject({ status: 400, body: { err: 'invalid_id', msg: expect.stringContaining('to remove one by name, DELETE /fleet/geofences?name=<name>') } });
    expect(await del('/')).toMatchObject({ status: 400, body: { err: 'invalid_request' } });
    expect(asked.removed).toEqual([{ name: '1' }, { id: 1 }, { id: 1 }, { name: 'Depot B' }]);
  });
});
