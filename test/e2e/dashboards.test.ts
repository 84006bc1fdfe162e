/**
 * Every query of every InfluxQL dashboard (panel targets and template variables), with Grafana's
 * macros substituted as Grafana does, run on the real influxd holding the emulator's fleet pushed
 * through the push path (and its fuel through the fuel sync): none may fail, and none may be empty.
 * The derived history (vehicle_events, trips, charging) is written as the service writes it, for two of
 * the fleet's vehicles and for a plate of its own, whose panels are held to exact values.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { syncFuel } from '../../src/ingest/sync/fuel.js';
import { UNPACED } from '../../src/upstream/client/pacer.js';
import { InfluxSink } from '../../src/ingest/write/influx.js';
import { UpstreamClient } from '../../src/upstream/client/index.js';
import { canRecordData } from '../../src/upstream/emulator/can.js';
import { Fleet } from '../../src/upstream/emulator/fleet.js';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { Rng } from '../../src/upstream/emulator/prng.js';
import { formatLine } from '../../src/telemetry/lineProtocol.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';
import { bullKey, keysOf } from '../../src/ingest/queue/keys.js';
import { localDays } from '../../src/ingest/fleet/days.js';

const HOUR = 3_600_000;
const STEP = 5 * 60_000;
const NOW = Math.floor(Date.now() / STEP) * STEP;
const FROM = NOW - 6 * HOUR;
const SEED = 11;
/** What the dashboard's time zone variable is set to: one with a half-hour offset, so a day is not UTC's. */
const ZONE = 'Asia/Kolkata';
const SIZE = 8;
/** The last vehicle stops reporting three hours ago: longer than a one-hour range, shorter than six. */
const SILENT = { index: SIZE - 1, fromMs: NOW - 3 * HOUR };

const MIN = 60_000;
/**
 * The plate docs/analysts.md's history queries name. The emulator's fleet never has it, so whatever the
 * service derives from the fleet, its history is exactly what `historyLines` writes.
 */
const DOC_PLATE = 'KA01AB1234';
/** A pack swapped across three vehicles (its pack_life rows, as the service writes them: detectors/packLife.ts). */
const PACK = '410233';

/** A vehicle's events, trips and charging sessions over the last five hours, as the service writes them. */
/** Pack PACK's rows: an afternoon in the first vehicle, swapped into the second, then the third, where it still is. */
function packLines(): string[] {
  const at = (minutesAgo: number) => NOW - minutesAgo * MIN;
  const [a, b, c] = [DOC_PLATE, fleet.vehicles[0]!.vehicleno, fleet.vehicles[1]!.vehicleno];
  const row = (vehicleno: string, from: number, to: number, f: Record<string, number>) => formatLine('pack_life', { vehicleno, pack: PACK }, { end: at(to), duration_s: ((from - to) * MIN) / 1000, stint_start: at(from), ...f }, at(from));
  return [
    row(a!, 300, 200, { left: 1, ah_in: 0, ah_out: 40.5, kwh_in: 0, kwh_out: 2.1, cycle_start: 311, cycle_end: 311, temp_hot_s: 0 }),
    row(b!, 190, 100, { left: 1, ah_in: 60, ah_out: 12.25, kwh_in: 3.3, kwh_out: 0.62, cycle_start: 311, cycle_end: 312, temp_hot_s: 540 }),
    row(c!, 90, 20, { ah_in: 0, ah_out: 22, kwh_in: 0, kwh_out: 1.14, cycle_start: 312, cycle_end: 312, temp_hot_s: 0 }),
    // Another pack at once, in the first vehicle after the swap: not in PACK's history.
    formatLine('pack_life', { vehicleno: a!, pack: '733019' }, { end: at(100), duration_s: 6000, stint_start: at(200), ah_out: 30 }, at(200)),
  ];
}

