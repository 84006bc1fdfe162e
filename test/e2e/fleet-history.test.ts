/**
 * `telematics-fleet events|trips|charging`: a vehicle's derived history read back from the real
 * influxd (through the v2 front's /query, with its token, as INFLUX_URL names it for the service),
 * printed exactly; plates that need quoting; the usage and unreachable-InfluxDB exit codes. And the
 * history queries of docs/analysts.md, held to the values written.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { runProgram } from '../../src/cli/program.js';
import { freePort } from '../../src/devstack/process.js';
import { FLEET } from '../../src/ingest/fleet/commands.js';
import { formatLine } from '../../src/telemetry/lineProtocol.js';
import { influxQuery } from '../harness/influx.js';
import { captureIO } from '../harness/io.js';
import { uniqueName } from '../harness/service.js';
import { localDays } from '../../src/ingest/fleet/days.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
/** A fixed day, so that the tables are exact; the docs' queries (relative to now()) get points of their own. */
const DAY = Date.parse('2025-06-01T00:00:00Z');
const V = 'KA01AB1234';
/** A plate with what InfluxQL must have escaped: a quote of each kind and a backslash. */
const ODD = `KA'01"AB\\7`;
const OTHER = 'KA01AB9999';

const db = uniqueName('history');
const env = () => ({ INFLUX_URL: inject('influxUrl'), INFLUX_TOKEN: inject('influxToken'), INFLUX_BUCKET: db });

const event = (vehicleno: string, name: string, time: number, fields: Record<string, number>) => formatLine('vehicle_events', { vehicleno, event: name }, fields, time);
const trip = (vehicleno: string, start: number, fields: Record<string, number>) => formatLine('trips', { vehicleno }, fields, start);
const session = (vehicleno: string, start: number, fields: Record<string, number>) => formatLine('charging', { vehicleno }, fields, start);
const stop = (vehicleno: string, start: number, fields: Record<string, number>) => formatLine('stops', { vehicleno }, fields, start);

async function write(lines: string[]): Promise<void> {
  const res = await fetch(`${inject('influxRawUrl')}/write?db=${db}&precision=ms`, { method: 'POST', body: lines.join('\n') });
  expect(res.status, await res.text()).toBe(204);
}

/** `telematics-fleet argv` in-process, with `e` as its whole environment. */
async function fleetWith(e: Record<string, string>, ...argv: string[]) {
  const cli = captureIO(e);
  const code = await runProgram(FLEET, argv, cli.io);
  return { code, out: cli.out(), err: cli.err() };
}
const fleet = (...argv: string[]) => fleetWith(env(), ...argv);
const RANGE = ['--since', '2025-06-01T00:00:00Z', '--until', '2025-06-01T23:59:59Z'];

