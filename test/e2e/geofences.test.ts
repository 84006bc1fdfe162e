/**
 * Geofences through the real service (issue #38): a depot and a yard from GEOFENCES_FILE, a zone added at
 * run time with `telematics-fleet geofences add` and judged from the next records on, one added and
 * removed through the admin API; a drive in and out shuffled and duplicated, a sparse drive crossing the
 * small yard between two fixes, a vehicle standing on the depot's border. What InfluxDB holds
 * (`vehicle_events`, tagged with the geofence) and what the CLI lists.
 */
import { adminBodyTooLarge } from '../../src/ingest/service/admin.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProgram } from '../../src/cli/program.js';
import { FLEET } from '../../src/ingest/fleet/commands.js';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { GeofenceRegistry } from '../../src/ingest/geofences/registry.js';
import { GEOFENCES_BODY_MAX } from '../../src/ingest/geofences/routes.js';
import { square, wavy } from '../../src/ingest/geofences/geofences.testkit.js';
import { captureIO } from '../harness/io.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';

const S = 1000;
const HOUR = 3_600_000;
const T0 = Math.floor(Date.now() / 1000) * 1000 - 6 * HOUR;
const north = (m: number) => m / 111_195.08;
const LNG = 77.59;

type Rec = { vehicleno: string; type: 'gps'; data: Record<string, number> };
const fix = (v: string, time: number, metresNorth: number, speed: number, ignstatus = 1): Rec => ({ vehicleno: v, type: 'gps', data: { time, lat: 12.9 + north(metresNorth), lng: LNG, alti: 900, speed, ignstatus } });

/** A square geofence of `side` metres centred on LNG, its south edge `south` metres north of 12.9°. */
const feature = (name: string, kind: string, south: number, side: number) => {
  const lat = 12.9 + north(south);
  return { type: 'Feature', properties: { name, kind }, geometry: { type: 'Polygon', coordinates: square(lat, LNG - north(side / 2) / Math.cos((lat * Math.PI) / 180), side) } };
};

let svc: TestService;
let dir: string;
const fleetCli = async (...argv: string[]) => {
  const cli = captureIO({ REDIS_URL: svc.cfg.REDIS_URL!, QUEUE_NAME: svc.cfg.QUEUE_NAME });
  const code = await runProgram(FLEET, argv, cli.io);
  return { code, out: cli.out(), err: cli.err() };
};
const push = async (records: Rec[]) => {
  for (let i = 0; i < records.length; i += 1_000) expect((await svc.post('/push/bulk', { bulkData: records.slice(i, i + 1_000) })).status).toBe(202);
};
const geofenceEvents = (v: string, n: number) => svc.waitForRows(`SELECT * FROM vehicle_events WHERE vehicleno = '${v}' AND event =~ /^geofence_/`, n, 60_000);

/** Within blocks of 10 records reversed, every fourth sent twice (inside the window). */
const disordered = (rs: Rec[]): Rec[] => {
  const out: Rec[] = [];
  for (let i = 0; i < rs.length; i += 10) {
    const block = rs.slice(i, i + 10).reverse();
    out.push(...block, ...block.filter((_, k) => k % 4 === 0));
  }
  return out;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'geofences-'));
  writeFileSync(join(dir, 'fleet.geojson'), JSON.stringify({ type: 'FeatureCollection', features: [feature('Depot A', 'depot', 995, 500), feature('Yard', 'restricted', 5_000, 100)] }));
  svc = await startTestService({ GEOFENCES_FILE: join(dir, 'fleet.geojson'), GEOFENCE_MIN_DWELL: '5s', EVENTS_WINDOW: '5s', WORKER_CONCURRENCY: '1', ADMIN_AUTH: 'none' });
  await waitUntil(async () => (await fleetCli('geofences', 'list')).out.includes('Yard'), 15_000, 'GEOFENCES_FILE in the registry');
  await new Promise((r) => setTimeout(r, 2_500)); // the workers' watch reads it
  // North at 36 km/h: into the depot at 100 s (1 km), standing in it 2 min, out past its north edge (1,495 m) at 270 s.
  const drive: Rec[] = [];
  for (let j = 0; j <= 400; j++) drive.push(fix('GF-DRIVE', T0 + j * S, j <= 120 ? 10 * j : j <= 240 ? 1_200 : 1_200 + 10 * (j - 240), j > 120 && j <= 240 ? 0 : 36));
  await push(disordered(drive));
  // A fix a minute at 60 km/h from 1.6 km (past the depot): the 100-m yard at 5 km lies between those at 4.6 and 5.6 km.
  await push([0, 1, 2, 3, 4, 5, 6].map((k) => fix('GF-CROSS', T0 + k * 60_000, 1_600 + k * 1_000, 60)));
  // Standing on the depot's south edge for 10 minutes, its fixes 8 m in and 8 m out by turns.
  await push(Array.from({ length: 600 }, (_, j) => fix('GF-BORDER', T0 + j * S, 995 + (Math.floor(j / 3) % 2 === 0 ? -8 : 8), 0)));
}, 90_000);