function historyLines(vehicleno: string): string[] {
  const at = (minutesAgo: number) => NOW - minutesAgo * MIN;
  const event = (name: string, ago: number, fields: Record<string, number>) => formatLine('vehicle_events', { vehicleno, event: name }, fields, at(ago));
  const start = { start_lat: 12.9716, start_lng: 77.5946 };
  return [
    event('ignition_on', 300, { value: 1, lat: 12.9716, lng: 77.5946 }),
    event('alert_over_temp_raised', 290, { value: 1, soc: 71 }),
    event('alert_short_circuit_raised', 285, { value: 1 }),
    event('alert_over_temp_cleared', 270, { value: 0 }),
    event('ignition_off', 240, { value: 0, lat: 13.0321, lng: 77.6412 }),
    event('charging_started', 180, { value: 1, soc: 61 }),
    event('charging_stopped', 120, { value: 0, soc: 90 }),
    event('overspeed_started', 280, { value: 1, limit: 60, speed: 64, lat: 12.99, lng: 77.6 }),
    event('overspeed_ended', 279, { value: 0, limit: 60, max_speed: 71.5, duration_s: 45, distance_m: 850 }),
    event('idle_started', 250, { value: 1, lat: 13.0321, lng: 77.6412 }),
    event('idle_ended', 242, { value: 0, lat: 13.0321, lng: 77.6412, duration_s: 480 }),
    event('soc_low', 150, { value: 1, soc: 19, battery_voltage: 47.9 }),
    event('soc_drain_while_parked', 130, { value: 1, soc_from: 64, soc_to: 58, over_s: 7_200 }),
    event('battery_swapped', 140, { value: 1, bms_id_old: 410_233, bms_id_new: 733_019, soc: 96 }),
    formatLine('vehicle_events', { vehicleno, event: 'fuel_drop', unit: 'litres' }, { value: 1, fuel_before: 40, fuel_after: 31, fuel_amount: 9, over_s: 900 }, at(100)),
    event('moved_while_off', 200, { value: 1, distance_m: 420, lat: 13.0359, lng: 77.6412, parked_lat: 13.0321, parked_lng: 77.6412 }),
    formatLine('vehicle_events', { vehicleno, event: 'geofence_entered', geofence: 'Depot A', geofence_kind: 'depot' }, { value: 1, geofence_id: 1 }, at(238)),
    formatLine('vehicle_events', { vehicleno, event: 'geofence_exited', geofence: 'Depot A', geofence_kind: 'depot' }, { value: 0, geofence_id: 1 }, at(58)),
    formatLine('stops', { vehicleno }, { end: at(60), duration_s: 10_800, lat: 13.0321, lng: 77.6412, ignition_on_s: 480 }, at(240)),
    formatLine('trips', { vehicleno }, { end: at(240), duration_s: 3600, distance_m: 42_500, max_speed_kmh: 71.5, ...start, end_lat: 13.0321, end_lng: 77.6412, soc_start: 80, soc_end: 61, idle_s: 480, overspeed_s: 45 }, at(300)),
    // A trip whose state of charge was not known: no soc fields at all.
    formatLine('trips', { vehicleno }, { end: at(45), duration_s: 900, distance_m: 5_250, max_speed_kmh: 38, ...start, end_lat: 12.98, end_lng: 77.6 }, at(60)),
    formatLine('charging', { vehicleno }, { end: at(120), duration_s: 3600, soc_start: 61, soc_end: 90, energy_wh: 12_400 }, at(180)),
    formatLine('charging', { vehicleno }, { end: at(10), duration_s: 1200, soc_start: 88, soc_end: 93 }, at(30)),
  ];
}

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
    // An emulator without limits: unpaced, as before issue #47 (the pacing has its own tests).
    client: new UpstreamClient({ baseUrl: emulator.url, token: emulator.token, pacer: UNPACED }),
    sink: new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: svc.cfg.INFLUX_BUCKET, timeoutMs: 5_000 }),
    redis,
    watermarkKey: `${svc.cfg.QUEUE_NAME}:wm`,
    units: ['litres', 'percent'],
    lookbackMs: 6 * HOUR,
    maxRangeMs: 6 * HOUR,
    now: () => NOW,
  });
  expect(fuel.failed).toEqual([]);
  // The derived history, straight into the database (the write path is the service's own tests').
  const lines = [...[DOC_PLATE, fleet.vehicles[0]!.vehicleno, fleet.vehicles[1]!.vehicleno].flatMap(historyLines), ...packLines()];
  const written = await fetch(`${inject('influxRawUrl')}/write?db=${encodeURIComponent(svc.cfg.INFLUX_BUCKET)}&precision=ms`, { method: 'POST', body: lines.join('\n') });
  expect(written.status).toBe(204);
  const cans = records.filter((r) => (r as { type: string }).type === 'can').length;
  await svc.waitForRows('SELECT count(soc) FROM can GROUP BY vehicleno', SIZE, 30_000);
  await svc.waitForRows(`SELECT count(*) FROM can WHERE time >= ${FROM}ms`, 1, 30_000);
  // Each job updates its vehicles' last-seen state once its points are written (batched: WORKER_LINGER),
  // and a status run says silent as of that state: wait for every job to be done, then for a run after.
  const { partitions } = keysOf(svc.cfg);
  const unfinished = async () => {
    let n = 0;
    for (const q of partitions) n += (await redis.llen(bullKey(q, 'wait'))) + (await redis.llen(bullKey(q, 'active'))) + (await redis.zcard(bullKey(q, 'delayed')));
    return n;
  };
  await waitUntil(async () => (await unfinished()) === 0, 30_000, 'every job done');
  await svc.waitForRows(`SELECT count(*) FROM "fleet" WHERE time > ${Date.now()}ms`, 1, 30_000);
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
  templating: { list: Array<{ name: string; type: string; query: string; allValue?: string }> };
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
    .replaceAll('$vehicle', vehicle)
    .replaceAll('$fleet_timezone', ZONE)
    .replaceAll('$pack', PACK);
}
const plates = fleet.vehicles.map((v) => v.vehicleno);
const regexOf = (values: string[]) => `(${values.map((v) => v.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')).join('|')})`;
const selections: Record<string, string> = { all: '.*', two: regexOf(plates.slice(0, 2)), 'the silent one and another': regexOf([plates[0]!, plates[SILENT.index]!]) };

