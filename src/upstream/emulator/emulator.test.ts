import { describe, expect, it } from 'vitest';
import { COMMAND_TYPES, dataOut } from '../client/schema.js';
import { envelopeSchema } from '../../telemetry/envelope.js';
import { createEmulator } from './app.js';

const NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const TOKEN = 'test-token';

function setup(opts: { timeUnit?: 'ms' | 's' } = {}) {
  const emu = createEmulator({ seed: 7, vehicles: 5, token: TOKEN, now: () => NOW, ...opts });
  const post = async (op: string, body: unknown): Promise<{ status: number; json: unknown }> => {
    const res = await emu.app.request(`/api/standard/${op}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
  const first = emu.fleet.vehicles[0];
  if (!first) throw new Error('empty fleet');
  return { ...emu, post, vehicleno: first.vehicleno };
}

describe('listvehicles', () => {
  it('answers the fleet in the exact envelope', async () => {
    const { post, fleet } = setup();
    const res = await post('listvehicles', { token: TOKEN });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      status: 'SUCCESS',
      data: fleet.vehicles.map((v) => ({ vehicleno: v.vehicleno })),
      err: '',
      msg: 'OK',
    });
    expect(dataOut.listvehicles.parse((res.json as { data: unknown }).data)).toHaveLength(5);
  });

  it('generates the same fleet from the same seed, and another from another seed', async () => {
    const a = setup().fleet.vehicles.map((v) => v.vehicleno);
    const b = setup().fleet.vehicles.map((v) => v.vehicleno);
    const c = createEmulator({ seed: 8, vehicles: 5 }).fleet.vehicles.map((v) => v.vehicleno);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
    expect(new Set(a).size).toBe(5);
    for (const no of a) expect(no).toMatch(/^[A-Z]{2}\d{2}[A-Z]{2}\d{4}$/);
  });
});

describe('getfuelhistory', () => {
  it('answers one reading per 5 minutes with string-shaped values, in percent or litres', async () => {
    const { post, vehicleno, fleet } = setup();
    const from = NOW - HOUR;
    const body = { token: TOKEN, vehicleno, starttime: from, endtime: NOW };
    const pct = await post('getfuelhistory', { ...body, inlitres: false });
    const lit = await post('getfuelhistory', { ...body, inlitres: true });
    const p = dataOut.getfuelhistory.parse(envelopeSchema.parse(pct.json).data);
    const l = dataOut.getfuelhistory.parse(envelopeSchema.parse(lit.json).data);
    expect(p.map((r) => r.time)).toEqual(Array.from({ length: 13 }, (_, i) => from + i * 300_000));
    expect(l.map((r) => r.time)).toEqual(p.map((r) => r.time));
    const tank = fleet.vehicle(vehicleno)?.tankLitres ?? 0;
    p.forEach((r, i) => {
      expect(r.value).toMatch(/^\d{1,3}\.\d{2}$/);
      expect(Number(l[i]?.value)).toBeCloseTo((Number(r.value) * tank) / 100, 1);
    });
  });

  it('returns no reading after now', async () => {
    const { post, vehicleno } = setup();
    const res = await post('getfuelhistory', { token: TOKEN, vehicleno, inlitres: false, starttime: NOW - HOUR, endtime: NOW + DAY });
    const data = dataOut.getfuelhistory.parse(envelopeSchema.parse(res.json).data);
    expect(data.at(-1)?.time).toBe(NOW);
  });

  it('takes and answers seconds when configured for seconds', async () => {
    const { post, vehicleno } = setup({ timeUnit: 's' });
    const s = NOW / 1000;
    const res = await post('getfuelhistory', { token: TOKEN, vehicleno, inlitres: false, starttime: s - 600, endtime: s });
    const data = dataOut.getfuelhistory.parse(envelopeSchema.parse(res.json).data);
    expect(data.map((r) => r.time)).toEqual([s - 600, s - 300, s]);
  });
});

describe('getfuelused', () => {
  it('equals the sum of the drops of the litre history over the same range, refuels excluded', async () => {
    const { post, fleet } = setup();
    const range = { starttime: NOW - 4 * DAY, endtime: NOW };
    for (const v of fleet.vehicles) {
      const hist = await post('getfuelhistory', { token: TOKEN, vehicleno: v.vehicleno, inlitres: true, ...range });
      const readings = dataOut.getfuelhistory.parse(envelopeSchema.parse(hist.json).data);
      let drops = 0;
      let rises = 0;
      for (let i = 1; i < readings.length; i++) {
        const d = Math.round(Number(readings[i - 1]?.value) * 100) - Math.round(Number(readings[i]?.value) * 100);
        if (d > 0) drops += d;
        if (d < 0) rises += 1;
      }
      // Four days hold at least one refuel for every cycle length (24 to 72 h).
      expect(rises).toBeGreaterThan(0);
      const used = await post('getfuelused', { token: TOKEN, vehicleno: v.vehicleno, ...range });
      expect(used.json).toEqual({
        status: 'SUCCESS',
        data: { vehicleno: v.vehicleno, ...range, fuelused: (drops / 100).toFixed(2), unit: 'litres' },
        err: '',
        msg: 'OK',
      });
      expect(drops).toBeGreaterThan(0);
    }
  });
});

describe('immobilize and mobilize', () => {
  it('answers "<type> Immobilize command sent for Vehicle <vehicleno>" for each of the seven types', async () => {
    const { post, vehicleno, state } = setup();
    for (const type of COMMAND_TYPES) {
      const res = await post('immobilize', { vehicleno, type, token: TOKEN, immediate: type === 'crank' });
      expect(res).toEqual({
        status: 200,
        json: { status: 'SUCCESS', data: `${type} Immobilize command sent for Vehicle ${vehicleno}`, err: '', msg: 'OK' },
      });
    }
    expect(state.commands).toHaveLength(7);
    expect(state.commands[1]).toEqual({ at: NOW, op: 'immobilize', vehicleno, type: 'crank', immediate: true, username: 'demo' });
  });

  it('mobilize answers "<type> Mobilize command sent for Vehicle <vehicleno>" and rejects immediate', async () => {
    const { post, vehicleno } = setup();
    const ok = await post('mobilize', { vehicleno, type: 'ignition', token: TOKEN });
    expect(ok.json).toEqual({ status: 'SUCCESS', data: `ignition Mobilize command sent for Vehicle ${vehicleno}`, err: '', msg: 'OK' });
    const bad = await post('mobilize', { vehicleno, type: 'ignition', token: TOKEN, immediate: false });
    expect(bad.json).toEqual({ status: 'FAILURE', data: null, err: 'invalid_field', msg: 'immediate is not accepted by mobilize' });
  });
});

describe('changepassword', () => {
  it('changes the password of the token\'s own user and leaves the token valid', async () => {
    const { post, state } = setup();
    const res = await post('changepassword', { token: TOKEN, username: 'demo', newpassword: 'correct horse' });
    expect(res.json).toEqual({ status: 'SUCCESS', data: 'Password changed for user demo', err: '', msg: 'OK' });
    expect(state.users[0]?.password).toBe('correct horse');
    expect((await post('listvehicles', { token: TOKEN })).json).toMatchObject({ status: 'SUCCESS' });
  });

  it('refuses another user and a short password', async () => {
    const { post } = setup();
    expect((await post('changepassword', { token: TOKEN, username: 'root', newpassword: 'correct horse' })).json).toEqual({
      status: 'FAILURE',
      data: null,
      err: 'forbidden',
      msg: 'token may only change the password of its own user, not "root"',
    });
    expect((await post('changepassword', { token: TOKEN, username: 'demo', newpassword: 'short' })).json).toEqual({
      status: 'FAILURE',
      data: null,
      err: 'weak_password',
      msg: 'newpassword must be at least 8 characters',
    });
  });
});

describe('FAILURE envelopes (HTTP 200)', () => {
  const { post, vehicleno } = setup();
  const hist = { token: TOKEN, vehicleno, inlitres: false, starttime: NOW - HOUR, endtime: NOW };
  const cases: Array<[string, string, unknown, string, string]> = [
    ['missing token', 'listvehicles', {}, 'invalid_token', 'token is required'],
    ['bad token', 'listvehicles', { token: 'nope' }, 'invalid_token', 'token is not valid'],
    ['token not a string', 'getfuelused', { token: 42 }, 'invalid_token', 'token must be a string'],
    ['unknown vehicle', 'immobilize', { vehicleno: 'XX00XX0000', type: 'can', token: TOKEN, immediate: false }, 'unknown_vehicle', 'vehicle XX00XX0000 is not in your fleet'],
    ['type outside the seven', 'immobilize', { vehicleno, type: 'brake', token: TOKEN, immediate: false }, 'invalid_command_type', 'type must be one of ignition, crank, movement, can, charge, discharge, chargendischarge; got "brake"'],
    ['type not a string', 'mobilize', { vehicleno, type: 3, token: TOKEN }, 'invalid_field', 'type must be one of ignition, crank, movement, can, charge, discharge, chargendischarge; got an integer'],
    ['missing starttime', 'getfuelhistory', { ...hist, starttime: undefined }, 'invalid_field', 'starttime is required (an integer epoch timestamp in milliseconds)'],
    ['mistyped inlitres', 'getfuelhistory', { ...hist, inlitres: 'true' }, 'invalid_field', 'inlitres must be a boolean; got a string'],
    ['decimal endtime', 'getfuelused', { token: TOKEN, vehicleno, starttime: 1, endtime: 2.5 }, 'invalid_field', 'endtime must be an integer epoch timestamp in milliseconds; got a decimal number'],
    ['missing immediate', 'immobilize', { vehicleno, type: 'can', token: TOKEN }, 'invalid_field', 'immediate is required (a boolean)'],
    ['start after end', 'getfuelhistory', { ...hist, starttime: NOW, endtime: NOW - 1 }, 'invalid_range', 'starttime must not be after endtime'],
    ['range over 31 days', 'getfuelused', { token: TOKEN, vehicleno, starttime: NOW - 32 * DAY, endtime: NOW }, 'range_too_large', 'endtime - starttime must not exceed 31 days'],
    ['body not JSON', 'listvehicles', '{token:', 'invalid_json', 'request body must be a JSON object'],
    ['body an array', 'listvehicles', [TOKEN], 'invalid_json', 'request body must be a JSON object'],
  ];
  it.each(cases)('%s', async (_name, op, body, err, msg) => {
    expect(await post(op, body)).toEqual({ status: 200, json: { status: 'FAILURE', data: null, err, msg } });
  });

  it('answers 404 outside the six operations and 405 to other methods', async () => {
    const { app } = setup();
    const notFound = await app.request('/api/standard/getspeed', { method: 'POST', body: '{}' });
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toEqual({ status: 'FAILURE', data: null, err: 'not_found', msg: 'unknown operation "getspeed"' });
    const get = await app.request('/api/standard/listvehicles');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(await get.json()).toEqual({ status: 'FAILURE', data: null, err: 'method_not_allowed', msg: 'listvehicles accepts POST only' });
  });
});

describe('injected faults', () => {
  it('answers the injected status with Retry-After the given number of times, then normally', async () => {
    const { app, state } = setup();
    state.injectFault({ op: 'listvehicles', times: 1, status: 503, retryAfterSeconds: 2 });
    const call = () => app.request('/api/standard/listvehicles', { method: 'POST', body: JSON.stringify({ token: TOKEN }) });
    const first = await call();
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(await first.json()).toEqual({ status: 'FAILURE', data: null, err: 'service_unavailable', msg: 'injected fault' });
    const second = await call();
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ status: 'SUCCESS' });
    expect(state.calls.get('listvehicles')).toBe(2);
  });
});
