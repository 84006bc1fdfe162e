/**
 * The day per vehicle (issue #39) through the real service: three drives around the night the clocks go
 * back in Europe/Berlin (2026-10-25, a day of 25 hours), pushed shuffled within the reorder window with
 * some records twice; `telematics-fleet summary` cuts the derived trips into the fleet's local days, and
 * the analysts' daily query (InfluxQL `tz()`) cuts them the same on influxd.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runProgram } from '../../src/cli/program.js';
import { FLEET } from '../../src/ingest/fleet/commands.js';
import { captureIO } from '../harness/io.js';
import { disordered } from '../harness/disorder.js';
import { startTestService, type TestService } from '../harness/service.js';

const V = 'DST-1';
const ZONE = 'Europe/Berlin';
const north = (m: number) => m / 111_195.08;
/** A drive of `minutes` at 36 km/h from `iso`, a fix a second, the ignition off at its last fix. */
function drive(iso: string, minutes: number): Array<{ vehicleno: string; type: 'gps'; data: Record<string, number> }> {
  const t0 = Date.parse(iso);
  const n = minutes * 60;
  return Array.from({ length: n + 1 }, (_, j) => ({ vehicleno: V, type: 'gps' as const, data: { time: t0 + j * 1000, lat: 52.5 + north(10 * j), lng: 13.4, alti: 40, speed: j === n ? 0 : 36, ignstatus: j === n ? 0 : 1 } }));
}

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ FLEET_TIMEZONE: ZONE });
  const records = [
    // 23:57 CEST on the 24th, on past midnight: the 24th's (the day it set off).
    ...drive('2026-10-24T21:57:00Z', 6),
    // 00:15 CEST on the 25th: the 25th's, though still the 24th in UTC.
    ...drive('2026-10-24T22:15:00Z', 6),
    // 02:30 CET, the second 02:30 of the night the clocks went back: the 25th's.
    ...drive('2026-10-25T01:30:00Z', 6),
    // 00:30 CET on the 26th: the 26th's, though still the 25th in UTC.
    ...drive('2026-10-25T23:30:00Z', 6),
  ];
  const shuffled = disordered(records);
  for (let i = 0; i < shuffled.length; i += 1_000) expect((await svc.post('/push/bulk', { bulkData: shuffled.slice(i, i + 1_000) })).status).toBe(202);
  await svc.waitForRows(`SELECT "duration_s" FROM "trips" WHERE "vehicleno" = '${V}'`, 4, 60_000);
}, 90_000);

afterAll(async () => {
  await svc?.close();
});

const fleet = async (...argv: string[]) => {
  const cli = captureIO({ INFLUX_URL: svc.cfg.INFLUX_URL, INFLUX_TOKEN: svc.cfg.INFLUX_TOKEN, INFLUX_BUCKET: svc.cfg.INFLUX_BUCKET, FLEET_TIMEZONE: ZONE });
  const code = await runProgram(FLEET, argv, cli.io);
  return { code, out: cli.out(), err: cli.err() };
};

it('telematics-fleet summary: local days of 24, 25 and 24 hours, each trip on the day it set off', async () => {
  const { code, out, err } = await fleet('summary', '--vehicle', V, '--from', '2026-10-24', '--to', '2026-10-26', '--json');
  expect(err).toBe('');
  expect(code).toBe(0);
  const days = JSON.parse(out) as Array<Record<string, number | string | null>>;
  expect(days.map((d) => [d.day, new Date(d.start as number).toISOString(), ((d.end as number) - (d.start as number)) / 3_600_000, d.trips, d.timezone])).toEqual([
    ['2026-10-24', '2026-10-23T22:00:00.000Z', 24, 1, ZONE],
    ['2026-10-25', '2026-10-24T22:00:00.000Z', 25, 2, ZONE],
    ['2026-10-26', '2026-10-25T23:00:00.000Z', 24, 1, ZONE],
  ]);
  // Each drive: 6 minutes at 36 km/h, 3.6 km; first and last report are the day's first and last fix.
  expect(days.map((d) => [d.driving_s, Math.round(d.distance_m as number)])).toEqual([
    [360, 3_600],
    [720, 7_200],
    [360, 3_600],
  ]);
  expect(days.map((d) => [d.first_report, d.last_report])).toEqual([
    [Date.parse('2026-10-24T21:57:00Z'), Date.parse('2026-10-24T21:59:59Z')],
    [Date.parse('2026-10-24T22:00:00Z'), Date.parse('2026-10-25T01:36:00Z')],
    [Date.parse('2026-10-25T23:30:00Z'), Date.parse('2026-10-25T23:36:00Z')],
  ]);
  // The table: local times of the first and last report.
  const table = await fleet('summary', '--vehicle', V, '--from', '2026-10-25', '--to', '2026-10-25');
  expect(table.out.split('\n')[0]).toBe(`${V}, days in ${ZONE}`);
  expect(table.out).toMatch(/2026-10-25 +2 +7\.2 +12m 00s .* 00:00 +02:36/);
});

it('the analysts’ daily query cuts the same days with tz() on influxd', async () => {
  const rows = await svc.query(
    `SELECT count("duration_s") AS "trips", sum("distance_m") / 1000 AS "km" FROM "trips" WHERE "vehicleno" = '${V}' AND time >= '2026-10-23T22:00:00Z' AND time < '2026-10-26T23:00:00Z' GROUP BY time(1d) fill(none) tz('${ZONE}')`,
  );
  expect(rows.map((r) => [new Date(r.time as number).toISOString(), r.trips])).toEqual([
    ['2026-10-23T22:00:00.000Z', 1],
    ['2026-10-24T22:00:00.000Z', 2],
    ['2026-10-25T23:00:00.000Z', 1],
  ]);
});