describe.each(dashboards.map((d) => [d.title, d] as const))('%s', (_title, dash) => {
  it('answers every template variable, with the fleet’s vehicles', async () => {
    for (const v of dash.templating.list.filter((x) => x.type === 'query')) {
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

describe('the derived history panels, for one vehicle', () => {
  const fleetDash = () => dashboards.find((d) => d.title === 'Telematics fleet')!;
  const panel = (title: string) => substitute(fleetDash().panels.find((p) => p.title === title)!.targets[0]!.query, regexOf([DOC_PLATE]));
  const at = (minutesAgo: number) => NOW - minutesAgo * MIN;

  it('counts the alarms raised in the range, not the cleared ones', async () => {
    expect(await svc.query(panel('Alarms raised (range)'))).toEqual([{ time: FROM, 'alarms raised': 2 }]);
  });

  it('cuts the trips and charging sessions into the fleet’s local days', async () => {
    const dash = fleetDash().panels.find((p) => p.title.startsWith('Days per vehicle'))!;
    const [trips, charging] = await Promise.all(dash.targets.map((t) => svc.query(substitute(t.query, regexOf([DOC_PLATE])))));
    // Which of the two trips (5 h and 1 h ago) and two sessions (3 h and 30 min ago) share a Kolkata day depends on the hour the test runs.
    const dayOf = (t: number) => localDays(t, t, ZONE)[0]!.start;
    const byDay = <T,>(xs: Array<[number, T]>) => [...new Set(xs.map(([t]) => dayOf(t)))].sort((a, b) => a - b).map((d) => [d, xs.filter(([t]) => dayOf(t) === d).map(([, x]) => x)] as const);
    expect(trips).toEqual(
      byDay<[number, number, number]>([[at(300), [42_500, 3600, 480]], [at(60), [5_250, 900, 0]]]).map(([d, ts]) => ({
        time: d,
        vehicleno: DOC_PLATE,
        trips: ts.length,
        km: ts.reduce((n, t) => n + t[0], 0) / 1000,
        driving: ts.reduce((n, t) => n + t[1], 0),
        idling: ts.some((t) => t[2] > 0) ? ts.reduce((n, t) => n + t[2], 0) : null,
        'over the limit': ts.some((t) => t[2] > 0) ? 45 : null,
      })),
    );
    expect(charging).toEqual(
      byDay<number | null>([[at(180), 12_400], [at(30), null]]).map(([d, es]) => ({ time: d, vehicleno: DOC_PLATE, 'charging sessions': es.length, 'energy Wh': es.some((e) => e !== null) ? es.reduce<number>((n, e) => n + (e ?? 0), 0) : null })),
    );
  });

  it('lists the trips that started in the range, in km, with the state of charge where known', async () => {
    expect(await svc.query(panel('Trips started in the range'))).toEqual([
      { vehicleno: DOC_PLATE, time: at(300), end: at(240), duration: 3600, km: 42.5, 'max km/h': 71.5, 'soc start %': 80, 'soc end %': 61 },
      { vehicleno: DOC_PLATE, time: at(60), end: at(45), duration: 900, km: 5.25, 'max km/h': 38, 'soc start %': null, 'soc end %': null },
    ]);
  });

  it('lists alarms raised and cleared and ignition on and off, newest first, without the charging events', async () => {
    expect((await svc.query(panel('Vehicle events: alarms raised and cleared, ignition on and off'))).map((r) => [r.time, r.event, r.value])).toEqual([
      [at(240), 'ignition_off', 0],
      [at(270), 'alert_over_temp_cleared', 0],
      [at(285), 'alert_short_circuit_raised', 1],
      [at(290), 'alert_over_temp_raised', 1],
      [at(300), 'ignition_on', 1],
    ]);
  });

  it('lists the stops, where and for how long, with how long the ignition was on', async () => {
    expect(await svc.query(panel('Stops started in the range'))).toEqual([
      { vehicleno: DOC_PLATE, time: at(240), end: at(60), duration: 10_800, lat: 13.0321, lng: 77.6412, 'ignition on': 480 },
    ]);
  });

  it('lists idling, overspeed and moved while off, newest first, without alarms or ignition', async () => {
    expect((await svc.query(panel('Driving events: idling, overspeed, moved while off'))).map((r) => [r.time, r.event, r.duration, r['max km/h']])).toEqual([
      [at(200), 'moved_while_off', null, null],
      [at(242), 'idle_ended', 480, null],
      [at(250), 'idle_started', null, null],
      [at(279), 'overspeed_ended', 45, 71.5],
      [at(280), 'overspeed_started', null, null],
    ]);
  });

  it('lists geofence entries and exits with the geofence’s name and kind, newest first', async () => {
    expect((await svc.query(panel('Geofences: entered and exited'))).map((r) => [r.time, r.event, r.geofence, r.kind])).toEqual([
      [at(58), 'geofence_exited', 'Depot A', 'depot'],
      [at(238), 'geofence_entered', 'Depot A', 'depot'],
    ]);
  });

  it('sums idling and time over the limit per vehicle from its trips', async () => {
    expect(await svc.query(panel('Idling and overspeed per vehicle (trips in the range)'))).toEqual([{ vehicleno: DOC_PLATE, time: FROM, idling: 480, 'over the limit': 45, driving: 4500 }]);
  });

  it('lists the charging sessions, with the energy where known', async () => {
    expect(await svc.query(panel('Charging sessions started in the range'))).toEqual([
      { vehicleno: DOC_PLATE, time: at(180), end: at(120), duration: 3600, 'soc start %': 61, 'soc end %': 90, 'energy Wh': 12_400 },
      { vehicleno: DOC_PLATE, time: at(30), end: at(10), duration: 1200, 'soc start %': 88, 'soc end %': 93, 'energy Wh': null },
    ]);
  });
});

it('shows a pack’s history across the three vehicles it visited, in time order, with its energy', async () => {
  const fleetDash = dashboards.find((d) => d.title === 'Telematics fleet')!;
  const q = substitute(fleetDash.panels.find((p) => p.title.startsWith('Pack history across vehicles'))!.targets[0]!.query, '.*');
  const at = (minutesAgo: number) => NOW - minutesAgo * MIN;
  const rows = (await svc.query(q)).sort((x, y) => Number(x.time) - Number(y.time));
  expect(rows).toEqual([
    { pack: PACK, vehicleno: DOC_PLATE, time: at(300), end: at(200), duration: 6000, 'Ah in': 0, 'Ah out': 40.5, 'kWh in': 0, 'kWh out': 2.1, cycles: 311, 'at 45 °C+': 0, left: 1 },
    { pack: PACK, vehicleno: plates[0], time: at(190), end: at(100), duration: 5400, 'Ah in': 60, 'Ah out': 12.25, 'kWh in': 3.3, 'kWh out': 0.62, cycles: 312, 'at 45 °C+': 540, left: 1 },
    { pack: PACK, vehicleno: plates[1], time: at(90), end: at(20), duration: 4200, 'Ah in': 0, 'Ah out': 22, 'kWh in': 0, 'kWh out': 1.14, cycles: 312, 'at 45 °C+': 0, left: null },
  ]);
});

it('runs every InfluxQL query of the analysts’ guide (docs/analysts.md), each with data', async () => {
  const queries = [...readFileSync('docs/analysts.md', 'utf8').matchAll(/```influxql\n([\s\S]*?)\n```/g)].map((m) => m[1]!.trim());
  expect(queries.length).toBeGreaterThanOrEqual(10);
  const empty: string[] = [];
  for (const q of queries) if ((await svc.query(q)).length === 0) empty.push(q);
  expect(empty).toEqual([]);
});
