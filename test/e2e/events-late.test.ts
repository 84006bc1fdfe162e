/**
 * Outputs that follow from the records, not from when they arrive (issue #45), through the real service
 * on real Redis and InfluxDB: each case pushes a vehicle's records as a sender or a device really delivers
 * them (re-sent after a timeout, through a slow write, GPS minutes behind CAN, hours of history uploaded
 * after lost coverage, a safety alarm arriving late), beside an in-order twin that gets the same records in
 * order; once all are in, what an analyst reads back (`vehicle_events`, `trips`, `stops`, `charging`, the
 * standing rows) and what the webhook told, applied as docs/events.md says, equal the twin's.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { influxQL, startInflux, type LocalInflux } from '../../src/devstack/influxd.js';
import { mulberry32 } from '../../src/upstream/emulator/prng.js';
import { readDays, influxTargetOf } from '../../src/ingest/fleet/history.js';
import { localDays } from '../../src/ingest/fleet/days.js';
import { startTestService, uniqueName, waitUntil, type TestService } from '../harness/service.js';

const SECRET = `whsec_${Buffer.from('events-late-test-secret-012345').toString('base64')}`;
const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;
const T = Math.floor(Date.now() / HOUR) * HOUR - 6 * HOUR;
const north = (m: number) => m / 111_195.08;

type Rec = { vehicleno: string; type: 'gps' | 'can'; data: Record<string, number> };
const gps = (v: string, time: number, lat: number, speed: number, ign: number): Rec => ({ vehicleno: v, type: 'gps', data: { time, lat, lng: 77.59, alti: 900, speed, ignstatus: ign } });
const can = (v: string, time: number, fields: Record<string, number>): Rec => ({ vehicleno: v, type: 'can', data: { time, ...fields } });

/** A drive of `seconds` at 36 km/h from `t0`, GPS and CAN a second each (CAN half a second after), the runaway raised over [from, to) seconds. */
function drive(v: string, t0: number, seconds: number, runaway: readonly [number, number] = [Infinity, Infinity]): Rec[] {
  const out: Rec[] = [];
  for (let j = 0; j <= seconds; j++) {
    const t = t0 + j * S;
    out.push(gps(v, t, 12.9 + north(10 * j), j === 0 || j === seconds ? 0 : 36, j === seconds ? 0 : 1));
    out.push(can(v, t + 500, { soc: 80 - Math.floor(j / 60), current: -25, battery_voltage: 51, alert_thermal_runaway: j >= runaway[0] && j < runaway[1] ? 1 : 0 }));
  }
  return out;
}

/** Records in bulks of `size` of record time, in order; `shuffle`: each bulk's records shuffled (out of order within it). */
function bulks(records: readonly Rec[], t0: number, size: number, shuffle = false): Rec[][] {
  const by = new Map<number, Rec[]>();
  for (const r of [...records].sort((a, b) => a.data.time! - b.data.time!)) {
    const k = Math.floor((r.data.time! - t0) / size);
    by.set(k, [...(by.get(k) ?? []), r]);
  }
  const rnd = mulberry32(7);
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([, rs]) => (shuffle ? rs.map((r) => [rnd(), r] as const).sort((a, b) => a[0] - b[0]).map(([, r]) => r) : rs));
}

const twin = (v: string) => `${v}-TWIN`;
const asTwin = (rs: readonly Rec[]): Rec[] => rs.map((r) => ({ ...r, vehicleno: twin(r.vehicleno) }));

let influx: LocalInflux;
let db: string;
let svc: TestService;
let hook: Server;
/** Every webhook delivery, in order: its webhook-id, type and data. */
const delivered: Array<{ id: string; type: string; data: Record<string, unknown> }> = [];

const push = async (records: readonly Rec[]) => {
  for (let i = 0; i < records.length; i += 1_000) expect((await svc.post('/push/bulk', { bulkData: records.slice(i, i + 1_000) })).status).toBe(202);
};
const query = (q: string) => influxQL<Record<string, unknown>>(influx.rawUrl, db, q);