afterAll(async () => {
  await svc?.close();
});

describe('geofences through the service', () => {
  it('a drive into the depot and out, shuffled and some records twice: entered and exited once, tagged with its name and kind', async () => {
    const rows = await geofenceEvents('GF-DRIVE', 2);
    expect(rows.map((r) => [r.time, r.event, r.geofence, r.geofence_kind, r.value])).toEqual([
      [T0 + 100 * S, 'geofence_entered', 'Depot A', 'depot', 1],
      [T0 + 270 * S, 'geofence_exited', 'Depot A', 'depot', 0],
    ]);
  });

  it('a step between two sparse fixes through the yard: a crossing, entered and exited where the step meets its border', async () => {
    const rows = await geofenceEvents('GF-CROSS', 2);
    expect(rows.map((r) => [r.event, r.geofence, r.crossed])).toEqual([
      ['geofence_entered', 'Yard', 1],
      ['geofence_exited', 'Yard', 1],
    ]);
    // 400 m and 500 m along the 1-km step from 4.6 km (60 s): 24 s and 30 s in.
    expect(rows[0]!.time).toBeCloseTo(T0 + 3 * 60_000 + 24_000, -2);
    expect(rows[1]!.time).toBeCloseTo(T0 + 3 * 60_000 + 30_000, -2);
  });

  it('a vehicle standing on the border, in and out by turns: no event', async () => {
    // Its records are stored (and the drive's events are told) before this is asked: nothing came.
    await svc.waitForRows(`SELECT count(lat) FROM gps WHERE vehicleno = 'GF-BORDER'`, 1, 30_000);
    await geofenceEvents('GF-DRIVE', 2);
    expect(await svc.query(`SELECT * FROM vehicle_events WHERE vehicleno = 'GF-BORDER' AND event =~ /^geofence_/`)).toEqual([]);
  });

  it('a zone added with telematics-fleet geofences add judges the records from then on, not those before', async () => {
    writeFileSync(join(dir, 'zone.geojson'), JSON.stringify(feature('Zone B', 'customer', 20_000, 400)));
    const added = await fleetCli('geofences', 'add', join(dir, 'zone.geojson'));
    expect(added).toMatchObject({ code: 0, out: expect.stringMatching(/^added \d+ Zone B \(customer, polygon 4 vertices\)\n$/) });
    const listed = JSON.parse((await fleetCli('geofences', 'list', '--json')).out) as { features: Array<{ properties: { name: string; from: number } }> };
    const from = listed.features.find((f) => f.properties.name === 'Zone B')!.properties.from;
    await new Promise((r) => setTimeout(r, 2_500)); // the workers' watch reads it
    // Standing in the zone, a fix a second, from a minute before it was added to 20 s after; pushed now.
    const t1 = Math.floor(from / 1000) * 1000;
    await push(Array.from({ length: 81 }, (_, j) => fix('GF-ZONE', t1 - 60_000 + j * S, 20_200, 0)));
    const rows = await geofenceEvents('GF-ZONE', 1);
    // Entered at its first fix at or after the zone was added: those before were judged without it.
    expect(rows.map((r) => [r.time, r.event, r.geofence])).toEqual([[Math.ceil(from / 1000) * 1000, 'geofence_entered', 'Zone B']]);
  });

  it('the admin API adds, lists and removes geofences as the CLI does', async () => {
    const url = `${svc.adminUrl}/fleet/geofences`;
    const post = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(feature('Charger 7', 'charging', 30_000, 50)) });
    expect(post.status).toBe(201);
    const bad = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'Feature', properties: { name: 'x', kind: 'garage' }, geometry: feature('x', 'other', 0, 10).geometry }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { msg: string }).msg).toContain('properties.kind');
    const names = async () => ((await (await fetch(url)).json()) as { data: { features: Array<{ properties: { name: string } }> } }).data.features.map((f) => f.properties.name);
    expect(await names()).toContain('Charger 7');
    expect((await fetch(`${url}?name=Charger%207`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}?name=Charger%207`, { method: 'DELETE' })).status).toBe(404);
    expect(await names()).not.toContain('Charger 7');
    expect((await fleetCli('geofences', 'list', '--all')).out).toMatch(/Charger 7 +charging/);
  });
});

/** Hostile and mistaken geofences (issue #46): what InfluxDB tags, terminals, the event loop and the map can take. */
describe('geofences the service refuses', () => {
  const url = () => `${svc.adminUrl}/fleet/geofences`;
  type Answer = { status: number; body: { err: string; msg: string; data: { id?: number; properties?: { name: string }; added?: Array<{ id: number }> } } };
  const send = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${url()}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  };
  const names = async () => ((await (await fetch(url())).json()) as { data: { features: Array<{ id: number; properties: { name: string } }> } }).data.features;
  /** A square far from every drive of this file (south of the equator). */
  const far = (name: string, k = 0) => ({ type: 'Feature', properties: { name, kind: 'other' }, geometry: { type: 'Polygon', coordinates: square(-10 - k * 0.01, 20, 100) } });

  it('refuses names that would break InfluxDB lines or terminals (400, naming the field and why)', async () => {
    const refused = [
      ['Depot North\ngps', 'must not contain control characters (U+000A at 11)'],
      ['Zone \u001b[2J', 'must not contain control characters (U+001B at 5)'],
      ['Zone \u202eA', 'must not contain Unicode bidirectional controls (U+202E at 5)'],
      ['Zone\\', 'must not end with a backslash'],
      ['Zone\\ A', 'must not have a backslash before a comma, space or equals sign'],
    ] as const;
    for (const [name, why] of refused) {
      const res = await send('POST', '', far(name));
      expect(res.status, name).toBe(400);
      expect(res.body).toMatchObject({ err: 'invalid_geofence', msg: expect.stringContaining(`geofences: properties.name: ${why}`) });
    }
    const held = (await names()).map((f) => f.properties.name);
    for (const [name] of refused) expect(held).not.toContain(name);
  });

  it('the CLI prints a name stored by an older release escaped, and removes it by --name', async () => {
    const redis = new Redis(svc.cfg.REDIS_URL!, { maxRetriesPerRequest: 1 });
    const old = 'Old\u001b[2J\u001b]0;x\u0007 \u202eenoz';
    try {
      // As an older release stored it: the registry itself takes what it is given.
      await new GeofenceRegistry(redis, redisKeys(svc.cfg.QUEUE_NAME).geofences).add([{ name: old, kind: 'other', geometry: far('x', 1).geometry as never }]);
    } finally {
      redis.disconnect();
    }
    for (const args of [['list'], ['list', '--all'], ['list', '--json']]) {
      const { code, out } = await fleetCli('geofences', ...args);
      expect(code).toBe(0);
      expect(out, args.join(' ')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
      expect(out).toContain(args[1] === '--json' ? '"Old\\u001b[2J\\u001b]0;x\\u0007 \\u202eenoz"' : '"Old\\u001b[2J\\u001b]0;x\\u0007 \\u202eenoz"');
    }
    const removed = await fleetCli('geofences', 'remove', '--name', old);
    expect(removed.code).toBe(0);
    expect(removed.out).toMatch(/^removed \d+ "Old\\u001b\[2J\\u001b\]0;x\\u0007 \\u202eenoz": records from /);
  });

  it('removes by id or by name, never one taken for the other: DELETE /fleet/geofences/1 is id 1, ?name=1 the zone named "1"', async () => {
    const added = await send('POST', '', far('1', 2));
    expect(added.status).toBe(201);
    const id = added.body.data.added![0]!.id;
    expect(id).not.toBe(1);
    // By name: the zone named "1", not geofence 1 (Depot A, from the file).
    const byName = await send('DELETE', '?name=1');
    expect(byName.status).toBe(200);
    expect(byName.body.data).toMatchObject({ id, properties: { name: '1' } });
    expect((await names()).find((f) => f.id === 1)?.properties.name).toBe('Depot A');
    // A path that is not digits is not a name: refused, saying how to remove by name.
    const byPath = await send('DELETE', '/Depot%20A');
    expect(byPath.status).toBe(400);
    expect(byPath.body).toMatchObject({ err: 'invalid_id', msg: expect.stringContaining('DELETE /fleet/geofences?name=<name>') });
    expect((await names()).map((f) => f.properties.name)).toContain('Depot A');
    expect((await send('DELETE', `/${id}`)).status).toBe(404);
    // The CLI: --id or --name, never a bare word.
    const bare = await fleetCli('geofences', 'remove', '1');
    expect(bare.code).toBe(2);
    expect(bare.err).toContain('remove takes --id <id> or --name <name>');
    const again = await send('POST', '', far('2', 3));
    const cliById = await fleetCli('geofences', 'remove', '--id', String(again.body.data.added![0]!.id));
    expect(cliById).toMatchObject({ code: 0, out: expect.stringMatching(/^removed \d+ 2: /) });
    expect((await fleetCli('geofences', 'remove', '--id', 'Depot A')).code).toBe(2);
  });

  /** POSTs `total` bytes chunked (no Content-Length), 64 KiB a write as the server takes them: its answer, and how much had been sent when it came. */
  const postChunked = (total: number) =>
    new Promise<{ status: number; body: string; sentWhenAnswered: number }>((resolve, reject) => {
      const chunk = Buffer.alloc(64 << 10, ' ');
      let sent = 0;
      let answered = false;
      const req = request(url(), { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        answered = true;
        const at = sent;
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, sentWhenAnswered: at }));
        res.on('error', reject);
      });
      // Writing on after the answer may meet a closed socket: the answer is what counts.
      req.on('error', (err) => (answered ? undefined : reject(err)));
      const pump = () => {
        while (!answered && sent < total) {
          const next = sent === 0 ? Buffer.from('{"type":"FeatureCollection","features":[') : chunk;
          sent += next.length;
          if (!req.write(next)) return void req.once('drain', pump);
        }
        if (!answered) req.end();
      };
      pump();
    });

  it(`answers 413 to a chunked body (no Content-Length) past ${GEOFENCES_BODY_MAX} bytes, counted as it arrives, and stops reading`, async () => {
    const over = await postChunked(GEOFENCES_BODY_MAX * 2);
    expect(over.status).toBe(413);
    // The admin listener counts every body before any route reads it.
    expect(JSON.parse(over.body)).toMatchObject({ err: 'payload_too_large', msg: adminBodyTooLarge });
    // A far larger one is answered long before it is all sent (what sockets buffer in between aside), never read whole.
    const huge = await postChunked(64 << 20);
    expect(huge.status).toBe(413);
    expect(huge.sentWhenAnswered).toBeLessThan(40 << 20);
    // A body declared over the cap is refused before it is read; the listener answers on.
    const declared = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.alloc(GEOFENCES_BODY_MAX + 1, ' ') });
    expect(declared.status).toBe(413);
    expect((await fetch(url())).status).toBe(200);
    expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
  });

  it('refuses a geofence of more vertices than the cap, and a body of more geofences (413), takes one at the cap', async () => {
    const city = (vertices: number) => ({ type: 'Feature', properties: { name: 'City', kind: 'other' }, geometry: { type: 'Polygon', coordinates: wavy(-20, 30, 5_000, vertices) } });
    const over = await send('POST', '', city(10_001));
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ err: 'too_many_vertices', msg: 'geofences: geometry ("City"): 10001 vertices, more than the 10000 a geofence may have (each costs every fix near it); simplify it (mapshaper -simplify, ST_Simplify)' });
    const atCap = await send('POST', '', city(10_000));
    expect(atCap.status).toBe(201);
    expect((await send('DELETE', `/${atCap.body.data.added![0]!.id}`)).status).toBe(200);
    const many = await send('POST', '', { type: 'FeatureCollection', features: Array.from({ length: 10_001 }, (_, i) => far(`z${i}`)) });
    expect(many.status).toBe(413);
    expect(many.body).toMatchObject({ err: 'too_many_geofences', msg: 'geofences: 10001 features, more than the 10000 a document may hold; send them in parts' });
  });

  it('refuses shapes across the antimeridian (a ring from 179° to -179°, a circle over ±180°), saying to split them into a MultiPolygon', async () => {
    const ring = await send('POST', '', { type: 'Feature', properties: { name: 'Fiji' }, geometry: { type: 'Polygon', coordinates: [[[179, -17], [-179, -17], [-179, -16], [179, -16], [179, -17]]] } });
    expect(ring.status).toBe(400);
    expect(ring.body.msg).toBe(
      'geofences: geometry.coordinates.0.1 ("Fiji"): the edge from [179, -17] to [-179, -17] spans more than 180° of longitude: a shape across the antimeridian (±180°) is not read as drawn; split it at ±180° into a MultiPolygon, a polygon each side',
    );
    const circle = await send('POST', '', { type: 'Feature', properties: { name: 'Port', radius_m: 5_000 }, geometry: { type: 'Point', coordinates: [-179.99, -17] } });
    expect(circle.status).toBe(400);
    expect(circle.body.msg).toContain('properties.radius_m ("Port"): the circle of 5000 m around [-179.99, -17] reaches across the antimeridian (±180°)');
    const split = await send('POST', '', {
      type: 'Feature',
      properties: { name: 'Fiji' },
      geometry: { type: 'MultiPolygon', coordinates: [[[[179, -17], [180, -17], [180, -16], [179, -16], [179, -17]]], [[[-180, -17], [-179, -17], [-179, -16], [-180, -16], [-180, -17]]]] },
    });
    expect(split.status).toBe(201);
    expect((await send('DELETE', '?name=Fiji')).status).toBe(200);
  });

  it('refuses a ring crossing itself, naming the feature and where; the document is taken whole or not at all', async () => {
    const res = await send('POST', '', { type: 'FeatureCollection', features: [far('Fine'), { type: 'Feature', properties: { name: 'Bow tie' }, geometry: { type: 'Polygon', coordinates: [[[20, -10], [20.01, -9.99], [20.01, -10], [20, -9.99], [20, -10]]] } }] });
    expect(res.status).toBe(400);
    expect(res.body.msg).toBe('geofences: features.1.geometry.coordinates.0 ("Bow tie"): the ring crosses itself at [20.005, -9.995]: a geofence\'s border must not cross or touch itself (draw one loop, or a MultiPolygon of several)');
    expect((await names()).map((f) => f.properties.name)).not.toContain('Fine');
  });
});
