/**
 * A pack's life across three vehicles (issue #49), through the whole service on real Redis and InfluxDB:
 * CAN records pushed to the receiver as senders deliver them (bulks out of order within, a stretch of one
 * vehicle's hour uploaded after everything else, past the reorder window), the workers derive `pack_life`,
 * and what a battery owner reads back (the rows by the pack's tag, `telematics-fleet pack <id>`) is the
 * pack's one history: which vehicle it was in, from when to when, and the charge and energy it moved there,
 * each figure worked out here from the records pushed, not from the service's code.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runProgram } from '../../src/cli/program.js';
import { influxQL, startInflux, type LocalInflux } from '../../src/devstack/influxd.js';
import { FLEET } from '../../src/ingest/fleet/commands.js';
import { packCycles } from '../../src/ingest/events/events.testkit.js';
import { mulberry32 } from '../../src/upstream/emulator/prng.js';
import { captureIO } from '../harness/io.js';
import { startTestService, uniqueName, waitUntil, type TestService } from '../harness/service.js';

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** Yesterday's UTC midnight: the third vehicle's stint crosses it, so its first day's row is written. */
const MIDNIGHT = Math.floor(Date.now() / DAY) * DAY - DAY;
const PACK = 4_242_001;
const [A, B, C, D] = ['PK-LIFE-A', 'PK-LIFE-B', 'PK-LIFE-C', 'PK-LIFE-D'];

type Rec = { vehicleno: string; type: 'can'; data: Record<string, number> };

/**
 * `pack`'s records in `v` every 10 s over [from, to] (both included): a steady `current` (A; + charging)
 * at `volts`, `soc` moving by `socPerHour`, its charge count, three temperature sensors at `celsius` and a
 * sentinel fourth (an unused slot, -40, which must never count as its temperature).
 */
function stint(v: string, pack: number, from: number, to: number, current: number, volts: number, soc0: number, socPerHour: number, cycle: number, celsius: number): Rec[] {
  const out: Rec[] = [];
  for (let t = from; t <= to; t += 10 * S) {
    const soc = Math.round(soc0 + (socPerHour * (t - from)) / HOUR);
    out.push({
      vehicleno: v,
      type: 'can',
      data: { time: t, bms_id: pack, bat_id_1: pack + 500_000, current, battery_voltage: volts, soc, charge_cycle: cycle, battery_capacity: 80, no_of_temperature_sensors: 4, cell_temperature_01: celsius, cell_temperature_02: celsius - 1, cell_temperature_03: celsius - 2, cell_temperature_04: -40 },
    });
  }
  return out;
}

// Pack PACK: an hour discharging in A (20 A at 52 V) until A takes another pack; an hour charging in B
// (30 A at 54 V) until B takes another; then in C from 30 minutes before midnight, discharging (10 A at
// 51 V), where it still is. Each other pack is only there to end PACK's stint.
const A_FROM = MIDNIGHT - 5 * HOUR;
const B_FROM = MIDNIGHT - 3 * HOUR;
const C_FROM = MIDNIGHT - 30 * MIN;
const inClimb = (r: Rec) => r.vehicleno === A && r.data.time! >= A_FROM + 20 * MIN && r.data.time! < A_FROM + 40 * MIN;
const RECORDS: Record<string, Rec[]> = {
  // Minutes 20 to 40 in A are a climb: 40 A and the pack at 40 °C (the stretch held back below).
  [A]: [...stint(A, PACK, A_FROM, A_FROM + HOUR, -20, 52, 90, -25, 311, 30).map((r) => (inClimb(r) ? { ...r, data: { ...r.data, current: -40, cell_temperature_01: 40 } } : r)), ...stint(A, 4_242_002, A_FROM + HOUR + 10 * S, A_FROM + HOUR + 10 * MIN, -20, 52, 95, -25, 90, 30)],
  [B]: [...stint(B, 4_242_003, B_FROM - 10 * MIN, B_FROM - 10 * S, 0, 50, 40, 0, 77, 25), ...stint(B, PACK, B_FROM, B_FROM + HOUR, 30, 54, 30, 37.5, 311, 38), ...stint(B, 4_242_004, B_FROM + HOUR + 10 * S, B_FROM + HOUR + 10 * MIN, 0, 52, 70, 0, 12, 25)],
  [C]: stint(C, PACK, C_FROM, MIDNIGHT + 20 * MIN, -10, 51, 67, -12.5, 312, 47),
};

/**
 * What the records say of PACK in each vehicle: Ah = A × h, kWh = V × A × h / 1000 (in A, 20 A for the hour
 * and 20 A more over the climb's 20 minutes: the trapezoids into and out of it are half a step each), and
 * the seconds at each temperature band, each interval at the band of the reading that began it.
 */
