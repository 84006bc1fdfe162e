/**
 * The six operations as pure functions of (request body, fleet, state): they return the `data` of a
 * SUCCESS envelope or throw a `Failure`. HTTP lives in app.ts.
 */
import {
  COMMAND_TYPES,
  type DataOut,
  type Operation,
  type RequestBody,
  requestSchemas,
} from '../client/schema.js';
import type { TimeUnit } from '../client/time.js';
import { ERR, Failure } from './errors.js';
import { type Fleet, SEGMENT_MS, type VehicleProfile } from './fleet.js';
import type { EmulatorState, EmulatorUser } from './state.js';

export interface OperationContext {
  fleet: Fleet;
  state: EmulatorState;
  now: () => number;
  timeUnit: TimeUnit;
  maxRangeMs: number;
}

export const MIN_PASSWORD_LENGTH = 8;

type Body = Record<string, unknown>;

export function runOperation<O extends Operation>(op: O, body: unknown, ctx: OperationContext): DataOut<O> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new Failure(ERR.invalidJson, 'request body must be a JSON object');
  }
  const raw = body as Body;
  const user = authenticate(raw, ctx);
  const handlers: { [K in Operation]: (b: Body) => DataOut<K> } = {
    listvehicles: () => ctx.fleet.vehicles.map((v) => ({ vehicleno: v.vehicleno })),
    getfuelhistory: (b) => fuelHistory(parse('getfuelhistory', b, ctx), ctx),
    getfuelused: (b) => fuelUsed(parse('getfuelused', b, ctx), ctx),
    immobilize: (b) => {
      const req = parse('immobilize', b, ctx);
      vehicle(req.vehicleno, ctx);
      ctx.state.commands.push({ at: ctx.now(), op: 'immobilize', vehicleno: req.vehicleno, type: req.type, immediate: req.immediate, username: user.username });
      ctx.fleet.obey({ op: 'immobilize', vehicleno: req.vehicleno, type: req.type, at: ctx.now() });
      return `${req.type} Immobilize command sent for Vehicle ${req.vehicleno}`;
    },
    mobilize: (b) => {
      // The spec's mobilize has no `immediate`; a caller sending one expects an effect it will not get.
      if ('immediate' in b) throw new Failure(ERR.invalidField, 'immediate is not accepted by mobilize');
      const req = parse('mobilize', b, ctx);
      vehicle(req.vehicleno, ctx);
      ctx.state.commands.push({ at: ctx.now(), op: 'mobilize', vehicleno: req.vehicleno, type: req.type, username: user.username });
      ctx.fleet.obey({ op: 'mobilize', vehicleno: req.vehicleno, type: req.type, at: ctx.now() });
      return `${req.type} Mobilize command sent for Vehicle ${req.vehicleno}`;
    },
    changepassword: (b) => {
      const req = parse('changepassword', b, ctx);
      if (req.username !== user.username) {
        throw new Failure(ERR.forbidden, `token may only change the password of its own user, not "${req.username}"`);
      }
      if ([...req.newpassword].length < MIN_PASSWORD_LENGTH) {
        throw new Failure(ERR.weakPassword, `newpassword must be at least ${MIN_PASSWORD_LENGTH} characters`);
      }
      // Tokens are not derived from passwords: existing tokens stay valid (README, "not shown" choices).
      user.password = req.newpassword;
      return `Password changed for user ${req.username}`;
    },
  };
  return handlers[op](raw);
}

function authenticate(body: Body, ctx: OperationContext): EmulatorUser {
  const token = body.token;
  if (token === undefined) throw new Failure(ERR.invalidToken, 'token is required');
  if (typeof token !== 'string') throw new Failure(ERR.invalidToken, 'token must be a string');
  const user = ctx.state.userByToken(token);
  if (!user) throw new Failure(ERR.invalidToken, 'token is not valid');
  const expiresAt = ctx.state.tokenExpiresAt(token);
  if (expiresAt !== undefined && expiresAt <= ctx.now()) {
    throw new Failure(ERR.tokenExpired, `token expired at ${new Date(expiresAt).toISOString()}`);
  }
  return user;
}

function parse<O extends Operation>(op: O, body: Body, ctx: OperationContext): RequestBody<O> {
  const result = requestSchemas[op].safeParse(body);
  if (result.success) return result.data as RequestBody<O>;
  // Report the first bad field in the spec's order, so that one mistake gives one clear message.
  const field = String(result.error.issues[0]?.path[0] ?? '');
  const value = body[field];
  if (field === 'type' && typeof value === 'string') {
    throw new Failure(ERR.invalidCommandType, `type must be one of ${COMMAND_TYPES.join(', ')}; got "${value}"`);
  }
  const expected = expectation(field, ctx.timeUnit);
  if (value === undefined) throw new Failure(ERR.invalidField, `${field} is required (${expected})`);
  throw new Failure(ERR.invalidField, `${field} must be ${expected}; got ${jsonType(value)}`);
}

