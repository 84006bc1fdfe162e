import { describe, expect, it } from 'vitest';
import { COMMAND_TYPES, dataOut } from '../client/schema.js';
import { envelopeSchema } from '../../telemetry/envelope.js';
import { createEmulator } from './app.js';
import { PROVIDER_LIMITS, scaledLimits } from './limits.js';
import { tokenExpiry } from '../client/token.js';

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
  it('answers the documented shape: litres used (the drops of the litre history), levels at both ends, the last ignition changes, the refuels', async () => {
    const { post, fleet } = setup();
    const range = { starttime: NOW - 4 * DAY, endtime: NOW };
    for (const v of fleet.vehicles) {
      const history = async (inlitres: boolean) =>
        dataOut.getfuelhistory.parse(envelopeSchema.parse((await post('getfuelhistory', { token: TOKEN, vehicleno: v.vehicleno, inlitres, ...range })).json).data);
      const litres = await history(true);
      const percent = await history(false);
      let drops = 0;
      const refuels: Array<{ time: number; litres: string }> = [];
      let rise = 0;
      for (let i = 1; i < litres.length; i++) {
        const d = Math.round(Number(litres[i - 1]?.value) * 100) - Math.round(Number(litres[i]?.value) * 100);
        if (d > 0) drops += d;
        if (d < 0) rise -= d;
        if (d >= 0 && rise > 0) {
          refuels.push({ time: litres[i - 1]!.time, litres: (rise / 100).toFixed(2) });
          rise = 0;
        }
      }
      // The ignition sampled minute by minute, as a client with the GPS track would see it.
      let lastOn: number | null = null;
      let lastOff: number | null = null;
      for (let t = range.starttime + 60_000; t <= range.endtime; t += 60_000) {
        const [before, now] = [fleet.gpsAt(v, t - 60_000).ignstatus, fleet.gpsAt(v, t).ignstatus];
        if (before === 0 && now === 1) lastOn = t;
        if (before === 1 && now === 0) lastOff = t;
      }
      // Four days hold at least one refuel for every cycle length (24 to 72 h), and drives.
      expect(refuels.length).toBeGreaterThan(0);
      expect(lastOn).not.toBeNull();
      const used = await post('getfuelused', { token: TOKEN, vehicleno: v.vehicleno, ...range });
      expect(used.json).toEqual({
        status: 'SUCCESS',
        data: {
          fuelused: (drops / 100).toFixed(2),
          ...range,
          startfl: percent[0]!.value,
          endfl: percent.at(-1)!.value,
          startfl_litres: litres[0]!.value,
          endfl_litres: litres.at(-1)!.value,
          lastignon: lastOn,
          lastignoff: lastOff,
          refueling_events: refuels,
        },
        err: '',
        msg: 'OK',
      });
      expect(dataOut.getfuelused.parse((used.json as { data: unknown }).data)).toBeTruthy();
      expect(drops).toBeGreaterThan(0);
    }
  });

  it('answers null levels and ignition times for a range with no reading and no change', async () => {
    const { post, vehicleno } = setup();
    const at = NOW - 2 * DAY + 60_000; // between two readings of the 5-minute grid
    const used = await post('getfuelused', { token: TOKEN, vehicleno, starttime: at, endtime: at + 1_000 });
    expect((used.json as { data: unknown }).data).toEqual({
      fuelused: '0.00', starttime: at, endtime: at + 1_000, startfl: null, endfl: null, startfl_litres: null, endfl_litres: null, lastignon: null, lastignoff: null, refueling_events: [],
    });
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

describe('the provider\'s limits (limits.ts)', () => {
  const limited = (limits: { maxCallsPerSecond: number; minGapMs: number; historyCallsPerDay: number }, now: () => number = () => NOW) => {
    const emu = createEmulator({ seed: 7, vehicles: 5, token: TOKEN, now, limits });
    const post = async (op: string, body: unknown) => {
      const res = await emu.app.request(`/api/standard/${op}`, { method: 'POST', body: JSON.stringify(body) });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), json: (await res.json()) as { status: string; err: string; msg: string } };
    };
    return { ...emu, post };
  };

  it('answers 429 with Retry-After and a FAILURE envelope to a call closer than 400 ms to the last, and serves it once the gap is over', async () => {
    const { post, state } = limited(PROVIDER_LIMITS);
    expect((await post('listvehicles', { token: TOKEN })).status).toBe(200);
    const early = await post('listvehicles', { token: TOKEN });
    expect(early).toMatchObject({ status: 429, retryAfter: '1', json: { status: 'FAILURE', err: 'rate_limited' } });
    expect(early.json.msg).toMatch(/^too many calls: calls must be at least 400 ms apart; this one came \d+ ms after the last$/);
    await new Promise((r) => setTimeout(r, 420));
    expect((await post('listvehicles', { token: TOKEN })).status).toBe(200);
    expect(state.throttled.get('listvehicles')).toBe(1);
  });

  it('answers 429 to a fourth call within a second, whatever the gaps', async () => {
    const { post } = limited({ maxCallsPerSecond: 3, minGapMs: 0, historyCallsPerDay: 0 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await post('listvehicles', { token: TOKEN })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('answers 429 to a vehicle\'s history call beyond its day\'s budget, until the next UTC day; other vehicles and operations go on', async () => {
    let clock = NOW;
    const { post, fleet } = limited({ maxCallsPerSecond: 0, minGapMs: 0, historyCallsPerDay: 2 }, () => clock);
    const [a, b] = fleet.vehicles;
    const history = (v: typeof a) => post('getfuelhistory', { token: TOKEN, vehicleno: v!.vehicleno, inlitres: true, starttime: clock - HOUR, endtime: clock });
    expect([(await history(a)).status, (await history(a)).status]).toEqual([200, 200]);
    const third = await history(a);
    expect(third).toMatchObject({ status: 429, json: { status: 'FAILURE', err: 'history_limit', msg: `at most 2 getfuelhistory calls per vehicle a day; vehicle ${a!.vehicleno} has had them today (UTC)` } });
    // NOW is 12:00 UTC: twelve hours to the next day.
    expect(third.retryAfter).toBe(String(12 * 3600));
    expect((await history(b)).status).toBe(200);
    expect((await post('getfuelused', { token: TOKEN, vehicleno: a!.vehicleno, starttime: clock - HOUR, endtime: clock })).status).toBe(200);
    clock = NOW + 12 * HOUR;
    expect((await history(a)).status).toBe(200);
  });

  it('scales the second\'s bounds and keeps the day\'s', () => {
    expect(scaledLimits(20)).toEqual({ maxCallsPerSecond: 60, minGapMs: 20, historyCallsPerDay: 24 });
  });
});

describe('tokens that expire', () => {
  it('issues a JWT-shaped token whose exp the client reads, served until it expires, then refused with token_expired', async () => {
    let clock = NOW;
    const emu = createEmulator({ seed: 7, vehicles: 1, token: TOKEN, now: () => clock });
    const expiresAt = NOW + 15 * DAY;
    const token = emu.state.issueToken('demo', expiresAt, NOW);
    expect(token.split('.')).toHaveLength(3);
    expect(tokenExpiry(token)).toEqual({ known: true, expiresAt });
    expect(tokenExpiry(TOKEN)).toMatchObject({ known: false });
    const call = async () => (await (await emu.app.request('/api/standard/listvehicles', { method: 'POST', body: JSON.stringify({ token }) })).json()) as { status: string; err: string; msg: string };
    expect((await call()).status).toBe('SUCCESS');
    clock = expiresAt;
    expect(await call()).toMatchObject({ status: 'FAILURE', err: 'token_expired', msg: `token expired at ${new Date(expiresAt).toISOString()}` });
  });
});
