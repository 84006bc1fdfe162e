import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldNames } from '../../src/telemetry/fields.js';
import { startTestService, TEST_TOKEN, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';
const CAN_FIELDS = fieldNames('can');


const gps = (vehicleno: string, time: number, extra: Record<string, unknown> = {}) => ({
  vehicleno,
  type: 'gps',
  data: { lat: 12.9716, lng: 77.5946, alti: 920.5, speed: 42, ignstatus: 1, time, ...extra },
});
const can = (vehicleno: string, data: Record<string, unknown>) => ({ vehicleno, type: 'can', data });

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const json = async (res: Response) => (await res.json()) as { status: string; data: any; err: string; msg: string };

describe('bulk push', () => {
  it('stores every value of several vehicles and both types exactly as sent', async () => {
    const records = [
      gps('KA01AB1234', T0, { lat: 12.5, lng: 77.25, alti: 900, speed: 0, ignstatus: 0 }),
      can('KA01AB1234', { time: T0 + 1, soc: 85, battery_voltage: 51.23, current: -12.5, cell_voltage_01: 3.301 }),
      gps('MH12XY9876', T0 + 2, { lat: -33.8688, lng: 151.2093, alti: -4.5, speed: 88.8, ignstatus: 1 }),
      can('MH12XY9876', { time: T0 + 3, soc: 85.5, alert: 0, alert_short_circuit: 1 }),
    ];
    const res = await svc.post('/push/bulk', { bulkData: records });
    expect(res.status).toBe(202);
    const body = await json(res);
    expect(body).toMatchObject({ status: 'SUCCESS', err: '', data: { accepted: 4, rejected: [] } });
    expect(body.data.deliveryId).toMatch(/^[0-9a-f-]{36}$/);

    const g = await svc.waitForRows('SELECT * FROM gps', 2);
    expect(g).toEqual([
      { time: T0, vehicleno: 'KA01AB1234', lat: 12.5, lng: 77.25, alti: 900, speed: 0, ignstatus: 0 },
      { time: T0 + 2, vehicleno: 'MH12XY9876', lat: -33.8688, lng: 151.2093, alti: -4.5, speed: 88.8, ignstatus: 1 },
    ]);
    const c = await svc.waitForRows('SELECT soc, battery_voltage, "current", cell_voltage_01, alert, alert_short_circuit, vehicleno FROM can', 2);
    expect(c).toEqual([
      { time: T0 + 1, soc: 85, battery_voltage: 51.23, current: -12.5, cell_voltage_01: 3.301, alert: null, alert_short_circuit: null, vehicleno: 'KA01AB1234' },
      { time: T0 + 3, soc: 85.5, battery_voltage: null, current: null, cell_voltage_01: null, alert: 0, alert_short_circuit: 1, vehicleno: 'MH12XY9876' },
    ]);
    // 85 then 85.5 in one field: written as float both times, so no type conflict.
    const types = await svc.query('SHOW FIELD KEYS FROM can');
    expect(new Set(types.map((t) => t.fieldType))).toEqual(new Set(['float']));
  });

  it('accepts the valid records of a bulk, lists the invalid ones and quarantines them with reasons', async () => {
    const v = 'PARTIAL-1';
    const bad1 = gps(v, T0 + 100, { lat: 123 });
    const bad2 = { vehicleno: v, type: 'obd', data: { x: 1 } };
    const bad3 = can(v, { time: T0 + 102, soc: 'full' });
    const res = await svc.post('/push', {
      bulkData: [gps(v, T0 + 99), bad1, bad2, can(v, { time: T0 + 101, soc: 50 }), bad3],
    });
    expect(res.status).toBe(202);
    const body = await json(res);
    expect(body.data.accepted).toBe(2);
    expect(body.data.rejected).toEqual([
      { index: 1, error: 'data.lat: must be between -90 and 90' },
      { index: 2, error: 'type: expected "gps" or "can", got "obd"' },
      { index: 4, error: 'data.soc: expected a finite number or numeric string, got "full"' },
    ]);
    expect(body.msg).toBe('accepted 2 of 5 record(s); 3 rejected and quarantined');

    await svc.waitForRows(`SELECT * FROM gps WHERE vehicleno = '${v}'`, 1);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = '${v}'`, 1)).toEqual([{ time: T0 + 101, soc: 50 }]);

    const held = (await svc.quarantine.list()).filter((e) => e.deliveryId === body.data.deliveryId);
    expect(held.map((e) => ({ index: e.index, reason: e.reason, raw: JSON.parse(e.raw), route: e.route }))).toEqual([
      { index: 1, reason: 'data.lat: must be between -90 and 90', raw: bad1, route: '/push' },
      { index: 2, reason: 'type: expected "gps" or "can", got "obd"', raw: bad2, route: '/push' },
      { index: 4, reason: 'data.soc: expected a finite number or numeric string, got "full"', raw: bad3, route: '/push' },
    ]);
  });
});

describe('realtime push', () => {
  it('stores a single gps record and a single can record', async () => {
    const r1 = await svc.post('/push/realtime', gps('RT-1', T0 + 200, { speed: 12.25 }));
    const r2 = await svc.post('/push', can('RT-1', { time: T0 + 201, soc: 64.5, soh: 97 }));
    expect([r1.status, r2.status]).toEqual([202, 202]);
    expect((await json(r1)).data.accepted).toBe(1);
    expect(await svc.waitForRows(`SELECT speed FROM gps WHERE vehicleno = 'RT-1'`, 1)).toEqual([{ time: T0 + 200, speed: 12.25 }]);
    expect(await svc.waitForRows(`SELECT soc, soh FROM can WHERE vehicleno = 'RT-1'`, 1)).toEqual([{ time: T0 + 201, soc: 64.5, soh: 97 }]);
  });

  it('answers an invalid single record with 400 naming the problem, and quarantines it', async () => {
    const rec = gps('RT-BAD', 1_763_700_000, {});
    const res = await svc.post('/push/realtime', rec);
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body).toEqual({
      status: 'FAILURE',
      data: null,
      err: 'invalid_record',
      msg: 'invalid record (quarantined): data.time: expected an epoch time in milliseconds, got 1763700000 (this looks like seconds)',
    });
    const held = (await svc.quarantine.list()).find((e) => e.deliveryId === res.headers.get('x-delivery-id'));
    expect(held && JSON.parse(held.raw)).toEqual(rec);
  });

  it('stamps a CAN record without time with the time the receiver accepted it', async () => {
    const before = Date.now();
    const res = await svc.post('/push/realtime', can('STAMP-1', { soc: 33 }));
    const after = Date.now();
    expect(res.status).toBe(202);
    const [row] = await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'STAMP-1'`, 1);
    expect(row!.soc).toBe(33);
    expect(row!.time).toBeGreaterThanOrEqual(before);
    expect(row!.time).toBeLessThanOrEqual(after);
  });

  it('refuses the wrong shape on the shape-specific routes', async () => {
    const a = await svc.post('/push/realtime', { bulkData: [] });
    const b = await svc.post('/push/bulk', gps('X', T0));
    expect([a.status, b.status]).toEqual([400, 400]);
    expect((await json(a)).msg).toBe('expected a single push record; send {"bulkData":[...]} to /push/bulk');
    expect((await json(b)).msg).toBe('expected a bulk push {"bulkData":[...]}; send a single record to /push/realtime');
  });
});

