import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../emulator/app.js';
import { UpstreamClient } from './client.js';
import { UpstreamError, UpstreamProtocolError, UpstreamTransportError } from './errors.js';
import type { CommandType } from './schema.js';

const NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let emu: RunningEmulator;
let secondsEmu: RunningEmulator;
let client: UpstreamClient;
let vehicleno: string;

beforeAll(async () => {
  emu = await startEmulator({ seed: 21, vehicles: 4, token: 'tok', now: () => NOW });
  secondsEmu = await startEmulator({ seed: 21, vehicles: 4, token: 'tok', now: () => NOW, timeUnit: 's' });
  client = new UpstreamClient({ baseUrl: emu.url, token: 'tok', backoffMs: 5 });
  vehicleno = emu.fleet.vehicles[0]?.vehicleno ?? '';
});
afterAll(async () => {
  await Promise.all([emu.close(), secondsEmu.close()]);
});

/** The rejection of `p`, which must reject. */
async function failureOf(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

/** A fetch that answers one fixed body, for shapes the emulator never sends. */
function fixedFetch(status: number, body: unknown): typeof fetch {
  return async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

describe('reads', () => {
  it('lists the vehicles', async () => {
    expect(await client.listVehicles()).toEqual(emu.fleet.vehicles.map((v) => ({ vehicleno: v.vehicleno })));
  });

  it('reads the fuel history as numbers with times in ms and the unit asked for', async () => {
    const percent = await client.getFuelHistory({ vehicleno, from: NOW - HOUR / 4, to: new Date(NOW), inLitres: false });
    const v = emu.fleet.vehicle(vehicleno);
    if (!v) throw new Error('no vehicle');
    expect(percent).toEqual(
      emu.fleet.fuelReadings(v, NOW - HOUR / 4, NOW, false).map((r) => ({ time: r.time, value: r.value, unit: 'percent' })),
    );
    expect(percent.map((r) => r.time)).toEqual([NOW - 900_000, NOW - 600_000, NOW - 300_000, NOW]);
    const litres = await client.getFuelHistory({ vehicleno, from: NOW - HOUR / 4, to: NOW, inLitres: true });
    expect(litres.every((r) => r.unit === 'litres' && typeof r.value === 'number')).toBe(true);
  });

  it('sends seconds and normalises answered seconds to ms when the service works in seconds', async () => {
    const s = new UpstreamClient({ baseUrl: secondsEmu.url, token: 'tok', timeUnit: 's' });
    const readings = await s.getFuelHistory({ vehicleno, from: NOW - 600_000, to: NOW, inLitres: false });
    expect(readings.map((r) => r.time)).toEqual([NOW - 600_000, NOW - 300_000, NOW]);
  });

  it('reads fuel used in the documented shape: litres used (the drops of the litre history), levels, ignition, refuels', async () => {
    const q = { vehicleno, from: NOW - 2 * DAY, to: NOW };
    const litres = await client.getFuelHistory({ ...q, inLitres: true });
    const percent = await client.getFuelHistory({ ...q, inLitres: false });
    let drops = 0;
    let rise = 0;
    const refuels: Array<{ time: number; litres: number }> = [];
    for (let i = 1; i < litres.length; i++) {
      const d = Math.round((litres[i - 1]?.value ?? 0) * 100) - Math.round((litres[i]?.value ?? 0) * 100);
      if (d > 0) drops += d;
      if (d < 0) rise -= d;
      if (d >= 0 && rise > 0) {
        refuels.push({ time: litres[i - 1]!.time, litres: rise / 100 });
        rise = 0;
      }
    }
    const used = await client.getFuelUsed(q);
    expect(used).toEqual({
      ...q,
      value: drops / 100,
      unit: 'litres',
      startPercent: percent[0]!.value,
      endPercent: percent.at(-1)!.value,
      startLitres: litres[0]!.value,
      endLitres: litres.at(-1)!.value,
      lastIgnitionOn: expect.any(Number),
      lastIgnitionOff: expect.any(Number),
      refuels,
    });
    const v = emu.fleet.vehicle(vehicleno)!;
    // The ignition really changed there, in epoch ms.
    expect([emu.fleet.gpsAt(v, used.lastIgnitionOn! - 1).ignstatus, emu.fleet.gpsAt(v, used.lastIgnitionOn!).ignstatus]).toEqual([0, 1]);
    expect([emu.fleet.gpsAt(v, used.lastIgnitionOff! - 1).ignstatus, emu.fleet.gpsAt(v, used.lastIgnitionOff!).ignstatus]).toEqual([1, 0]);
    expect(drops).toBeGreaterThan(0);
  });

  it('reads fuel used from a service working in seconds, its times in ms', async () => {
    const s = new UpstreamClient({ baseUrl: secondsEmu.url, token: 'tok', timeUnit: 's' });
    const ms = await client.getFuelUsed({ vehicleno, from: NOW - 2 * DAY, to: NOW });
    expect(await s.getFuelUsed({ vehicleno, from: NOW - 2 * DAY, to: NOW })).toEqual(ms);
  });

  const none = { startPercent: null, endPercent: null, startLitres: null, endLitres: null, lastIgnitionOn: null, lastIgnitionOff: null, refuels: null };

  it('accepts fuel used as a bare string-shaped number, unit unknown', async () => {
    const bare = new UpstreamClient({ baseUrl: 'http://x', token: 't', fetch: fixedFetch(200, { status: 'SUCCESS', data: '4.20', err: '', msg: '' }) });
    expect(await bare.getFuelUsed({ vehicleno: 'X', from: 1, to: 2 })).toEqual({ vehicleno: 'X', from: 1, to: 2, value: 4.2, unit: null, ...none });
  });

  it('accepts the emulator\'s shape before the document was known, and the documented one with numbers, seconds and missing fields', async () => {
    const older = new UpstreamClient({ baseUrl: 'http://x', token: 't', fetch: fixedFetch(200, { status: 'SUCCESS', data: { vehicleno: 'X', starttime: 1, endtime: 2, fuelused: '3.50', unit: 'litres' }, err: '', msg: '' }) });
    expect(await older.getFuelUsed({ vehicleno: 'X', from: 1, to: 2 })).toEqual({ vehicleno: 'X', from: 1, to: 2, value: 3.5, unit: 'litres', ...none });
    const documented = new UpstreamClient({
      baseUrl: 'http://x',
      token: 't',
      fetch: fixedFetch(200, {
        status: 'SUCCESS',
        data: { fuelused: 12.5, starttime: 1748736000, endtime: 1748822400, startfl: '61.20', endfl: 40, startfl_litres: null, lastignon: 1748800000, refueling_events: [{ time: '1748790000', litres: '20.00', station: 'depot' }, {}] },
        err: '',
        msg: '',
      }),
    });
    expect(await documented.getFuelUsed({ vehicleno: 'X', from: 1, to: 2 })).toEqual({
      vehicleno: 'X', from: 1, to: 2, value: 12.5, unit: 'litres',
      startPercent: 61.2, endPercent: 40, startLitres: null, endLitres: null, lastIgnitionOn: 1748800000000, lastIgnitionOff: null,
      refuels: [{ time: 1748790000000, litres: 20 }, { time: null, litres: null }],
    });
  });
});

describe('commands', () => {
  it('immobilizes and returns the service\'s sentence', async () => {
    const ack = await client.immobilize({ vehicleno, type: 'movement', immediate: true });
    expect(ack).toEqual({ message: `movement Immobilize command sent for Vehicle ${vehicleno}`, data: `movement Immobilize command sent for Vehicle ${vehicleno}`, msg: 'OK' });
    expect(emu.state.commands.at(-1)).toMatchObject({ op: 'immobilize', vehicleno, type: 'movement', immediate: true });
  });

  it('mobilizes', async () => {
    expect((await client.mobilize({ vehicleno, type: 'chargendischarge' })).message).toBe(
      `chargendischarge Mobilize command sent for Vehicle ${vehicleno}`,
    );
  });

  it('changes the password', async () => {
    expect((await client.changePassword({ username: 'demo', newPassword: 'n3w-passw0rd' })).message).toBe('Password changed for user demo');
    expect(emu.state.users[0]?.password).toBe('n3w-passw0rd');
  });
});

describe('FAILURE envelopes become UpstreamError with err, msg and HTTP status', () => {
  const cases: Array<[string, (c: UpstreamClient) => Promise<unknown>, string, string]> = [
    ['bad token', () => new UpstreamClient({ baseUrl: emu.url, token: 'wrong' }).listVehicles(), 'invalid_token', 'token is not valid'],
    ['empty token', () => new UpstreamClient({ baseUrl: emu.url, token: '' }).listVehicles(), 'invalid_token', 'token is not valid'],
    ['unknown vehicle', (c) => c.getFuelUsed({ vehicleno: 'ZZ99ZZ9999', from: NOW - HOUR, to: NOW }), 'unknown_vehicle', 'vehicle ZZ99ZZ9999 is not in your fleet'],
    ['type outside the seven', (c) => c.immobilize({ vehicleno, type: 'brakes' as CommandType, immediate: false }), 'invalid_command_type', 'type must be one of ignition, crank, movement, can, charge, discharge, chargendischarge; got "brakes"'],
    ['empty field', (c) => c.mobilize({ vehicleno: '', type: 'can' }), 'invalid_field', 'vehicleno must be a non-empty string; got an empty string'],
    ['start after end', (c) => c.getFuelHistory({ vehicleno, from: NOW, to: NOW - 1, inLitres: false }), 'invalid_range', 'starttime must not be after endtime'],
    ['another user\'s password', (c) => c.changePassword({ username: 'root', newPassword: 'long enough' }), 'forbidden', 'token may only change the password of its own user, not "root"'],
  ];
  it.each(cases)('%s', async (_name, call, err, msg) => {
    const e = await failureOf(call(client));
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ err, msg, httpStatus: 200 });
  });
});