const MEASUREMENTS = { vehicle_events: '"value" >= 0', trips: '"duration_s" >= 0', stops: '"duration_s" >= 0', charging: '"duration_s" >= 0' } as const;
const MARKS = new Set(['vehicleno', 'late', 'revision', 'retracted']);

/** What an analyst reads of a vehicle: each derived measurement's standing rows, marks of correction aside. */
async function outputs(v: string): Promise<Record<string, Array<Record<string, unknown>>>> {
  const out: Record<string, Array<Record<string, unknown>>> = {};
  for (const [m, standing] of Object.entries(MEASUREMENTS)) {
    const rows = await query(`SELECT * FROM "${m}" WHERE "vehicleno" = '${v}' AND ${standing}`);
    out[m] = rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k, x]) => !MARKS.has(k) && x !== null)));
  }
  return out;
}

type Outputs = Awaited<ReturnType<typeof outputs>>;

/**
 * Waits until the twin has told what `done` looks for, and the vehicle's outputs are the twin's (and stay
 * so through a second look), then returns both.
 */
async function settled(v: string, done: (o: Outputs) => boolean, timeoutMs = 90_000) {
  let mine = await outputs(v);
  let theirs = await outputs(twin(v));
  await waitUntil(
    async () => {
      [mine, theirs] = [await outputs(v), await outputs(twin(v))];
      if (!done(theirs) || JSON.stringify(mine) !== JSON.stringify(theirs)) return false;
      await new Promise((r) => setTimeout(r, 1_500));
      return JSON.stringify(await outputs(v)) === JSON.stringify(mine);
    },
    timeoutMs,
    `${v}'s outputs those of its in-order twin`,
  ).catch(() => undefined);
  return { mine, theirs };
}
const withTrip = (o: Outputs) => o.trips!.length > 0;
const withEvents = (n: number) => (o: Outputs) => o.vehicle_events!.length >= n;

/**
 * What a webhook receiver holds for a vehicle, applying deliveries as docs/events.md says: by `data.id`,
 * a first delivery or a `.corrected` one sets it, a `.retracted` one removes it.
 */
function heldBy(v: string): Map<string, Record<string, unknown>> {
  const held = new Map<string, Record<string, unknown>>();
  for (const d of delivered) {
    if (d.data.vehicleno !== v) continue;
    const id = String(d.data.id);
    if (d.type.endsWith('.retracted')) held.delete(id);
    else held.set(id, d.data);
  }
  return held;
}
const kinds = (held: Map<string, Record<string, unknown>>) => [...held.values()].map((d) => `${String(d.event ?? 'trip')}@${String(d.time ?? d.start)}`).sort();