describe('dynamic CAN objects', () => {
  it('stores only the parameters a sparse record carried', async () => {
    const res = await svc.post('/push/realtime', can('SPARSE-1', { time: T0 + 300, soc: 71, cell_voltage_07: 3.412 }));
    expect(res.status).toBe(202);
    const [row] = await svc.waitForRows(`SELECT * FROM can WHERE vehicleno = 'SPARSE-1'`, 1);
    const present = Object.entries(row!).filter(([k, v]) => v !== null && k !== 'time' && k !== 'vehicleno');
    expect(Object.fromEntries(present)).toEqual({ soc: 71, cell_voltage_07: 3.412 });
    // Every spec field the record lacked is absent, not 0.
    for (const f of CAN_FIELDS.filter((f) => f !== 'soc' && f !== 'cell_voltage_07')) {
      expect(row![f] ?? null, f).toBeNull();
    }
  });

  it('keeps an unknown numeric parameter and stores a numeric string as its number', async () => {
    const res = await svc.post('/push/realtime', can('DYN-1', { time: T0 + 400, battery_voltage: '51.2', motor_rpm: 3200 }));
    expect(res.status).toBe(202);
    expect(await svc.waitForRows(`SELECT battery_voltage, motor_rpm FROM can WHERE vehicleno = 'DYN-1'`, 1)).toEqual([
      { time: T0 + 400, battery_voltage: 51.2, motor_rpm: 3200 },
    ]);
  });

  it('stores extreme floats exactly (exponent notation, subnormal range, largest double)', async () => {
    // Parameters no plausibility rule bounds, so any double is theirs to carry.
    const data = { time: T0 + 450, charge_cycle: 1e21, current: 1e-300, power: -1.7976931348623157e308, soh: 0.1 + 0.2 };
    expect((await svc.post('/push/realtime', can('FLOAT-1', data))).status).toBe(202);
    expect(await svc.waitForRows(`SELECT charge_cycle, "current", power, soh FROM can WHERE vehicleno = 'FLOAT-1'`, 1)).toEqual([
      { time: T0 + 450, charge_cycle: 1e21, current: 1e-300, power: -1.7976931348623157e308, soh: 0.30000000000000004 },
    ]);
  });

  it('leaves out unused temperature sensors: numbered beyond the count, or the sentinel value', async () => {
    const res = await svc.post('/push/realtime', can('TEMP-1', {
      time: T0 + 500,
      no_of_temperature_sensors: 3,
      cell_temperature_01: 31.5,
      cell_temperature_02: -40,
      cell_temperature_03: 30,
      cell_temperature_04: -40,
      cell_temperature_05: 12,
    }));
    expect(res.status).toBe(202);
    const q = `SELECT no_of_temperature_sensors, cell_temperature_01, cell_temperature_02, cell_temperature_03, cell_temperature_04, cell_temperature_05 FROM can WHERE vehicleno = 'TEMP-1'`;
    expect(await svc.waitForRows(q, 1)).toEqual([
      { time: T0 + 500, no_of_temperature_sensors: 3, cell_temperature_01: 31.5, cell_temperature_02: null, cell_temperature_03: 30, cell_temperature_04: null, cell_temperature_05: null },
    ]);
  });
});