describe('retries and timeouts', () => {
  it('retries a read after a 503', async () => {
    const before = emu.state.calls.get('listvehicles') ?? 0;
    emu.state.injectFault({ op: 'listvehicles', times: 1, status: 503 });
    expect(await client.listVehicles()).toHaveLength(4);
    expect(emu.state.calls.get('listvehicles')).toBe(before + 2);
  });

  it('never retries a command', async () => {
    const before = emu.state.calls.get('immobilize') ?? 0;
    emu.state.injectFault({ op: 'immobilize', times: 1, status: 503 });
    const e = await failureOf(client.immobilize({ vehicleno, type: 'ignition', immediate: false }));
    expect(e).toMatchObject({ name: 'UpstreamError', err: 'service_unavailable', msg: 'injected fault', httpStatus: 503 });
    expect(emu.state.calls.get('immobilize')).toBe(before + 1);
  });

  it('times out, and retries a read that timed out', async () => {
    const quick = new UpstreamClient({ baseUrl: emu.url, token: 'tok', timeoutMs: 100, retries: 1, backoffMs: 5 });
    emu.state.injectFault({ op: 'getfuelhistory', times: 1, delayMs: 300 });
    expect(await quick.getFuelHistory({ vehicleno, from: NOW, to: NOW, inLitres: false })).toHaveLength(1);
    emu.state.injectFault({ op: 'mobilize', times: 1, delayMs: 300 });
    const e = await failureOf(quick.mobilize({ vehicleno, type: 'can' }));
    expect(e).toBeInstanceOf(UpstreamTransportError);
    expect(e).toMatchObject({ kind: 'timeout', message: 'mobilize failed: timed out after 100 ms' });
  });

  it('reports a refused connection as a network error after the retries', async () => {
    const closed = await startEmulator();
    await closed.close();
    const e = await failureOf(new UpstreamClient({ baseUrl: closed.url, token: 't', retries: 1, backoffMs: 5 }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamTransportError);
    expect(e).toMatchObject({ kind: 'network' });
  });

  it('reports an HTTP error without envelope as such', async () => {
    const bad = new UpstreamClient({ baseUrl: 'http://x', token: 't', retries: 0, fetch: fixedFetch(502, '<html>bad gateway</html>') });
    expect(await failureOf(bad.listVehicles())).toMatchObject({ name: 'UpstreamTransportError', kind: 'http', httpStatus: 502 });
  });

  it('reports a SUCCESS whose data has the wrong shape as a protocol error', async () => {
    const bad = new UpstreamClient({ baseUrl: 'http://x', token: 't', fetch: fixedFetch(200, { status: 'SUCCESS', data: [{ id: 1 }], err: '', msg: '' }) });
    expect(await failureOf(bad.listVehicles())).toBeInstanceOf(UpstreamProtocolError);
  });
});