beforeAll(async () => {
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const t = (h: number, m = 0, s = 0) => DAY + h * HOUR + m * MIN + s * 1000;
  await write([
    event(V, 'ignition_on', t(6), { value: 1, lat: 12.9716, lng: 77.5946 }),
    event(V, 'alert_over_temp_raised', t(6, 10), { value: 1, soc: 64 }),
    event(V, 'alert_over_temp_cleared', t(6, 25), { value: 0 }),
    event(V, 'ignition_off', t(6, 40), { value: 0, lat: 12.99, lng: 77.61 }),
    event(V, 'charging_started', t(7), { value: 1, soc: 41 }),
    event(V, 'charging_stopped', t(8, 30), { value: 0, soc: 88.5 }),
    // The next day: outside the range asked.
    event(V, 'ignition_on', t(25), { value: 1, lat: 12.9716, lng: 77.5946 }),
    event(ODD, 'ignition_on', t(9), { value: 1 }),
    event(OTHER, 'ignition_on', t(6, 5), { value: 1 }),
    trip(V, t(6), { end: t(6, 40), duration_s: 2400, distance_m: 18_360, max_speed_kmh: 62.5, start_lat: 12.9716, start_lng: 77.5946, end_lat: 12.99, end_lng: 77.61, soc_start: 72, soc_end: 58.5 }),
    // A short trip whose state of charge was not known, and a long one.
    trip(V, t(9), { end: t(9, 5, 30), duration_s: 330, distance_m: 1_240, max_speed_kmh: 31, start_lat: 12.99, start_lng: 77.61, end_lat: 12.995, end_lng: 77.615 }),
    trip(V, t(13), { end: t(15, 7), duration_s: 7620, distance_m: 131_000, max_speed_kmh: 88, start_lat: 12.995, start_lng: 77.615, end_lat: 13.5, end_lng: 78.1, soc_start: 95, soc_end: 20, idle_s: 420, overspeed_s: 95 }),
    stop(V, t(6, 40), { end: t(9), duration_s: 8400, lat: 12.99, lng: 77.61, ignition_on_s: 0 }),
    formatLine('stops', { vehicleno: V, geofence: 'Depot A' }, { end: t(13), duration_s: 14_070, lat: 12.995, lng: 77.615, ignition_on_s: 330 }, t(9, 5, 30)),
    event(OTHER, 'moved_while_off', t(3), { value: 1, distance_m: 840, lat: 12.2, lng: 77.1 }),
    trip(OTHER, t(10), { end: t(10, 30), duration_s: 1800, distance_m: 9_000, max_speed_kmh: 50, start_lat: 1, start_lng: 1, end_lat: 2, end_lng: 2 }),
    session(V, t(7), { end: t(8, 30), duration_s: 5400, soc_start: 41, soc_end: 88.5, energy_wh: 14_120.4 }),
    session(V, t(20), { end: t(20, 45), duration_s: 2700, soc_start: 50, soc_end: 62 }),
  ]);
});