function expectation(field: string, unit: TimeUnit): string {
  switch (field) {
    case 'starttime':
    case 'endtime':
      return `an integer epoch timestamp in ${unit === 'ms' ? 'milliseconds' : 'seconds'}`;
    case 'inlitres':
    case 'immediate':
      return 'a boolean';
    case 'type':
      return `one of ${COMMAND_TYPES.join(', ')}`;
    default:
      return 'a non-empty string';
  }
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v === '' ? 'an empty string' : 'a string';
  if (typeof v === 'number') return Number.isInteger(v) ? (v < 0 ? 'a negative number' : 'an integer') : 'a decimal number';
  return `a ${typeof v}`;
}

function vehicle(vehicleno: string, ctx: OperationContext): VehicleProfile {
  const v = ctx.fleet.vehicle(vehicleno);
  if (!v) throw new Failure(ERR.unknownVehicle, `vehicle ${vehicleno} is not in your fleet`);
  return v;
}

/** The requested range in epoch ms, capped at now (there are no readings from the future). */
function range(starttime: number, endtime: number, ctx: OperationContext): { from: number; to: number } {
  if (starttime > endtime) throw new Failure(ERR.invalidRange, 'starttime must not be after endtime');
  const factor = ctx.timeUnit === 'ms' ? 1 : 1000;
  const from = starttime * factor;
  const to = endtime * factor;
  if (to - from > ctx.maxRangeMs) {
    const days = ctx.maxRangeMs / 86_400_000;
    throw new Failure(ERR.rangeTooLarge, `endtime - starttime must not exceed ${days} days`);
  }
  return { from, to: Math.min(to, ctx.now()) };
}

function fuelHistory(req: RequestBody<'getfuelhistory'>, ctx: OperationContext): DataOut<'getfuelhistory'> {
  const v = vehicle(req.vehicleno, ctx);
  const { from, to } = range(req.starttime, req.endtime, ctx);
  const divisor = ctx.timeUnit === 'ms' ? 1 : 1000;
  return ctx.fleet.fuelReadings(v, from, to, req.inlitres).map((r) => ({
    time: r.time / divisor,
    value: r.value.toFixed(2),
  }));
}

/**
 * `getfuelused` in the document's shape: the litres used (the drops of the litre history, see the
 * README's fleet model), the levels at the first and last reading of the range, the last ignition on
 * and off within it, and its refuels (each run of rising readings, told at its last reading).
 */
function fuelUsed(req: RequestBody<'getfuelused'>, ctx: OperationContext): DataOut<'getfuelused'> {
  const v = vehicle(req.vehicleno, ctx);
  const { from, to } = range(req.starttime, req.endtime, ctx);
  const divisor = ctx.timeUnit === 'ms' ? 1 : 1000;
  const percent = ctx.fleet.fuelReadings(v, from, to, false);
  const litres = ctx.fleet.fuelReadings(v, from, to, true);
  const level = (r: { value: number } | undefined): string | null => (r === undefined ? null : r.value.toFixed(2));
  const refuels: DataOut<'getfuelused'>['refueling_events'] = [];
  let rise = 0;
  for (let i = 1; i <= litres.length; i++) {
    const step = i < litres.length ? Math.round(litres[i]!.value * 100) - Math.round(litres[i - 1]!.value * 100) : 0;
    if (step > 0) rise += step;
    else if (rise > 0) {
      refuels.push({ time: litres[i - 1]!.time / divisor, litres: (rise / 100).toFixed(2) });
      rise = 0;
    }
  }
  const ignition = lastIgnitionChanges(ctx, v, from, to);
  return {
    fuelused: ctx.fleet.fuelUsedLitres(v, from, to).toFixed(2),
    starttime: req.starttime,
    endtime: req.endtime,
    startfl: level(percent[0]),
    endfl: level(percent.at(-1)),
    startfl_litres: level(litres[0]),
    endfl_litres: level(litres.at(-1)),
    lastignon: ignition.on === null ? null : ignition.on / divisor,
    lastignoff: ignition.off === null ? null : ignition.off / divisor,
    refueling_events: refuels,
  };
}

/**
 * The last time within (from, to] the ignition went on and off. The fleet's ignition is on exactly
 * while a segment drives, so it changes only where segments meet: those instants are looked at from
 * the end of the range backwards, and the walk stops when both are found.
 */
function lastIgnitionChanges(ctx: OperationContext, v: VehicleProfile, from: number, to: number): { on: number | null; off: number | null } {
  let on: number | null = null;
  let off: number | null = null;
  for (let t = Math.floor(to / SEGMENT_MS) * SEGMENT_MS; t > from && (on === null || off === null); t -= SEGMENT_MS) {
    const now = ctx.fleet.gpsAt(v, t).ignstatus;
    const before = ctx.fleet.gpsAt(v, t - 1).ignstatus;
    if (on === null && now === 1 && before === 0) on = t;
    if (off === null && now === 0 && before === 1) off = t;
  }
  return { on, off };
}