beforeAll(async () => {
  const wh = new Webhook(SECRET);
  hook = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const payload = wh.verify(body, { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) }) as { type: string; data: Record<string, unknown> };
      delivered.push({ id: String(req.headers['webhook-id']), type: payload.type, data: payload.data });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  // A private InfluxDB: one write is slowed below, which must slow no other test's.
  influx = await startInflux();
  db = uniqueName('late');
  await influx.createDatabase(db);
  svc = await startTestService(
    {
      INFLUX_URL: influx.url,
      INFLUX_TOKEN: influx.token,
      INFLUX_BUCKET: db,
      EVENTS_CORRECTION_DELAY: '500ms',
      // A window above the bulks' disorder (10 s), short enough that a vehicle's last records commit soon.
      EVENTS_WINDOW: '15s',
      // The records are hours old: the status job would tell each vehicle silent (SILENT_AFTER) once it
      // ran, a minute in; these cases are of what the records say, not of silence.
      FLEET_STATUS_INTERVAL: '1h',
      EVENTS_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks`,
      EVENTS_WEBHOOK_SECRET: SECRET,
      ADMIN_AUTH: 'none',
    },
    { createDatabase: false },
  );

  // A slow write: a 6-minute drive in twelve 30-s bulks, each acknowledged before the next; InfluxDB
  // answers the first bulk's write 3 s late, so the later bulks are written before it.
  const slow = drive('LT-SLOW', T, 360);
  influx.front.delayNextWrites(3_000);
  for (const b of bulks(slow, T, 30 * S)) await push(b);

  // A re-send: a 7-minute drive with a 20-s thermal runaway, pushed in 10-s bulks each out of order
  // within it; then five of them sent again (a sender's retry after a timeout), one with its records'
  // keys reordered.
  const resend = drive('LT-RESEND', T + HOUR, 420, [50, 70]);
  const resendBulks = bulks(resend, T + HOUR, 10 * S, true);
  for (const b of resendBulks) await push(b);
  for (const k of [3, 5, 6, 7]) await push(resendBulks[k]!);
  await push(resendBulks[20]!.map((r) => ({ ...r, data: Object.fromEntries(Object.entries(r.data).reverse()) })));

  // GPS behind CAN: parked, then a 10-min drive with a 90-s regen (+12 A, no load_status) from minute 4;
  // the CAN pushed as it comes, the drive's GPS in one bulk after it.
  const t2 = T + 2 * HOUR;
  const behind: Rec[] = [gps('LT-GPSLAG', t2 - MIN, 12.9, 0, 0)];
  for (let j = 0; j <= 600; j++) {
    behind.push(gps('LT-GPSLAG', t2 + j * S, 12.9 + north(10 * j), j === 600 ? 0 : 36, j === 600 ? 0 : 1));
    behind.push(can('LT-GPSLAG', t2 + j * S + 500, { soc: 60 - Math.floor(j / 60), current: j >= 240 && j < 330 ? 12 : -25, battery_voltage: 51 }));
  }
  await push(behind.slice(0, 1));
  for (const b of bulks(behind.filter((r) => r.type === 'can'), t2, 10 * S)) await push(b);
  await push(behind.filter((r) => r.type === 'gps').slice(1));

  // A history upload: a 60-min drive, minutes 10–50 out of coverage; the live part pushed as it comes, the
  // 40 buffered minutes after it in 60-s bulks, a 10-s runaway at minute 30 inside them; then all 40 again.
  const t3 = T + 3 * HOUR;
  const hour = drive('LT-UPLOAD', t3, 3_600, [1_800, 1_810]);
  const gap = (r: Rec) => r.data.time! >= t3 + 10 * MIN && r.data.time! < t3 + 50 * MIN;
  for (const b of bulks(hour.filter((r) => !gap(r)), t3, 10 * S)) await push(b);
  const upload = bulks(hour.filter(gap), t3, MIN);
  for (const b of upload) await push(b);

  // A late raise outside an episode: CAN every second for 2 min with the runaway 0 (the pack low: told at
  // once, so the minutes are seen derived), then a record at +30.7 s raising it, arriving after all.
  const t4 = T + 4 * HOUR;
  const quiet = Array.from({ length: 121 }, (_, j) => can('LT-RAISE', t4 + j * S, { soc: 15, alert_thermal_runaway: 0 }));
  await push(quiet);
  await waitUntil(async () => (await query(`SELECT count("value") FROM "vehicle_events" WHERE "vehicleno" = 'LT-RAISE'`)).length > 0, 30_000, 'the minutes derived');
  const lateRaise = can('LT-RAISE', t4 + 30_700, { alert_thermal_runaway: 1 });
  await push([lateRaise]);

  // A retraction: the runaway 0 every 10 s to 60 s, 1 from 70 s; a record at 65 s raising it comes late:
  // the raise at 70 s no longer follows from the records, the one at 65 s does.
  const retract = Array.from({ length: 13 }, (_, j) => can('LT-RETRACT', t4 + j * 10 * S, { soc: 50, alert_thermal_runaway: j >= 7 ? 1 : 0 }));
  await push(retract);
  await waitUntil(async () => (await query(`SELECT count("value") FROM "vehicle_events" WHERE "vehicleno" = 'LT-RETRACT'`)).length > 0, 30_000, 'the raise at 70 s told');
  const retractLate = can('LT-RETRACT', t4 + 65 * S, { alert_thermal_runaway: 1 });
  await push([retractLate]);

  // The twins: the same records, in order, in 10-s bulks.
  for (const [records, t0] of [
    [slow, T],
    [resend, T + HOUR],
    [behind, t2 - MIN],
    [hour, t3],
  ] as const) {
    for (const b of bulks(asTwin(records), t0, 10 * S)) await push(b);
  }
  await push(asTwin([...quiet, lateRaise].sort((a, b) => a.data.time! - b.data.time!)));
  await push(asTwin([...retract, retractLate].sort((a, b) => a.data.time! - b.data.time!)));

  // The upload sent again, minutes after (every record a duplicate of one long committed).
  await settled('LT-UPLOAD', withTrip, 120_000);
  uploadDeliveries = delivered.filter((d) => d.data.vehicleno === 'LT-UPLOAD').length;
  for (const b of upload) await push(b);
}, 300_000);

let uploadDeliveries = 0;

afterAll(async () => {
  await svc?.close();
  await influx?.stop();
  await new Promise((r) => hook?.close(r));
});

const marked = async (v: string) => query(`SELECT * FROM "vehicle_events" WHERE "vehicleno" = '${v}' AND ("late" = 1 OR "revision" > 0)`);

describe('outputs that follow from the records, not from when they arrive', () => {
  it('a slow write moves no trip: jobs are derived in the order they were accepted, with no correction', async () => {
    const { mine, theirs } = await settled('LT-SLOW', withTrip);
    expect(mine).toEqual(theirs);
    expect(mine.trips).toEqual([expect.objectContaining({ time: T, end: T + 360 * S, distance_m: expect.closeTo(3_600, 3) })]);
    expect(mine.vehicle_events!.map((e) => [e.event, e.time])).toEqual([
      ['ignition_on', T],
      ['ignition_off', T + 360 * S],
    ]);
    expect(await query(`SELECT * FROM "trips" WHERE "vehicleno" = 'LT-SLOW' AND "revision" > 0`)).toEqual([]);
  });

  it('a re-send minutes later invents no safety alarm: no event, no revision, no delivery', async () => {
    const { mine, theirs } = await settled('LT-RESEND', withTrip);
    expect(mine).toEqual(theirs);
    expect(mine.vehicle_events!.filter((e) => String(e.event).startsWith('alert_')).map((e) => [e.event, e.time])).toEqual([
      ['alert_thermal_runaway_raised', T + HOUR + 50_500],
      ['alert_thermal_runaway_cleared', T + HOUR + 70_500],
    ]);
    expect(await marked('LT-RESEND')).toEqual([]);
    // The webhook told each once, as its twin's: no correction, no second id.
    await waitUntil(async () => heldBy('LT-RESEND').size === heldBy(twin('LT-RESEND')).size, 15_000, 'deliveries').catch(() => undefined);
    const mineD = delivered.filter((d) => d.data.vehicleno === 'LT-RESEND');
    expect(mineD.length).toBe(delivered.filter((d) => d.data.vehicleno === twin('LT-RESEND')).length);
    expect(mineD.every((d) => d.id === d.data.id)).toBe(true);
  });

  it('GPS behind CAN invents no charging: regen while driving is judged once the track has passed it; the trip’s soc is the CAN’s at its ends', async () => {
    const { mine, theirs } = await settled('LT-GPSLAG', withTrip);
    expect(mine).toEqual(theirs);
    // Never told, not even retracted later.
    expect(await query(`SELECT * FROM "charging" WHERE "vehicleno" = 'LT-GPSLAG'`)).toEqual([]);
    expect(await query(`SELECT * FROM "vehicle_events" WHERE "vehicleno" = 'LT-GPSLAG' AND "event" =~ /^charging/`)).toEqual([]);
    expect(mine.trips).toEqual([expect.objectContaining({ soc_start: 60, soc_end: 51 })]);
  });

  it('a history upload after 40 minutes without coverage: the trip, the day and the alarm of in-order delivery; sent again, nothing', async () => {
    const { mine, theirs } = await settled('LT-UPLOAD', withTrip, 120_000);
    expect(mine).toEqual(theirs);
    expect(mine.trips).toEqual([expect.objectContaining({ time: T + 3 * HOUR, end: T + 4 * HOUR, distance_m: expect.closeTo(36_000, 3) })]);
    expect(mine.vehicle_events!.filter((e) => String(e.event).startsWith('alert_')).map((e) => [e.event, e.time])).toEqual([
      ['alert_thermal_runaway_raised', T + 3 * HOUR + 1_800_500],
      ['alert_thermal_runaway_cleared', T + 3 * HOUR + 1_810_500],
    ]);
    // The day, as `telematics-fleet summary` reads it.
    const target = influxTargetOf({ INFLUX_URL: influx.url, INFLUX_TOKEN: influx.token, INFLUX_BUCKET: db, INFLUX_TIMEOUT: 10_000 });
    const days = localDays(T + 3 * HOUR, T + 5 * HOUR, 'UTC');
    const [day, twinDay] = [await readDays(target, 'LT-UPLOAD', days), await readDays(target, twin('LT-UPLOAD'), days)];
    expect(day).toEqual(twinDay);
    // The 40 bulks sent again: nothing more told.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(delivered.filter((d) => d.data.vehicleno === 'LT-UPLOAD').length).toBe(uploadDeliveries);
    expect(await outputs('LT-UPLOAD')).toEqual(theirs);
  });

  it('a late raise outside an episode is told once, marked late, at its time, with its clearing; the webhook tells both once', async () => {
    const { mine, theirs } = await settled('LT-RAISE', withEvents(3));
    expect(mine).toEqual(theirs);
    const t4 = T + 4 * HOUR;
    expect((await marked('LT-RAISE')).map((r) => [r.event, r.time, r.late])).toEqual([
      ['alert_thermal_runaway_raised', t4 + 30_700, 1],
      ['alert_thermal_runaway_cleared', t4 + 31_000, 1],
    ]);
    await waitUntil(async () => heldBy('LT-RAISE').size === 3, 15_000, 'all delivered').catch(() => undefined);
    expect(kinds(heldBy('LT-RAISE'))).toEqual([`alert_thermal_runaway_cleared@${t4 + 31_000}`, `alert_thermal_runaway_raised@${t4 + 30_700}`, `soc_low@${t4}`]);
    expect(delivered.filter((d) => d.data.vehicleno === 'LT-RAISE')).toHaveLength(3);
  });

  it('what the records no longer support is retracted under its id, in InfluxDB and by the webhook', async () => {
    const { mine, theirs } = await settled('LT-RETRACT', withEvents(1));
    expect(mine).toEqual(theirs);
    const t4 = T + 4 * HOUR;
    // The row at 70 s kept, retracted: value -1, retracted 1; the standing rows leave it out.
    const [old] = await query(`SELECT "value", "retracted", "revision" FROM "vehicle_events" WHERE "vehicleno" = 'LT-RETRACT' AND time = ${(t4 + 70 * S) * 1e6}`);
    expect(old).toEqual({ time: t4 + 70 * S, value: -1, retracted: 1, revision: 1 });
    expect(mine.vehicle_events!.map((e) => [e.event, e.time])).toEqual([['alert_thermal_runaway_raised', t4 + 65 * S]]);
    // The webhook: the raise at 70 s told, then retracted under its id (a delivery of its own); the one at 65 s told, late.
    await waitUntil(async () => delivered.filter((d) => d.data.vehicleno === 'LT-RETRACT').length >= 3, 15_000, 'deliveries').catch(() => undefined);
    const mineD = delivered.filter((d) => d.data.vehicleno === 'LT-RETRACT');
    const first = mineD.find((d) => d.type === 'vehicle.alert_thermal_runaway_raised' && d.data.time === t4 + 70 * S)!;
    const retraction = mineD.find((d) => d.type === 'vehicle.alert_thermal_runaway_raised.retracted')!;
    expect(retraction).toMatchObject({ id: `${String(first.data.id)}.1`, data: { id: first.data.id, revision: 1, retracted: 1 } });
    expect(kinds(heldBy('LT-RETRACT'))).toEqual([`alert_thermal_runaway_raised@${t4 + 65 * S}`]);
  });
});