describe('line-protocol escaping', () => {
  it('stores and reads back a vehicleno with spaces, commas, equals signs, quotes, backslashes and non-ASCII letters', async () => {
    const odd = 'Flotte Nord, "Ünit"=7 \\Øst\\Bus — तेज़';
    const res = await svc.post('/push/realtime', gps(odd, T0 + 600));
    expect(res.status).toBe(202);
    const rows = await svc.waitForRows(`SELECT lat, vehicleno FROM gps WHERE time = ${T0 + 600}ms`, 1);
    expect(rows).toEqual([{ time: T0 + 600, lat: 12.9716, vehicleno: odd }]);
  });

  it('refuses a vehicleno that line protocol cannot carry, saying why', async () => {
    const res = await svc.post('/push/realtime', gps('ends with\\', T0 + 601));
    expect(res.status).toBe(400);
    expect((await json(res)).msg).toBe(
      'invalid record (quarantined): vehicleno: must not end with a backslash (InfluxDB line protocol cannot store it)',
    );
  });
});

describe('transport and authentication', () => {
  it('answers 401 to a missing or wrong token and accepts every documented way of sending one', async () => {
    const rec = gps('AUTH-1', T0 + 700);
    const missing = await svc.post('/push', rec, { token: null });
    const wrong = await svc.post('/push', rec, { token: 'wrong-token-0123456789' });
    expect([missing.status, wrong.status]).toEqual([401, 401]);
    expect(await json(missing)).toEqual({
      status: 'FAILURE',
      data: null,
      err: 'unauthorized',
      msg: 'missing or invalid token: send Authorization: Bearer <token>, X-Api-Key or ?token=',
    });
    const viaKey = await svc.post('/push', gps('AUTH-1', T0 + 701), { token: null, headers: { 'x-api-key': TEST_TOKEN } });
    const viaQuery = await svc.post(`/push?token=${TEST_TOKEN}`, gps('AUTH-1', T0 + 702), { token: null });
    expect([viaKey.status, viaQuery.status]).toEqual([202, 202]);
    expect((await svc.waitForRows(`SELECT lat FROM gps WHERE vehicleno = 'AUTH-1'`, 2)).map((r) => r.time)).toEqual([T0 + 701, T0 + 702]);
  });

  it('answers 400 to a body that is not JSON and quarantines its bytes', async () => {
    const res = await svc.post('/push', '{"bulkData": [ oops');
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.err).toBe('invalid_json');
    expect(body.msg).toMatch(/^body is not valid JSON: /);
    const held = (await svc.quarantine.list()).find((e) => e.deliveryId === res.headers.get('x-delivery-id'));
    expect(held).toMatchObject({ index: -1, raw: '{"bulkData": [ oops', truncated: false, route: '/push' });
  });

  it('answers 413 to a body over the limit, also when the limit is passed only after gunzip', async () => {
    const small = await startTestService({ BODY_LIMIT: '2KiB' });
    try {
      const big = { bulkData: Array.from({ length: 40 }, (_, i) => gps('BIG', T0 + i)) };
      const plain = await small.post('/push', big);
      expect(plain.status).toBe(413);
      expect((await json(plain)).err).toBe('payload_too_large');
      const zipped = gzipSync(JSON.stringify(big));
      expect(zipped.length).toBeLessThan(2048);
      const gz = await small.post('/push', zipped, { headers: { 'content-encoding': 'gzip' } });
      expect(gz.status).toBe(413);
      expect((await json(gz)).msg).toBe('decompressed body exceeds the limit of 2048 bytes');
    } finally {
      await small.close();
    }
  });

  it('stores a gzip-compressed bulk', async () => {
    const body = gzipSync(JSON.stringify({ bulkData: [gps('GZ-1', T0 + 800), can('GZ-1', { time: T0 + 801, soc: 12 })] }));
    const res = await svc.post('/push/bulk', body, { headers: { 'content-encoding': 'gzip' } });
    expect(res.status).toBe(202);
    await svc.waitForRows(`SELECT lat FROM gps WHERE vehicleno = 'GZ-1'`, 1);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'GZ-1'`, 1)).toEqual([{ time: T0 + 801, soc: 12 }]);
  });

  it('answers 415 to a form body', async () => {
    const res = await svc.post('/push', 'a=1', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect((await json(res)).err).toBe('unsupported_media_type');
  });

  it('reports liveness and readiness', async () => {
    expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${svc.url}/readyz`);
    expect(ready.status).toBe(200);
    expect((await json(ready)).data).toEqual({ redis: true, enqueue: true, fetch: true, influxdb: true });
  });
});
