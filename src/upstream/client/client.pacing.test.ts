/**
 * The client keeps the provider's published limits (issue #47): every call paced to 3 a second, 400 ms
 * apart, measured where the calls arrive (a node:http server on 127.0.0.1, and the emulator enforcing
 * the limits); 429 and Retry-After honoured, a read tried again after the wait, a command never sent
 * twice and told as not carried out.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../emulator/app.js';
import { PROVIDER_LIMITS } from '../emulator/limits.js';
import { UpstreamClient } from './client.js';
import { UpstreamThrottledError } from './errors.js';
import { InProcessPacer, UNPACED } from './pacer.js';
import { failureOf, serversClosedAfterEach } from './servers.testkit.js';

const servers = serversClosedAfterEach();

interface Arrival {
  at: number;
  op: string;
}

/** A server recording when each call arrives (performance.now, ms) and answering with `answer`. */
async function recording(answer: (op: string, n: number, res: ServerResponse) => void = ok): Promise<{ url: string; arrivals: Arrival[] }> {
  const arrivals: Arrival[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const at = performance.now();
    const op = req.url?.split('/').at(-1) ?? '';
    req.resume();
    req.on('end', () => {
      arrivals.push({ at, op });
      answer(op, arrivals.length, res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, arrivals };
}

function ok(op: string, _n: number, res: ServerResponse): void {
  const data = op === 'listvehicles' || op === 'getfuelhistory' ? [] : op === 'getfuelused' ? { fuelused: '1.00' } : `${op} done`;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ status: 'SUCCESS', data, err: '', msg: 'OK' }));
}

function tooMany(res: ServerResponse, retryAfter: string | undefined, err = 'rate_limited', msg = 'too many calls'): void {
  res.statusCode = 429;
  if (retryAfter !== undefined) res.setHeader('retry-after', retryAfter);
  res.end(JSON.stringify({ status: 'FAILURE', data: null, err, msg }));
}

/** Every operation once or twice, all asked for at the same moment. */
function everyOperation(c: UpstreamClient): Array<Promise<unknown>> {
  const q = { vehicleno: 'KA01AB1234', from: 0, to: 1 };
  return [
    c.listVehicles(),
    c.getFuelHistory({ ...q, inLitres: true }),
    c.getFuelUsed(q),
    c.immobilize({ vehicleno: q.vehicleno, type: 'charge', immediate: false }),
    c.mobilize({ vehicleno: q.vehicleno, type: 'charge' }),
    c.changePassword({ username: 'demo', newPassword: 'long enough 1' }),
    c.listVehicles(),
  ];
}

const gaps = (xs: readonly Arrival[]): number[] => xs.slice(1).map((a, i) => a.at - xs[i]!.at);
/** The most arrivals within any one second. */
function mostInASecond(xs: readonly Arrival[]): number {
  let most = 0;
  for (let i = 0; i < xs.length; i++) most = Math.max(most, xs.filter((a) => a.at >= xs[i]!.at && a.at < xs[i]!.at + 1000).length);
  return most;
}

describe('pacing', () => {
  it('keeps every call, of every operation, 400 ms apart and 3 a second, as they arrive; unpaced they bunch', async () => {
    const paced = await recording();
    await Promise.all(everyOperation(new UpstreamClient({ baseUrl: paced.url, token: 't' })));
    expect(paced.arrivals.map((a) => a.op).sort()).toEqual(['changepassword', 'getfuelhistory', 'getfuelused', 'immobilize', 'listvehicles', 'listvehicles', 'mobilize']);
    expect(Math.min(...gaps(paced.arrivals))).toBeGreaterThanOrEqual(400);
    expect(mostInASecond(paced.arrivals)).toBeLessThanOrEqual(3);

    const unpaced = await recording();
    await Promise.all(everyOperation(new UpstreamClient({ baseUrl: unpaced.url, token: 't', pacer: UNPACED })));
    expect(Math.min(...gaps(unpaced.arrivals))).toBeLessThan(400);
    expect(mostInASecond(unpaced.arrivals)).toBeGreaterThan(3);
  });

  it('meets the emulator enforcing the provider\'s limits without a 429; unpaced, it gets them', async () => {
    const emu = await startEmulator({ seed: 3, vehicles: 2, token: 'tok', limits: PROVIDER_LIMITS });
    try {
      const vehicleno = emu.fleet.vehicles[0]!.vehicleno;
      const calls = (c: UpstreamClient) => [c.listVehicles(), c.getFuelHistory({ vehicleno, from: Date.now() - 3_600_000, to: Date.now(), inLitres: false }), c.getFuelUsed({ vehicleno, from: Date.now() - 3_600_000, to: Date.now() }), c.listVehicles()];
      await Promise.all(calls(new UpstreamClient({ baseUrl: emu.url, token: 'tok' })));
      expect(emu.state.throttledTotal()).toBe(0);
      // Unpaced, with no retries: the emulator refuses all but the first.
      const results = await Promise.allSettled(calls(new UpstreamClient({ baseUrl: emu.url, token: 'tok', pacer: UNPACED, retries: 0 })));
      expect(emu.state.throttledTotal()).toBeGreaterThan(0);
      expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual(
        Array(emu.state.throttledTotal()).fill(expect.any(UpstreamThrottledError)),
      );
    } finally {
      await emu.close();
    }
  });

  it('paces to whatever limits it is given', async () => {
    const paced = await recording();
    const c = new UpstreamClient({ baseUrl: paced.url, token: 't', pacer: new InProcessPacer({ maxCallsPerSecond: 10, minGapMs: 50 }, { marginMs: 5 }) });
    await Promise.all(Array.from({ length: 12 }, () => c.listVehicles()));
    expect(Math.min(...gaps(paced.arrivals))).toBeGreaterThanOrEqual(50);
    expect(mostInASecond(paced.arrivals)).toBeLessThanOrEqual(10);
  });
});

