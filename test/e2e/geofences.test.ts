/**
 * Geofences through the real service (issue #38): a depot and a yard from GEOFENCES_FILE, a zone added at
 * run time with `telematics-fleet geofences add` and judged from the next records on, one added and
 * removed through the admin API; a drive in and out shuffled and duplicated, a sparse drive crossing the
 * small yard between two fixes, a vehicle standing on the depot's border. What InfluxDB holds
 * (`vehicle_events`, tagged with the geofence) and what the CLI lists.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProgram } from '../../src/cli/program.js';
import { FLEET } from '../../src/ingest/fleet/commands.js';
import { square } from '../../src/ingest/geofences/geofences.testkit.js';
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
    expect((await fetch(`${url}/Charger%207`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/Charger%207`, { method: 'DELETE' })).status).toBe(404);
    expect(await names()).not.toContain('Charger 7');
    expect((await fleetCli('geofences', 'list', '--all')).out).toMatch(/Charger 7 +charging/);
  });
});
