/**
 * Every query of every InfluxQL dashboard (panel targets and template variables), with Grafana's
 * macros substituted as Grafana does, run on the real influxd holding the emulator's fleet pushed
 * through the push path (and its fuel through the fuel sync): none may fail, and none may be empty.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { syncFuel } from '../../src/ingest/sync/fuel.js';
import { InfluxSink } from '../../src/ingest/write/influx.js';
import { UpstreamClient } from '../../src/upstream/client/index.js';
import { canRecordData } from '../../src/upstream/emulator/can.js';
import { Fleet } from '../../src/upstream/emulator/fleet.js';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { Rng } from '../../src/upstream/emulator/prng.js';
import { startTestService, type TestService } from '../harness/service.js';

const HOUR = 3_600_000;
const STEP = 5 * 60_000;
const NOW = Math.floor(Date.now() / STEP) * STEP;
const FROM = NOW - 6 * HOUR;
const SEED = 11;
const SIZE = 8;
/** The last vehicle stops reporting three hours ago: longer than a one-hour range, shorter than six. */
const SILENT = { index: SIZE - 1, fromMs: NOW - 3 * HOUR };

let svc: TestService;
let emulator: Awaited<ReturnType<typeof startEmulator>>;
let redis: Redis;
const fleet = Fleet.create({ seed: SEED, size: SIZE, silent: SILENT });

beforeAll(async () => {
  // The fleet status job every second, so that its points (the silent panel's data) are there soon after the push.
  svc = await startTestService({ FLEET_STATUS_INTERVAL: '1s' });
  // The fleet over six hours, pushed as a sender would, in bulks.
  const rng = Rng.seeded(SEED);
  const records: unknown[] = [];
  for (let t = FROM; t <= NOW; t += STEP) {
    for (const v of fleet.vehicles) {
      if (!fleet.reportsAt(v, t)) continue;
      records.push({ vehicleno: v.vehicleno, type: 'gps', data: fleet.gpsAt(v, t) });
      records.push({ vehicleno: v.vehicleno, type: 'can', data: canRecordData(fleet.canStateAt(v, t), rng) });
    }
  }
  for (let i = 0; i < records.length; i += 500) {
    const res = await svc.post('/push/bulk', { bulkData: records.slice(i, i + 500) });
    expect(res.status).toBe(202);
  }
  // Fuel is pulled, not pushed: the fuel sync reads the emulator of the same fleet.
  emulator = await startEmulator({ seed: SEED, vehicles: SIZE, now: () => NOW });
  redis = new Redis(inject('redisUrl'));
  const fuel = await syncFuel({
    client: new UpstreamClient({ baseUrl: emulator.url, token: emulator.token }),
    sink: new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: svc.cfg.INFLUX_BUCKET, timeoutMs: 5_000 }),
    redis,
    watermarkKey: `${svc.cfg.QUEUE_NAME}:wm`,
    units: ['litres', 'percent'],
    lookbackMs: 6 * HOUR,
    maxRangeMs: 6 * HOUR,
    now: () => NOW,
  });
  expect(fuel.failed).toEqual([]);
  const cans = records.filter((r) => (r as { type: string }).type === 'can').length;
  await svc.waitForRows('SELECT count(soc) FROM can GROUP BY vehicleno', SIZE, 30_000);
  await svc.waitForRows(`SELECT count(*) FROM can WHERE time >= ${FROM}ms`, 1, 30_000);
  await svc.waitForRows(`SELECT last("silent") FROM "fleet_status" WHERE "after" = '1h' GROUP BY "vehicleno"`, 1, 30_000);
  expect(cans).toBeGreaterThan(500);
}, 120_000);
afterAll(async () => {
  redis?.disconnect();
  await emulator?.close();
  await svc?.close();
});

