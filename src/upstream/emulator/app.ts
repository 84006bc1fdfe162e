/**
 * The emulator's HTTP face: `POST /api/standard/<op>` for the six operations.
 *
 * Every answer of an operation is HTTP 200 with the envelope, SUCCESS or FAILURE alike (like many
 * services of this kind); only requests outside the six operations get 404/405, calls beyond the
 * limits (`limits`) 429 with Retry-After, and injected faults the status they were given. See README.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { OPERATIONS, type Operation } from '../client/schema.js';
import type { Envelope } from '../../telemetry/envelope.js';
import type { TimeUnit } from '../client/time.js';
import { ERR, Failure } from './errors.js';
import { Fleet } from './fleet.js';
import { type OperationContext, runOperation } from './operations.js';
import { DEFAULT_USER, EmulatorState, type EmulatorUser } from './state.js';
import { type EmulatorLimits, LimitKeeper } from './limits.js';

export interface EmulatorOptions {
  /** Fleet seed; default 1. Ignored when `fleet` is given. */
  seed?: number;
  /** Fleet size; default 10. Ignored when `fleet` is given. */
  vehicles?: number;
  fleet?: Fleet;
  /** Shared state (users, command log, faults); a fresh one by default. */
  state?: EmulatorState;
  /** Users when no `state` is given; default one user "demo" with token `token`. */
  users?: EmulatorUser[];
  /** Token of the default user; default "emulator-token". */
  token?: string;
  /** Clock; fuel readings after now() are not returned. */
  now?: () => number;
  /** Unit of starttime/endtime and of fuel `time`; default 'ms'. */
  timeUnit?: TimeUnit;
  /** Longest accepted endtime − starttime; default 31. */
  maxRangeDays?: number;
  /**
   * The provider's limits to enforce (`PROVIDER_LIMITS`, or `scaledLimits(k)` in a test that scales its
   * client's pacing by the same factor); calls beyond them are answered 429. Default: none, as before
   * issue #47, for tests of other things that call the emulator from several clients at once.
   */
  limits?: EmulatorLimits;
}

export interface Emulator {
  app: Hono;
  fleet: Fleet;
  state: EmulatorState;
}

export function createEmulator(opts: EmulatorOptions = {}): Emulator {
  const fleet = opts.fleet ?? Fleet.create({ seed: opts.seed ?? 1, size: opts.vehicles ?? 10 });
  const users = opts.users ?? [{ ...DEFAULT_USER, token: opts.token ?? DEFAULT_USER.token }];
  const state = opts.state ?? new EmulatorState(users);
  const ctx: OperationContext = {
    fleet,
    state,
    now: opts.now ?? Date.now,
    timeUnit: opts.timeUnit ?? 'ms',
    maxRangeMs: (opts.maxRangeDays ?? 31) * 86_400_000,
  };
  const limits = opts.limits ? new LimitKeeper(opts.limits) : undefined;

  const app = new Hono();
  app.all('/api/standard/:op', async (c) => {
    const op = c.req.param('op');
    if (!isOperation(op)) return failure(ERR.notFound, `unknown operation "${op}"`, 404);
    if (c.req.method !== 'POST') {
      return failure(ERR.methodNotAllowed, `${op} accepts POST only`, 405, { allow: 'POST' });
    }
    state.countCall(op);
    const fault = state.takeFault(op);
    if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
    if (fault?.status) {
      const headers: Record<string, string> =
        fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) };
      return failure(ERR.injected, 'injected fault', fault.status, headers);
    }
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return failure(ERR.invalidJson, 'request body must be a JSON object');
    }
    if (limits) {
      const beyond = overLimits(limits, op, body, ctx);
      if (beyond) {
        state.countThrottled(op);
        return failure(beyond.err, beyond.msg, 429, { 'retry-after': String(beyond.retryAfterSeconds) });
      }
    }
    try {
      const envelope: Envelope<unknown> = { status: 'SUCCESS', data: runOperation(op, body, ctx), err: '', msg: 'OK' };
      return c.json(envelope, 200);
    } catch (e) {
      if (e instanceof Failure) return failure(e.err, e.msg);
      throw e;
    }
  });
  app.notFound((c) => failure(ERR.notFound, `no such path: ${c.req.path}`, 404));
  app.onError((e) => failure(ERR.internal, e.message, 500));
  return { app, fleet, state };
}

export function createEmulatorApp(opts: EmulatorOptions = {}): Hono {
  return createEmulator(opts).app;
}

export interface StartEmulatorOptions extends EmulatorOptions {
  /** Default 0: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
}

export interface RunningEmulator extends Emulator {
  /** Base URL, e.g. http://127.0.0.1:41234 (what the client calls `baseUrl`). */
  url: string;
  /** Token of the first user. */
  token: string;
  close(): Promise<void>;
}

export function startEmulator(opts: StartEmulatorOptions = {}): Promise<RunningEmulator> {
  const emulator = createEmulator(opts);
  const host = opts.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: emulator.app.fetch, port: opts.port ?? 0, hostname: host }, (info: AddressInfo) => {
      server.off('error', reject);
      const hostInUrl = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        ...emulator,
        url: `http://${hostInUrl}:${info.port}`,
        token: emulator.state.users[0]?.token ?? '',
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((e) => (e ? fail(e) : done()));
            // Keep-alive connections would hold close() open until they time out.
            if ('closeAllConnections' in server) server.closeAllConnections();
          }),
      });
    });
    server.once('error', reject);
  });
}

/**
 * Whether a call is beyond its account's limits (and if not, counts it). Only a call with a valid,
 * unexpired token has an account to count against; any other is refused by the operation itself. A
 * history call counts against its vehicle only when the vehicle is in the fleet, so that what is kept
 * stays bounded by the fleet.
 */
function overLimits(limits: LimitKeeper, op: Operation, body: unknown, ctx: OperationContext): Extract<ReturnType<LimitKeeper['take']>, { ok: false }> | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { token, vehicleno } = body as { token?: unknown; vehicleno?: unknown };
  if (typeof token !== 'string') return undefined;
  const user = ctx.state.userByToken(token);
  const expiresAt = ctx.state.tokenExpiresAt(token);
  if (!user || (expiresAt !== undefined && expiresAt <= ctx.now())) return undefined;
  const vehicle = op === 'getfuelhistory' && typeof vehicleno === 'string' && ctx.fleet.vehicle(vehicleno) ? vehicleno : undefined;
  const verdict = limits.take(user.username, op, vehicle, ctx.now());
  return verdict.ok ? undefined : verdict;
}

function isOperation(op: string): op is Operation {
  return (OPERATIONS as readonly string[]).includes(op);
}

function failure(err: string, msg: string, status = 200, headers: Record<string, string> = {}): Response {
  const envelope: Envelope<never> = { status: 'FAILURE', data: null, err, msg };
  return new Response(JSON.stringify(envelope), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