const A_AH = 20 + 20 / 3;
const EXPECTED = [
  { vehicleno: A, time: A_FROM, end: A_FROM + HOUR, duration_s: 3600, left: 1, ah_in: 0, ah_out: A_AH, kwh_in: 0, kwh_out: (52 * A_AH) / 1000, cycle_start: 311, cycle_end: 311, temp_mild_s: 2400, temp_warm_s: 1200, temp_hot_s: 0 },
  { vehicleno: B, time: B_FROM, end: B_FROM + HOUR, duration_s: 3600, left: 1, ah_in: 30, ah_out: 0, kwh_in: (54 * 30) / 1000, kwh_out: 0, cycle_start: 311, cycle_end: 311, temp_mild_s: 0, temp_warm_s: 3600, temp_hot_s: 0 },
  // Still in C: its row to midnight, written at C's first record of the next day.
  { vehicleno: C, time: C_FROM, end: MIDNIGHT, duration_s: 1800, left: null, ah_in: 0, ah_out: 5, kwh_in: 0, kwh_out: (51 * 10 * 0.5) / 1000, cycle_start: 312, cycle_end: 312, temp_mild_s: 0, temp_warm_s: 0, temp_hot_s: 1800 },
];

/**
 * A fourth vehicle's pack, ten deep charges (20 → 90 %, a record every 30 s charging): it holds 80 Ah of
 * its rated 100, and its BMS says soh 100 all along (the events' testkit `packCycles`, from three days ago).
 */
const HEALTH_PACK = 4_242_009;
const TRUE_AH = 80;
const health = packCycles({ cycles: 10, capacityAh: () => TRUE_AH, soh: () => 100, ratedAh: 100, bmsId: HEALTH_PACK, low: 20, high: 90 }, MIDNIGHT - 3 * DAY);
RECORDS[D] = health.records.map((r) => ({ vehicleno: D, type: 'can', data: { time: r.time, ...r.fields } }));

let influx: LocalInflux;
let db: string;
let svc: TestService;
/** The rows as written before the climb's records came. */
let beforeLate: Array<Record<string, unknown>> = [];

const push = async (records: readonly Rec[]) => {
  for (let i = 0; i < records.length; i += 500) expect((await svc.post('/push/bulk', { bulkData: records.slice(i, i + 500) })).status).toBe(202);
};
/** `records` in 60-s bulks of record time, each shuffled within (a sender's batches are not in order). */
function bulks(records: readonly Rec[], seed: number): Rec[][] {
  const by = new Map<number, Rec[]>();
  for (const r of records) by.set(Math.floor(r.data.time! / MIN), [...(by.get(Math.floor(r.data.time! / MIN)) ?? []), r]);
  const rnd = mulberry32(seed);
  return [...by.entries()].sort((x, y) => x[0] - y[0]).map(([, rs]) => rs.map((r) => [rnd(), r] as const).sort((x, y) => x[0] - y[0]).map(([, r]) => r));
}
const query = (q: string) => influxQL<Record<string, unknown>>(influx.rawUrl, db, q);
const rowsOfPack = () => query(`SELECT * FROM "pack_life" WHERE "pack" = '${PACK}' AND "duration_s" >= 0 ORDER BY time ASC`);

beforeAll(async () => {
  influx = await startInflux();
  db = uniqueName('packlife');
  await influx.createDatabase(db);
  svc = await startTestService({ INFLUX_URL: influx.url, INFLUX_TOKEN: influx.token, INFLUX_BUCKET: db, EVENTS_CORRECTION_DELAY: '500ms', EVENTS_WINDOW: '15s', ADMIN_AUTH: 'none' }, { createDatabase: false });
  // C first, then B, then A with minutes 20–40 of its hour held back: uploaded after all the rest (a
  // coverage gap's buffer), long past the reorder window, so the row already written is corrected.
  for (const v of [D, C, B, A]) for (const b of bulks(RECORDS[v]!.filter((r) => !inClimb(r)), v.charCodeAt(v.length - 1))) await push(b);
  await waitUntil(async () => (await rowsOfPack()).length === 3, 60_000, 'the three rows of the pack');
  beforeLate = (await rowsOfPack()).map((r) => rounded(shown(r)));
  await push(RECORDS[A]!.filter(inClimb));
}, 180_000);

afterAll(async () => {
  await svc?.close();
  await influx?.stop();
});

/** The fields a battery owner reads of a row, as EXPECTED names them. */
const shown = (r: Record<string, unknown>) => Object.fromEntries(Object.keys(EXPECTED[0]!).map((k) => [k, k === 'time' || k === 'end' ? Number(r[k] === undefined ? NaN : typeof r[k] === 'string' ? Date.parse(r[k] as string) : r[k]) : (r[k] ?? null)]));
const rounded = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, x]) => [k, typeof x === 'number' ? Math.round(x * 1e9) / 1e9 : x]));