describe('telematics-fleet events', () => {
  it("prints the vehicle's events in the range, oldest first, with what each carried", async () => {
    const r = await fleet('events', '--vehicle', V, ...RANGE);
    expect(r).toEqual({
      code: 0,
      err: '',
      out: [
        'TIME                  EVENT                    VALUE  FIELDS',
        '2025-06-01T06:00:00Z  ignition_on                  1  lat=12.9716 lng=77.5946',
        '2025-06-01T06:10:00Z  alert_over_temp_raised       1  soc=64',
        '2025-06-01T06:25:00Z  alert_over_temp_cleared      0  -',
        '2025-06-01T06:40:00Z  ignition_off                 0  lat=12.99 lng=77.61',
        '2025-06-01T07:00:00Z  charging_started             1  soc=41',
        '2025-06-01T08:30:00Z  charging_stopped             0  soc=88.5',
        '',
      ].join('\n'),
    });
  });

  it('keeps to one event with --event, and to the range with --since and --until (both inclusive)', async () => {
    expect((await fleet('events', '--vehicle', V, '--since', '2025-06-01T00:00:00Z', '--until', '2025-06-02T01:00:00Z', '--event', 'ignition_on')).out).toBe(
      ['TIME                  EVENT        VALUE  FIELDS', '2025-06-01T06:00:00Z  ignition_on      1  lat=12.9716 lng=77.5946', '2025-06-02T01:00:00Z  ignition_on      1  lat=12.9716 lng=77.5946', ''].join('\n'),
    );
    const bounded = await fleet('events', '--vehicle', V, '--since', '2025-06-01T06:10:00Z', '--until', '2025-06-01T06:25:00Z');
    expect(bounded.out.split('\n').slice(1, -1).map((l) => l.split(/\s+/)[1])).toEqual(['alert_over_temp_raised', 'alert_over_temp_cleared']);
  });

  it('with --event and no --vehicle, that event of every vehicle, each row naming its vehicle', async () => {
    const r = await fleet('events', '--event', 'moved_while_off', ...RANGE);
    expect(r).toEqual({
      code: 0,
      err: '',
      out: ['VEHICLE     TIME                  EVENT            VALUE  FIELDS', `${OTHER}  2025-06-01T03:00:00Z  moved_while_off      1  distance_m=840 lat=12.2 lng=77.1`, ''].join('\n'),
    });
    const both = JSON.parse((await fleet('events', '--event', 'ignition_on', ...RANGE, '--json')).out) as Array<{ vehicleno: string }>;
    expect(both.map((e) => e.vehicleno).sort()).toEqual([ODD, V, OTHER].sort());
    expect(await fleet('events', ...RANGE)).toMatchObject({ code: 2, err: expect.stringContaining('missing --vehicle <plate> (or --event <name>, for every vehicle)') });
  });

  it('gives JSON with --json, and stops at --limit saying so', async () => {
    const r = await fleet('events', '--vehicle', V, ...RANGE, '--json', '--limit', '2');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual([
      { vehicleno: V, time: DAY + 6 * HOUR, event: 'ignition_on', value: 1, fields: { lat: 12.9716, lng: 77.5946 } },
      { vehicleno: V, time: DAY + 6 * HOUR + 10 * MIN, event: 'alert_over_temp_raised', value: 1, fields: { soc: 64 } },
    ]);
    expect(r.err).toBe('(the first 2 rows; narrow --since/--until or raise --limit for the rest)\n');
  });

  it('reads a plate with quotes and a backslash as it is, and no other', async () => {
    expect((await fleet('events', '--vehicle', ODD, ...RANGE)).out).toBe(['TIME                  EVENT        VALUE  FIELDS', '2025-06-01T09:00:00Z  ignition_on      1  -', ''].join('\n'));
    // Quoting that failed would have matched all, or been refused.
    expect((await fleet('events', '--vehicle', `x' OR "vehicleno" =~ /.*/ OR 'a' = 'a`, ...RANGE)).out).toMatch(/^no event of x' OR/);
  });

  it('says so when there is nothing, naming the vehicle and the range', async () => {
    expect(await fleet('events', '--vehicle', 'NOPE', ...RANGE)).toEqual({ code: 0, err: '', out: 'no event of NOPE from 2025-06-01T00:00:00Z to 2025-06-01T23:59:59Z\n' });
  });
});

describe('telematics-fleet trips and charging', () => {
  it('prints the trips that started in the range: duration, km, top speed, state of charge where known', async () => {
    expect(await fleet('trips', '--vehicle', V, ...RANGE)).toEqual({
      code: 0,
      err: '',
      out: [
        'START                 END                   DURATION     KM  MAX KM/H  SOC %      IDLE  OVERSPEED',
        '2025-06-01T06:00:00Z  2025-06-01T06:40:00Z   40m 00s   18.4        63  72→58.5       -          -',
        '2025-06-01T09:00:00Z  2025-06-01T09:05:30Z    5m 30s    1.2        31  -             -          -',
        '2025-06-01T13:00:00Z  2025-06-01T15:07:00Z    2h 07m  131.0        88  95→20    7m 00s     1m 35s',
        '',
      ].join('\n'),
    });
  });

  it('gives every field of a trip with --json, an unknown state of charge as null', async () => {
    const r = await fleet('trips', '--vehicle', V, '--since', '2025-06-01T09:00:00Z', '--until', '2025-06-01T09:00:00Z', '--json');
    expect(JSON.parse(r.out)).toEqual([
      {
        vehicleno: V,
        start: DAY + 9 * HOUR,
        end: DAY + 9 * HOUR + 5 * MIN + 30_000,
        duration_s: 330,
        distance_m: 1240,
        max_speed_kmh: 31,
        start_lat: 12.99,
        start_lng: 77.61,
        end_lat: 12.995,
        end_lng: 77.615,
        soc_start: null,
        soc_end: null,
        idle_s: null,
        overspeed_s: null,
        start_geofence: null,
        end_geofence: null,
      },
    ]);
  });

  it('prints the stops that started in the range: where, how long, how long with the ignition on', async () => {
    expect(await fleet('stops', '--vehicle', V, ...RANGE)).toEqual({
      code: 0,
      err: '',
      out: [
        'START                 END                   DURATION     LAT     LNG  IGNITION ON  GEOFENCE',
        '2025-06-01T06:40:00Z  2025-06-01T09:00:00Z    2h 20m   12.99   77.61           0s  -',
        '2025-06-01T09:05:30Z  2025-06-01T13:00:00Z    3h 54m  12.995  77.615       5m 30s  Depot A',
        '',
      ].join('\n'),
    });
  });

  it('prints the charging sessions, the energy where known', async () => {
    expect(await fleet('charging', '--vehicle', V, ...RANGE)).toEqual({
      code: 0,
      err: '',
      out: [
        'START                 END                   DURATION  SOC %    ENERGY WH',
        '2025-06-01T07:00:00Z  2025-06-01T08:30:00Z    1h 30m  41→88.5      14120',
        '2025-06-01T20:00:00Z  2025-06-01T20:45:00Z   45m 00s  50→62            -',
        '',
      ].join('\n'),
    });
    expect((await fleet('charging', '--vehicle', OTHER, ...RANGE)).out).toBe(`no charging session of ${OTHER} from 2025-06-01T00:00:00Z to 2025-06-01T23:59:59Z\n`);
  });
});

describe('usage, configuration and an unreachable InfluxDB', () => {
  it.each([
    [['events'], 'missing --vehicle <plate>'],
    [['trips', '--vehicle', V, '--since', 'yesterday'], '--since: "yesterday" is not a date'],
    [['charging', '--vehicle', V, '--since', '2025-06-02T00:00:00Z', '--until', '2025-06-01T00:00:00Z'], '--since is after --until'],
    [['events', '--vehicle', V, '--event', 'ignition'], '--event: "ignition" is no event'],
    [['trips', '--vehicle', V, '--limit', '0'], '--limit: "0" is not an integer >= 1'],
    [['trips', '--vehicle', V, 'extra'], 'unexpected argument "extra"'],
  ])('%j exits 2 with the reason and where to look', async (argv, reason) => {
    const r = await fleet(...argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`error: ${reason}`);
    expect(r.err).toContain(`(see telematics-fleet ${argv[0]} --help)`);
  });

  it('refuses to guess an InfluxDB: INFLUX_URL unset is a configuration error (exit 2)', async () => {
    const r = await fleetWith({ INFLUX_BUCKET: db }, 'trips', '--vehicle', V);
    expect(r).toEqual({ code: 2, out: '', err: 'error: INFLUX_URL: set it to the InfluxDB the service writes to; this tool does not assume one\n' });
    expect((await fleetWith({ INFLUX_URL: 'not a url' }, 'trips', '--vehicle', V)).code).toBe(2);
  });

  it('exits 3 with one line when InfluxDB is unreachable, refuses the token, or lacks the database', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const down = await fleetWith({ INFLUX_URL: url, INFLUX_BUCKET: db }, 'events', '--vehicle', V);
    expect(down).toEqual({ code: 3, out: '', err: `error: InfluxDB: cannot reach ${url}: ECONNREFUSED\n` });
    const denied = await fleetWith({ ...env(), INFLUX_TOKEN: 'wrong' }, 'trips', '--vehicle', V);
    expect(denied).toEqual({ code: 3, out: '', err: `error: InfluxDB: ${inject('influxUrl')} answered 401: unauthorized access\n` });
    const missing = await fleetWith({ ...env(), INFLUX_BUCKET: 'no_such_db' }, 'charging', '--vehicle', V);
    expect(missing).toEqual({ code: 3, out: '', err: 'error: InfluxDB: database not found: no_such_db\n' });
  });

  it('lists the history commands and their settings in the help', async () => {
    const r = await fleetWith({}, '--help');
    expect(r.code).toBe(0);
    for (const c of ['events', 'trips', 'stops', 'charging']) expect(r.out).toMatch(new RegExp(`^  ${c} +\\S`, 'm'));
    expect(r.out).toContain('INFLUX_URL (required');
  });
});

