/**
 * Vehicles lie: through the real service, what a sender is told, what lands in InfluxDB, what the
 * quarantine keeps (and a replay once the rule is widened), what /metrics counts, and the fleet's
 * last-seen state when a device's clock is wrong.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProgram } from '../../src/cli/program.js';
import { DEADLETTER } from '../../src/ingest/deadletter/commands.js';
import { FLEET } from '../../src/ingest/fleet/commands.js';
import { startTestService, type TestService } from '../harness/service.js';
import { captureIO } from '../harness/io.js';
import { Redis } from 'ioredis';
import { keysOf } from '../../src/ingest/queue/keys.js';

const MIN = 60_000;
const DAY = 86_400_000;
const YEAR = 365.25 * DAY;
/** Now, to the second, as the records' times are relative to it. */
const NOW = Math.floor(Date.now() / 1000) * 1000;

const gps = (vehicleno: string, time: number, extra: Record<string, unknown> = {}) => ({
  vehicleno,
  type: 'gps',
  data: { lat: 12.9716, lng: 77.5946, alti: 920, speed: 42, ignstatus: 1, time, ...extra },
});
const can = (vehicleno: string, data: Record<string, unknown>) => ({ vehicleno, type: 'can', data });

let svc: TestService;
const json = async (res: Response) => (await res.json()) as { status: string; data: any; err: string; msg: string };
const metric = async (name: string, labels: string) => {
  const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(labels === '' ? `${name} ` : `${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};

beforeAll(async () => {
  svc = await startTestService({ ADMIN_AUTH: 'none', METRICS_SAMPLE_INTERVAL: '200ms' });
});
afterAll(async () => svc?.close());

describe('a bulk mixing refused records, refused fields and valid records', () => {
  const v = 'MIX-1';
  const bulk = [
    gps(v, NOW - 10 * MIN), // 0 valid
    gps(v, NOW + 5 * YEAR), // 1 refused: a clock five years ahead
    gps(v, NOW - 20 * YEAR), // 2 refused: twenty years back
    gps(v, NOW - 9 * MIN, { lat: 0, lng: 0, speed: 0 }), // 3 no fix: the position is refused, the rest kept
    gps(v, NOW - 8 * MIN, { ignstatus: 7 }), // 4 ignition 7: only ignstatus refused
    can(v, { time: NOW - 7 * MIN, soc: 250, cell_voltage_01: -3.2, current: -12.5 }), // 5 soc and the cell refused, current kept
    can(v, { time: NOW - 6 * MIN, soc: 250 }), // 6 refused: nothing left to store
    gps(v, NOW + 4 * MIN), // 7 valid: a wake-up stamp a few minutes ahead
    can(v, { time: NOW - 3 * DAY, soc: 55, my_sensor: -99_999 }), // 8 valid: a buffer three days late, an unknown parameter unchecked
  ];
  let body: Awaited<ReturnType<typeof json>>;

  beforeAll(async () => {
    const res = await svc.post('/push/bulk', { bulkData: bulk });
    expect(res.status).toBe(202);
    body = await json(res);
  });

  it('tells the sender each refused record and each refused field, with the rule and why', () => {
    expect(body.data.accepted).toBe(6);
    expect(body.data.rejected).toEqual([
      { index: 1, rule: 'time_future', error: expect.stringMatching(/^data\.time: .* is 5 years ahead of the receiver's clock, more than TIME_MAX_AHEAD \(15 min\)/) },
      { index: 2, rule: 'time_past', error: expect.stringMatching(/^data\.time: .* is 20 years old, more than TIME_MAX_AGE \(90 d\)/) },
      { index: 6, rule: 'percent', error: expect.stringContaining('no field left to store: data.soc: 250 is outside 0 to 100 %') },
    ]);
    expect(body.data.refusedFields).toEqual([
      { index: 3, field: 'lat', value: 0, rule: 'zero_position', error: expect.stringContaining('(0, 0) is what a device without a GPS fix reports') },
      { index: 3, field: 'lng', value: 0, rule: 'zero_position', error: expect.stringContaining('(0, 0)') },
      { index: 4, field: 'ignstatus', value: 7, rule: 'flag', error: expect.stringContaining('7 is not 0 or 1') },
      { index: 5, field: 'soc', value: 250, rule: 'percent', error: expect.stringContaining('250 is outside 0 to 100 %') },
      { index: 5, field: 'cell_voltage_01', value: -3.2, rule: 'cell_voltage', error: expect.stringContaining('-3.2 is outside 0 to 5 V') },
    ]);
    expect(body.msg).toBe('accepted 6 of 9 record(s); 3 rejected and quarantined; 5 implausible field(s) of 3 record(s) not stored (refusedFields) and quarantined');
  });

  it('stores exactly the valid data: every true value, no implausible one', async () => {
    const g = await svc.waitForRows(`SELECT lat, lng, alti, speed, ignstatus FROM gps WHERE vehicleno = '${v}'`, 4);
    expect(g).toEqual([
      { time: NOW - 10 * MIN, lat: 12.9716, lng: 77.5946, alti: 920, speed: 42, ignstatus: 1 },
      { time: NOW - 9 * MIN, lat: null, lng: null, alti: 920, speed: 0, ignstatus: 1 },
      { time: NOW - 8 * MIN, lat: 12.9716, lng: 77.5946, alti: 920, speed: 42, ignstatus: null },
      { time: NOW + 4 * MIN, lat: 12.9716, lng: 77.5946, alti: 920, speed: 42, ignstatus: 1 },
    ]);
    const c = await svc.waitForRows(`SELECT soc, cell_voltage_01, "current", my_sensor FROM can WHERE vehicleno = '${v}'`, 2);
    expect(c).toEqual([
      { time: NOW - 3 * DAY, soc: 55, cell_voltage_01: null, current: null, my_sensor: -99_999 },
      { time: NOW - 7 * MIN, soc: null, cell_voltage_01: null, current: -12.5, my_sensor: null },
    ]);
  });

  it('keeps each refused record, and each record with refused fields, whole in the quarantine', async () => {
    const held = (await svc.quarantine.list({ count: 1000 })).filter((e) => e.deliveryId === body.data.deliveryId);
    expect(held.map((e) => [e.index, e.reason])).toEqual([
      [1, body.data.rejected[0].error],
      [2, body.data.rejected[1].error],
      [3, expect.stringMatching(/^implausible field\(s\) not stored: data\.lat: \(0, 0\) .*; data\.lng: \(0, 0\) /)],
      [4, expect.stringMatching(/^implausible field\(s\) not stored: data\.ignstatus: 7 is not 0 or 1/)],
      [5, expect.stringMatching(/^implausible field\(s\) not stored: data\.soc: 250 .*; data\.cell_voltage_01: -3\.2 is outside 0 to 5 V/)],
      [6, body.data.rejected[2].error],
    ]);
    expect(JSON.parse(held[0]!.raw)).toEqual(bulk[1]);
    // The record as sent, refused fields included: a replay rewrites the kept ones identically and adds the rest.
    expect(JSON.parse(held[4]!.raw)).toEqual(bulk[5]);
  });

  it('counts every refusal by rule and scope, and the lateness of what arrived', async () => {
    expect(await metric('telematics_implausible_total', 'rule="time_future",scope="record"')).toBeGreaterThanOrEqual(1);
    expect(await metric('telematics_implausible_total', 'rule="time_past",scope="record"')).toBeGreaterThanOrEqual(1);
    expect(await metric('telematics_implausible_total', 'rule="percent",scope="record"')).toBeGreaterThanOrEqual(1);
    expect(await metric('telematics_implausible_total', 'rule="zero_position",scope="field"')).toBeGreaterThanOrEqual(2);
    expect(await metric('telematics_implausible_total', 'rule="cell_voltage",scope="field"')).toBeGreaterThanOrEqual(1);
    // Three days late lands in the 7-day bucket and not in the 1-day one.
    const week = await metric('telematics_record_lateness_seconds_bucket', 'le="604800",type="can"');
    const day = await metric('telematics_record_lateness_seconds_bucket', 'le="86400",type="can"');
    expect(week - day).toBeGreaterThanOrEqual(1);
  });

  it('replays a refused field once the rule is widened', async () => {
    const held = (await svc.quarantine.list({ count: 1000 })).filter((e) => e.deliveryId === body.data.deliveryId && e.index === 5);
    const env = { REDIS_URL: svc.cfg.REDIS_URL, QUEUE_NAME: svc.cfg.QUEUE_NAME };
    const still = captureIO({ ...env });
    expect(await runProgram(DEADLETTER, ['replay', held[0]!.id], still.io)).toBe(1);
    expect(still.out()).toContain('still implausible: data.soc: 250 is outside 0 to 100 %');
    const widened = captureIO({ ...env, PLAUSIBLE_RANGES: 'percent=0..300,cell_voltage=off' });
    expect(await runProgram(DEADLETTER, ['replay', held[0]!.id], widened.io)).toBe(0);
    expect(await svc.waitForRows(`SELECT soc, cell_voltage_01, "current" FROM can WHERE vehicleno = '${v}' AND soc = 250`, 1)).toEqual([
      { time: NOW - 7 * MIN, soc: 250, cell_voltage_01: -3.2, current: -12.5 },
    ]);
  });
});

describe('a device with a bad clock among true records', () => {
  const v = 'CLOCK-1';

  it('keeps its last position and last-seen time the true ones', async () => {
    const truth = [gps(v, NOW - 3 * MIN, { lat: 10.1, lng: 76.1 }), gps(v, NOW - 2 * MIN, { lat: 10.2, lng: 76.2 })];
    const future = gps(v, NOW + 2 * YEAR, { lat: 10.9, lng: 76.9 });
    const res = await svc.post('/push/bulk', { bulkData: [truth[0], future, truth[1]] });
    expect((await json(res)).data.rejected.map((r: { index: number }) => r.index)).toEqual([1]);
    expect((await svc.post('/push/realtime', gps(v, NOW + 3 * YEAR))).status).toBe(400);

    expect(await svc.waitForRows(`SELECT last("lat") AS "lat", "lng" FROM "gps" WHERE "vehicleno" = '${v}'`, 1)).toEqual([{ time: NOW - 2 * MIN, lat: 10.2, lng: 76.2 }]);
    // The fleet state, over the admin listener and from the command line (updated once the points are
    // written, with the partition's other jobs: within WORKER_LINGER and the update's own run).
    let seen: any;
    await expect
      .poll(async () => {
        seen = await (await fetch(`${svc.adminUrl}/fleet/silent?after=1m&limit=1000`)).json();
        return seen.data.vehicles.find((x: { vehicleno: string }) => x.vehicleno === v);
      }, { timeout: 10_000 })
      .toEqual({ vehicleno: v, lastSeen: NOW - 2 * MIN, position: { time: NOW - 2 * MIN, lat: 10.2, lng: 76.2 } });
    const cli = captureIO({ REDIS_URL: svc.cfg.REDIS_URL, QUEUE_NAME: svc.cfg.QUEUE_NAME });
    expect(await runProgram(FLEET, ['silent', '--after', '1m', '--limit', '1000'], cli.io)).toBe(0);
    const row = cli.out().split('\n').find((l) => l.startsWith(`${v} `))!;
    expect(row.split(/\s{2,}/)).toEqual([v, new Date(NOW - 2 * MIN).toISOString().replace('.000Z', 'Z'), expect.stringMatching(/^\d+(\.\d)? min$/), '10.2,76.2', new Date(NOW - 2 * MIN).toISOString().replace('.000Z', 'Z')]);
    const fleet = (await (await fetch(`${svc.adminUrl}/fleet`)).json()) as { data: { known: number; thresholds: Array<{ after: string }> } };
    expect(fleet.data.known).toBeGreaterThanOrEqual(2);
    expect(fleet.data.thresholds.map((t) => t.after)).toEqual(['15m', '1h', '24h']);
    expect(await metric('telematics_fleet_vehicles', '')).toBeGreaterThanOrEqual(0);
  });
});

describe('field names beyond the schema (EXTRA_FIELDS_MAX=2) and a field named as a tag', () => {
  let bounded: TestService;
  beforeAll(async () => {
    bounded = await startTestService({ EXTRA_FIELDS_MAX: '2' });
  });
  afterAll(async () => bounded?.close());

  it('keeps the first two new names of a measurement, refuses the rest as fields and tells the sender; the names are kept in Redis', async () => {
    const v = 'NAMES-1';
    const res = await bounded.post('/push/bulk', { bulkData: [can(v, { time: NOW - 3_000, soc: 50, x_a: 1, x_b: 2, x_c: 3, vehicleno: 9 }), can(v, { time: NOW - 2_000, soc: 51, x_a: 4, x_d: 5 })] });
    const body = await json(res);
    expect(res.status).toBe(202);
    expect(body.data.refusedFields).toEqual([
      { index: 0, field: 'x_c', value: 3, rule: 'extra_fields', error: expect.stringContaining('can already has EXTRA_FIELDS_MAX (2) field names beyond the schema') },
      { index: 0, field: 'vehicleno', value: 9, rule: 'tag_name', error: expect.stringContaining('vehicleno is a tag of every point') },
      { index: 1, field: 'x_d', value: 5, rule: 'extra_fields', error: expect.stringContaining('EXTRA_FIELDS_MAX (2)') },
    ]);
    expect(await bounded.waitForRows(`SELECT soc, x_a, x_b FROM can WHERE vehicleno = '${v}'`, 2)).toEqual([
      { time: NOW - 3_000, soc: 50, x_a: 1, x_b: 2 },
      { time: NOW - 2_000, soc: 51, x_a: 4, x_b: null },
    ]);
    const columns = await bounded.query('SHOW FIELD KEYS FROM can');
    expect(columns.map((c) => c.fieldKey)).toEqual(expect.arrayContaining(['soc', 'x_a', 'x_b']));
    expect(columns.map((c) => c.fieldKey)).not.toContain('x_c');
    const redis = new Redis(bounded.cfg.REDIS_URL);
    try {
      await expect.poll(async () => (await redis.smembers(keysOf(bounded.cfg).extraFieldNames('can'))).sort(), { timeout: 5_000 }).toEqual(['x_a', 'x_b']);
    } finally {
      redis.disconnect();
    }
  });
});