describe('429 and Retry-After', () => {
  it('tries a read again after Retry-After, holding every other call of the client meanwhile', async () => {
    const server = await recording((op, n, res) => (n === 1 ? tooMany(res, '1') : ok(op, n, res)));
    const throttled: Array<[string, number | undefined]> = [];
    const c = new UpstreamClient({ baseUrl: server.url, token: 't', onThrottled: (op, wait) => throttled.push([op, wait]) });
    const first = c.getFuelHistory({ vehicleno: 'X', from: 0, to: 1, inLitres: false });
    await new Promise((r) => setTimeout(r, 100));
    const second = c.listVehicles();
    expect(await Promise.all([first, second])).toEqual([[], []]);
    expect(server.arrivals.map((a) => a.op)).toEqual(['getfuelhistory', 'getfuelhistory', 'listvehicles']);
    // Nothing went out within the second the service asked for: neither the retry nor the other call.
    expect(server.arrivals[1]!.at - server.arrivals[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(server.arrivals[2]!.at - server.arrivals[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(throttled).toEqual([['getfuelhistory', 1000]]);
  });

  it('sends a command answered 429 once, and says it was not carried out and when to send it again', async () => {
    const server = await recording((_op, _n, res) => tooMany(res, '2', 'rate_limited', 'too many calls: at most 3 calls a second'));
    const e = await failureOf(new UpstreamClient({ baseUrl: server.url, token: 't' }).immobilize({ vehicleno: 'KA01AB1234', type: 'discharge', immediate: false }));
    expect(server.arrivals).toHaveLength(1);
    expect(e).toBeInstanceOf(UpstreamThrottledError);
    expect(e).toMatchObject({ carriedOut: false, retryAfterMs: 2000, httpStatus: 429, err: 'rate_limited', attempts: 1 });
    expect(e.message).toBe(
      'immobilize not carried out: the service answered 429 Too Many Requests (rate_limited: too many calls: at most 3 calls a second); it was sent once and refused, and this client does not send a command twice: retry after 2 s',
    );
  });

  it('fails a read at once when Retry-After is longer than maxRetryAfterMs (a vehicle\'s day of history calls), saying when to retry', async () => {
    const server = await recording((op, n, res) => (n === 1 ? tooMany(res, '3600', 'history_limit', 'at most 24 getfuelhistory calls per vehicle a day') : ok(op, n, res)));
    const c = new UpstreamClient({ baseUrl: server.url, token: 't', maxRetryAfterMs: 30_000 });
    const e = await failureOf(c.getFuelHistory({ vehicleno: 'X', from: 0, to: 1, inLitres: true }));
    expect(server.arrivals).toHaveLength(1);
    expect(e.message).toBe('getfuelhistory refused: the service answered 429 Too Many Requests (history_limit: at most 24 getfuelhistory calls per vehicle a day) after 1 attempt: retry after 3600 s');
    // The hour is that vehicle's, not the account's: the next call is not held for it.
    const started = performance.now();
    await c.listVehicles();
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('tells a read throttled on every attempt as such, with the attempts made', async () => {
    const server = await recording((_op, _n, res) => tooMany(res, undefined));
    const e = await failureOf(new UpstreamClient({ baseUrl: server.url, token: 't', retries: 1, backoffMs: 5 }).listVehicles());
    expect(server.arrivals).toHaveLength(2);
    expect(e.message).toBe('listvehicles refused: the service answered 429 Too Many Requests (rate_limited: too many calls) after 2 attempts: the service named no wait (no Retry-After)');
  });
});