describe('the history queries of docs/analysts.md', () => {
  /** The guide's queries on the derived measurements, in the guide's order. */
  const queries = [...readFileSync('docs/analysts.md', 'utf8').matchAll(/```influxql\n([\s\S]*?)\n```/g)]
    .map((m) => m[1]!.trim())
    .filter((q) => /FROM "(vehicle_events|trips|charging|stops)"/.test(q));
  const now = Math.floor(Date.now() / MIN) * MIN;
  const ago = (minutes: number) => now - minutes * MIN;
  const docDb = uniqueName('historydocs');
  const run = (q: string) => influxQuery(docDb, q);

  beforeAll(async () => {
    await influxQuery(docDb, `CREATE DATABASE "${docDb}"`);
    const lines = [
      trip(V, ago(300), { end: ago(260), duration_s: 2400, distance_m: 18_000, max_speed_kmh: 60, soc_start: 80, soc_end: 70 }),
      trip(V, ago(120), { end: ago(90), duration_s: 1800, distance_m: 12_500, max_speed_kmh: 45 }),
      // Two days ago: not today's.
      trip(V, ago(2 * 24 * 60), { end: ago(2 * 24 * 60 - 30), duration_s: 1800, distance_m: 99_000, max_speed_kmh: 45 }),
      trip(OTHER, ago(100), { end: ago(50), duration_s: 3000, distance_m: 30_000, max_speed_kmh: 80 }),
      session(V, ago(3 * 24 * 60), { end: ago(3 * 24 * 60 - 90), duration_s: 5400, soc_start: 35, soc_end: 95, energy_wh: 15_000 }),
      session(V, ago(200), { end: ago(170), duration_s: 1800, soc_start: 70, soc_end: 84 }),
      event(V, 'ignition_on', ago(300), { value: 1, lat: 12.97, lng: 77.59 }),
      event(V, 'alert_over_temp_raised', ago(290), { value: 1 }),
      event(V, 'alert_over_temp_cleared', ago(280), { value: 0 }),
      event(V, 'ignition_off', ago(260), { value: 0, lat: 12.99, lng: 77.61 }),
      event(OTHER, 'alert_over_temp_raised', ago(2 * 24 * 60), { value: 1 }),
      event(OTHER, 'alert_short_circuit_raised', ago(100), { value: 1 }),
      // Eight days ago: not this week's.
      event(OTHER, 'alert_thermal_runaway_raised', ago(8 * 24 * 60), { value: 1 }),
      stop(V, ago(250), { end: ago(230), duration_s: 1200, lat: 12.99, lng: 77.61, ignition_on_s: 300 }),
      trip(V, ago(80), { end: ago(60), duration_s: 1200, distance_m: 9_000, max_speed_kmh: 70, idle_s: 360, overspeed_s: 120 }),
      trip(OTHER, ago(40), { end: ago(20), duration_s: 1200, distance_m: 9_000, max_speed_kmh: 40, idle_s: 600, overspeed_s: 0 }),
      event(V, 'overspeed_ended', ago(65), { value: 0, limit: 60, max_speed: 70, duration_s: 120, distance_m: 2_200 }),
      event(OTHER, 'moved_while_off', ago(10), { value: 1, parked_lat: 12.9, parked_lng: 77.5, lat: 12.91, lng: 77.5, distance_m: 1_112 }),
      formatLine('vehicle_events', { vehicleno: V, event: 'geofence_entered', geofence: 'Depot A', geofence_kind: 'depot' }, { value: 1, geofence_id: 1 }, ago(70)),
      formatLine('vehicle_events', { vehicleno: V, event: 'geofence_exited', geofence: 'Depot A', geofence_kind: 'depot' }, { value: 0, geofence_id: 1 }, ago(50)),
      event(OTHER, 'soc_low', ago(30), { value: 1, soc: 19, battery_voltage: 47.9 }),
      event(OTHER, 'soc_recovered', ago(20), { value: 0, soc: 31 }),
      event(V, 'battery_swapped', ago(15), { value: 1, bms_id_old: 410_233, bms_id_new: 733_019, soc: 96 }),
      event(OTHER, 'soc_drain_while_parked', ago(5), { value: 1, soc_from: 64, soc_to: 58, over_s: 7_200 }),
      formatLine('vehicle_events', { vehicleno: OTHER, event: 'fuel_drop', unit: 'litres' }, { value: 1, fuel_before: 40, fuel_after: 31, fuel_amount: 9, over_s: 900 }, ago(25)),
      formatLine('vehicle_events', { vehicleno: OTHER, event: 'fuel_refuel', unit: 'litres' }, { value: 1, fuel_before: 31, fuel_after: 60, fuel_amount: 29, over_s: 300 }, ago(12)),
    ];
    const res = await fetch(`${inject('influxRawUrl')}/write?db=${docDb}&precision=ms`, { method: 'POST', body: lines.join('\n') });
    expect(res.status).toBe(204);
  });

  it('are the seventeen questions the guide asks of the history', () => {
    expect(queries).toHaveLength(17);
  });

  it('fuel drops and refuels, with the levels before and after', async () => {
    expect((await run(queries[14]!)).map((r) => [r.vehicleno, r.time, r.event, r.fuel_before, r.fuel_after, r.fuel_amount, r.unit, r.over_s])).toEqual([
      [OTHER, ago(25), 'fuel_drop', 40, 31, 9, 'litres', 900],
      [OTHER, ago(12), 'fuel_refuel', 31, 60, 29, 'litres', 300],
    ]);
  });

  it('a vehicle’s days in the fleet’s zone: trips and charging cut at local midnight, as the summary cuts them', async () => {
    // The guide's days are Kolkata's; which trips share a day follows from where local midnight falls now.
    const days = localDays(ago(7 * 24 * 60), now, 'Asia/Kolkata');
    const trips = [
      { time: ago(300), distance_m: 18_000, duration_s: 2400, idle_s: 0 },
      { time: ago(120), distance_m: 12_500, duration_s: 1800, idle_s: 0 },
      { time: ago(80), distance_m: 9_000, duration_s: 1200, idle_s: 360 },
      { time: ago(2 * 24 * 60), distance_m: 99_000, duration_s: 1800, idle_s: 0 },
    ];
    const want = days
      .map((d) => ({ d, ts: trips.filter((t) => t.time >= d.start && t.time < d.end) }))
      .filter(({ ts }) => ts.length > 0)
      .map(({ d, ts }) => [d.start, ts.length, ts.reduce((n, t) => n + t.distance_m, 0) / 1000, ts.reduce((n, t) => n + t.duration_s, 0) / 3600, ts.reduce((n, t) => n + t.idle_s, 0) / 3600]);
    const got = (await run(queries[15]!)).map((r) => [r.time, r.trips, r.km, r.driving_h, r.idle_h ?? 0]);
    expect(got.map((g) => g.map((x) => (typeof x === 'number' ? Number(x.toFixed(9)) : x)))).toEqual(want.map((g) => g.map((x) => Number(x.toFixed(9)))));
    // Sessions: three days ago (with its energy) and today's without.
    const sessions = [{ time: ago(3 * 24 * 60), energy_wh: 15_000 }, { time: ago(200), energy_wh: null }];
    const wantSessions = days
      .map((d) => ({ d, ss: sessions.filter((x) => x.time >= d.start && x.time < d.end) }))
      .filter(({ ss }) => ss.length > 0)
      .map(({ d, ss }) => [d.start, ss.length, ss.some((x) => x.energy_wh !== null) ? ss.reduce((n, x) => n + (x.energy_wh ?? 0), 0) : null]);
    expect((await run(queries[16]!)).map((r) => [r.time, r.sessions, r.energy_wh])).toEqual(wantSessions);
  });

  it('charge drained while parked', async () => {
    expect((await run(queries[13]!)).map((r) => [r.vehicleno, r.time, r.soc_from, r.soc_to, r.over_s])).toEqual([[OTHER, ago(5), 64, 58, 7_200]]);
  });

  it('battery swaps, with the ids before and after', async () => {
    expect((await run(queries[12]!)).map((r) => [r.vehicleno, r.time, r.bms_id_old, r.bms_id_new, r.bat_id_old, r.soc])).toEqual([[V, ago(15), 410_233, 733_019, null, 96]]);
  });

  it('which vehicles ran low on charge', async () => {
    expect((await run(queries[11]!)).map((r) => [r.vehicleno, r.time, r.soc, r.battery_voltage])).toEqual([[OTHER, ago(30), 19, 47.9]]);
  });

  it("how far the vehicle drove today, and in how many trips; and each of today's trips", async () => {
    expect((await run(queries[0]!)).map((r) => [r.km, r.trips])).toEqual([[39.5, 3]]);
    expect((await run(queries[1]!)).map(({ time, ...r }) => [time, r])).toEqual([
      [ago(300), { end: ago(260), minutes: 40, km: 18, max_speed_kmh: 60, soc_start: 80, soc_end: 70 }],
      [ago(120), { end: ago(90), minutes: 30, km: 12.5, max_speed_kmh: 45, soc_start: null, soc_end: null }],
      [ago(80), { end: ago(60), minutes: 20, km: 9, max_speed_kmh: 70, soc_start: null, soc_end: null }],
    ]);
  });

  it('where it stopped, and for how long', async () => {
    expect(await run(queries[6]!)).toEqual([{ time: ago(250), minutes: 20, lat: 12.99, lng: 77.61, ignition_on_s: 300 }]);
  });

  it('idling and speeding per vehicle this week; each time over the limit', async () => {
    expect((await run(queries[7]!)).map((r) => [r.vehicleno, r.idle_minutes, r.overspeed_minutes])).toEqual([
      [V, 6, 2],
      [OTHER, 10, 0],
    ]);
    expect((await run(queries[8]!)).map((r) => [r.vehicleno, r.time, r.limit, r.max_speed, r.duration_s, r.distance_m])).toEqual([[V, ago(65), 60, 70, 120, 2_200]]);
  });

  it('who entered and left which geofence', async () => {
    expect((await run(queries[10]!)).map((r) => [r.vehicleno, r.time, r.event, r.geofence, r.geofence_kind, r.crossed])).toEqual([
      [V, ago(70), 'geofence_entered', 'Depot A', 'depot', null],
      [V, ago(50), 'geofence_exited', 'Depot A', 'depot', null],
    ]);
  });

  it('vehicles moved with the ignition off', async () => {
    expect((await run(queries[9]!)).map((r) => [r.vehicleno, r.time, r.parked_lat, r.lat, r.distance_m])).toEqual([[OTHER, ago(10), 12.9, 12.91, 1_112]]);
  });

  it('when it charged this week, from what state of charge to what', async () => {
    expect(await run(queries[2]!)).toEqual([
      { time: ago(3 * 24 * 60), end: ago(3 * 24 * 60 - 90), minutes: 90, soc_start: 35, soc_end: 95, energy_wh: 15_000 },
      { time: ago(200), end: ago(170), minutes: 30, soc_start: 70, soc_end: 84, energy_wh: null },
    ]);
  });

  it("which alarms were raised this week, per flag; and one vehicle's raised and cleared", async () => {
    expect((await run(queries[3]!)).map((r) => [r.event, r.raised])).toEqual([
      ['alert_over_temp_raised', 2],
      ['alert_short_circuit_raised', 1],
    ]);
    expect((await run(queries[4]!)).map((r) => [r.time, r.event, r.value])).toEqual([
      [ago(290), 'alert_over_temp_raised', 1],
      [ago(280), 'alert_over_temp_cleared', 0],
    ]);
  });

  it('ignition on and off times, with where', async () => {
    expect(await run(queries[5]!)).toEqual([
      { time: ago(300), event: 'ignition_on', lat: 12.97, lng: 77.59 },
      { time: ago(260), event: 'ignition_off', lat: 12.99, lng: 77.61 },
    ]);
  });
});