interface Target {
  query: string;
  refId: string;
}
interface Dashboard {
  title: string;
  panels: Array<{ title: string; datasource: { type: string }; targets: Target[] }>;
  templating: { list: Array<{ name: string; query: string; allValue?: string }> };
}
const dashboards = readdirSync('deploy/grafana/dashboards')
  .map((f) => JSON.parse(readFileSync(`deploy/grafana/dashboards/${f}`, 'utf8')) as Dashboard)
  .filter((d) => d.panels.some((p) => p.datasource.type === 'influxdb'));

/** Grafana's InfluxQL macros for a range and an interval, and a variable of one value, several, or All. */
function substitute(q: string, vehicle: string): string {
  return q
    // The range ends now, as Grafana's does: the status job's points are stamped when it runs, after the data.
    .replaceAll('$timeFilter', `time >= ${FROM}ms and time <= ${Date.now()}ms`)
    .replaceAll('$__interval_ms', String(STEP))
    .replaceAll('$__interval', '5m')
    .replaceAll('$vehicle', vehicle);
}
const plates = fleet.vehicles.map((v) => v.vehicleno);
const regexOf = (values: string[]) => `(${values.map((v) => v.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')).join('|')})`;
const selections: Record<string, string> = { all: '.*', two: regexOf(plates.slice(0, 2)), 'the silent one and another': regexOf([plates[0]!, plates[SILENT.index]!]) };

describe.each(dashboards.map((d) => [d.title, d] as const))('%s', (_title, dash) => {
  it('answers every template variable, with the fleet’s vehicles', async () => {
    for (const v of dash.templating.list) {
      const rows = await svc.query(v.query);
      expect(rows.map((r) => r.value).sort()).toEqual([...plates].sort());
    }
  });

  it.each(Object.entries(selections))('answers every panel query with data, for %s of the vehicles', async (name, vehicle) => {
    const empty: string[] = [];
    for (const p of dash.panels) {
      for (const t of p.targets) {
        const rows = await svc.query(substitute(t.query, vehicle));
        // The silent panel lists the silent vehicles of the selection: none, where it holds none.
        if (p.title.startsWith('Vehicles silent')) {
          expect(rows.map((r) => r.vehicleno), p.title).toEqual(name === 'two' ? [] : [plates[SILENT.index]]);
          continue;
        }
        if (rows.length === 0) empty.push(`${p.title} (${t.refId})`);
      }
    }
    expect(empty).toEqual([]);
  });
});

it('keeps a vehicle silent for longer than the range on the fleet table and the map, with its last-seen time', async () => {
  const fleetDash = dashboards.find((d) => d.title === 'Telematics fleet')!;
  const query = (title: string) => substitute(fleetDash.panels.find((p) => p.title.startsWith(title))!.targets[0]!.query, '.*');
  const silentPlate = plates[SILENT.index]!;
  const lastReport = SILENT.fromMs - STEP;
  const table = await svc.query(query('Fleet: last seen'));
  expect(table.map((r) => r.vehicleno).sort()).toEqual([...plates].sort());
  expect(table.find((r) => r.vehicleno === silentPlate)?.time).toBe(lastReport);
  const map = await svc.query(query('Latest positions'));
  expect(map.find((r) => r.vehicleno === silentPlate)).toMatchObject({ time: lastReport, lat: fleet.gpsAt(fleet.vehicles[SILENT.index]!, lastReport).lat });
  // Exactly the silent vehicle, with its true last-seen time: every other one reported within the hour.
  expect((await svc.query(query('Vehicles silent'))).map((r) => [r.vehicleno, r.last_seen])).toEqual([[silentPlate, lastReport]]);
});

it('runs every InfluxQL query of the analysts’ guide (docs/analysts.md), each with data', async () => {
  const queries = [...readFileSync('docs/analysts.md', 'utf8').matchAll(/```influxql\n([\s\S]*?)\n```/g)].map((m) => m[1]!.trim());
  expect(queries.length).toBeGreaterThanOrEqual(10);
  const empty: string[] = [];
  for (const q of queries) if ((await svc.query(q)).length === 0) empty.push(q);
  expect(empty).toEqual([]);
});