it('writes the pack’s one history across the three vehicles it visited, with the right times and energy, late records corrected in', async () => {
  let rows: Array<Record<string, unknown>> = [];
  await waitUntil(
    async () => {
      rows = await rowsOfPack();
      return JSON.stringify(rows.map((r) => rounded(shown(r)))) === JSON.stringify(EXPECTED.map(rounded));
    },
    90_000,
    'the pack’s rows those its records make',
  ).catch(() => undefined);
  expect(rows.map((r) => rounded(shown(r)))).toEqual(EXPECTED.map(rounded));
  // Written before the climb came, without it (20 A across the gap), and corrected since.
  expect(beforeLate[0]).toMatchObject({ vehicleno: A, ah_out: 20 });
  // The unused sensor (-40) is no temperature of the pack's: the hottest is the first sensor's.
  expect(rows.map((r) => r.temperature_max)).toEqual([40, 38, 47]);
  // The other packs are in their own histories, not PACK's.
  expect(new Set((await query(`SELECT * FROM "pack_life" WHERE "vehicleno" = '${A}' AND "duration_s" >= 0`)).map((r) => r.pack))).toEqual(new Set([String(PACK)]));
}, 120_000);

it('`telematics-fleet pack <id>` tells the same stints and their totals', async () => {
  const env = { INFLUX_URL: influx.url, INFLUX_TOKEN: influx.token, INFLUX_BUCKET: db };
  const range = ['--since', new Date(A_FROM - HOUR).toISOString(), '--until', new Date(MIDNIGHT + HOUR).toISOString()];
  const json = captureIO(env);
  expect(await runProgram(FLEET, ['pack', String(PACK), ...range, '--json'], json.io), json.err()).toBe(0);
  const stints = JSON.parse(json.out()) as Array<Record<string, unknown>>;
  expect(stints.map((s) => rounded({ vehicleno: s.vehicleno, from: s.from, to: s.to, left: s.left, ahIn: s.ahIn, ahOut: s.ahOut, kwhIn: s.kwhIn, kwhOut: s.kwhOut }))).toEqual(
    EXPECTED.map((e) => rounded({ vehicleno: e.vehicleno, from: e.time, to: e.end, left: e.left === 1, ahIn: e.ah_in, ahOut: e.ah_out, kwhIn: e.kwh_in, kwhOut: e.kwh_out })),
  );
  const table = captureIO(env);
  expect(await runProgram(FLEET, ['pack', String(PACK), ...range], table.io), table.err()).toBe(0);
  const lines = table.out().trim().split('\n');
  expect(lines.map((l) => l.split(/\s+/)[0])).toEqual(['VEHICLE', A, B, C, 'total']);
  // The totals: 30 Ah in and 26.7 + 5 out, 1.62 kWh in and 1.387 + 0.255 out, over three vehicles.
  expect(lines.at(-1)).toMatch(/^total \(3 vehicles\)\s.*\s30\s+31\.7\s+1\.62\s+1\.64\s/);
}, 60_000);

it('measures the pack’s capacity at each deep charge within 5 % of what it holds, and flags its BMS saying 100 % all along', async () => {
  let rows: Array<Record<string, unknown>> = [];
  await waitUntil(async () => (rows = await query(`SELECT * FROM "charging" WHERE "vehicleno" = '${D}' AND "duration_s" >= 0 ORDER BY time ASC`)).length === health.charges.length, 60_000, 'the ten charging sessions').catch(() => undefined);
  expect(rows.map((r) => Number(r.time))).toEqual(health.charges.map((c) => c.start));
  for (const r of rows) {
    const estimate = Number(r.capacity_ah_estimate);
    expect(Math.abs(estimate - TRUE_AH) / TRUE_AH).toBeLessThan(0.05);
    // Its stated bound covers what the pack holds.
    expect(Math.abs(estimate - TRUE_AH)).toBeLessThanOrEqual((estimate * Number(r.capacity_uncertainty_pct)) / 100);
    expect(r.pack).toBe(String(HEALTH_PACK));
  }
  // Rated 100 Ah × soh 100 % is outside every estimate's bound: told once, at the third deep charge's end, of the pack.
  const flagged = await query(`SELECT * FROM "vehicle_events" WHERE "vehicleno" = '${D}' AND "event" =~ /^bms_soh_/`);
  expect(flagged.map((e) => [e.event, Number(e.time), e.pack, e.soh])).toEqual([['bms_soh_disagrees', Number(rows[2]!.end), String(HEALTH_PACK), 100]]);
}, 90_000);
