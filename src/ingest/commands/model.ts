/**
 * The command ledger's model, pure: what a command is, its states and the moves between them, which
 * types wait until the vehicle is safe, what makes a vehicle safe, and what in the vehicle's own data
 * confirms a command. No Redis, no clock of its own: `ledger.ts` stores, `sweep.ts` drives.
 */
import { COMMAND_TYPES, type CommandType } from '../../upstream/client/schema.js';

export { COMMAND_TYPES, type CommandType };

export const OPS = ['immobilize', 'mobilize'] as const;
export type CommandOp = (typeof OPS)[number];

/**
 * A command's states. `sending` is the moment between a worker claiming the command (the transition
 * script, the lock) and the upstream's answer: a command is never in two workers' hands, and one whose
 * worker died there is marked `failed` as "may have been carried out", never sent again.
 */
export const STATES = ['requested', 'waiting', 'sending', 'sent', 'confirmed', 'not_confirmed', 'failed', 'expired', 'cancelled'] as const;
export type CommandState = (typeof STATES)[number];

/** States a command ends in: it no longer holds its vehicle's one place in flight. */
export const FINAL: ReadonlySet<CommandState> = new Set(['confirmed', 'not_confirmed', 'failed', 'expired', 'cancelled']);

/** The moves the ledger allows; everything else is refused by the transition script. */
export const MOVES: Readonly<Record<CommandState, readonly CommandState[]>> = {
  requested: ['waiting', 'sending', 'cancelled', 'expired'],
  waiting: ['sending', 'expired', 'cancelled'],
  // Only the answer (or its absence) moves a command out of `sending`; a 429 (refused, not carried out:
  // the account's rate limit) puts it back to wait for its next turn.
  sending: ['sent', 'failed', 'waiting'],
  // A sent command is replaced (cancelled, "may have been carried out") only by a newer one for its vehicle.
  sent: ['confirmed', 'not_confirmed', 'cancelled'],
  confirmed: [],
  not_confirmed: [],
  failed: [],
  expired: [],
  cancelled: [],
};

export function canMove(from: CommandState, to: CommandState): boolean {
  return MOVES[from].includes(to);
}

/**
 * The types that can stop a moving vehicle, and so wait until it stands with its ignition off:
 * `ignition`, `crank`, `movement` cut or hold the drive; `can` acts on the vehicle's CAN bus, which
 * carries the motor controller's commands on an electric vehicle; `discharge` and `chargendischarge`
 * cut the pack's output, which on an electric vehicle is the motor's power. Only `charge` (blocking the
 * pack from being charged) cannot, and goes at once.
 */
export const STOPPING_TYPES: ReadonlySet<CommandType> = new Set(['ignition', 'crank', 'movement', 'can', 'discharge', 'chargendischarge']);

/** Whether a command waits for the vehicle to be safe: an immobilise of a stopping type, without `immediate`. Mobilise never waits. */
export function waitsForSafety(op: CommandOp, type: CommandType, immediate: boolean): boolean {
  return op === 'immobilize' && STOPPING_TYPES.has(type) && !immediate;
}

/** A value and the record time it came from. */
export type Timed = readonly [time: number, value: number];

/**
 * The vehicle's latest values as the worker keeps them (`latest.ts`): each field's newest value with its
 * record time, and the newest record time at which it was seen active (moving or the ignition on), charging
 * or discharging.
 */
export interface LatestValues {
  fields: Partial<Record<LatestField, Timed>>;
  /** Newest fix time with the ignition on or a speed over MOTION_SPEED, and that fix's lat, lng, speed, ignition. */
  active?: readonly [time: number, lat: number, lng: number, speed: number, ignition: number];
  /** Newest CAN record time showing a charging current (or load_status 2). */
  charging?: number;
  /** Newest CAN record time showing a discharging current (or load_status 1). */
  discharging?: number;
}

export const LATEST_FIELDS = ['lat', 'lng', 'speed', 'ignstatus', 'soc', 'current', 'load_status', 'allow_charging', 'allow_discharging'] as const;
export type LatestField = (typeof LATEST_FIELDS)[number];

/** The vehicle's state as a command records it when asked (the audit's "what it was doing"). */
export interface VehicleSnapshot {
  /** The newest GPS fix's time, when one is known. */
  fixTime?: number;
  lat?: number;
  lng?: number;
  speed?: number;
  ignition?: number;
  soc?: number;
  allowCharging?: number;
  allowDischarging?: number;
}

export function snapshotOf(l: LatestValues | undefined): VehicleSnapshot {
  if (!l) return {};
  const f = l.fields;
  const s: VehicleSnapshot = {};
  const fix = f.lat ?? f.speed ?? f.ignstatus;
  if (fix) s.fixTime = fix[0];
  if (f.lat) s.lat = f.lat[1];
  if (f.lng) s.lng = f.lng[1];
  if (f.speed) s.speed = f.speed[1];
  if (f.ignstatus) s.ignition = f.ignstatus[1];
  if (f.soc) s.soc = f.soc[1];
  if (f.allow_charging) s.allowCharging = f.allow_charging[1];
  if (f.allow_discharging) s.allowDischarging = f.allow_discharging[1];
  return s;
}

export interface SafetyOptions {
  /** COMMANDS_SAFE_FIX_AGE: the newest fix must be at most this old (of the wall clock) to say the vehicle stands. */
  maxFixAgeMs: number;
  /** MOTION_SPEED: at or under it the vehicle stands. */
  motionSpeedKmh: number;
}

/**
 * Whether the vehicle is safe to immobilise now: its newest fix no older than `maxFixAgeMs`, standing,
 * with the ignition off, and no fix that recent with the ignition on or moving. Undefined when safe; else
 * why not (for the ledger's note).
 */
export function unsafeBecause(l: LatestValues | undefined, now: number, o: SafetyOptions): string | undefined {
  const f = l?.fields;
  const speed = f?.speed;
  const ign = f?.ignstatus;
  if (!speed || !ign) return 'no GPS fix with speed and ignition known';
  const fixTime = Math.min(speed[0], ign[0]);
  if (now - fixTime > o.maxFixAgeMs) return `the newest fix is ${Math.round((now - fixTime) / 1000)} s old (COMMANDS_SAFE_FIX_AGE ${Math.round(o.maxFixAgeMs / 1000)} s)`;
  if (speed[1] > o.motionSpeedKmh) return `moving at ${speed[1]} km/h`;
  if (ign[1] !== 0) return 'ignition on';
  return undefined;
}

/** What `judge` needs of a command. */
export interface Judged {
  op: CommandOp;
  type: CommandType;
  /** When it was sent (the upstream answered): only records after it count. */
  sentAt: number;
}

export interface Verdict {
  confirmed: boolean;
  /** What in the data said so (or what is missing), for the ledger's note. */
  because: string;
}

const after = (t: Timed | undefined, at: number): Timed | undefined => (t !== undefined && t[0] > at ? t : undefined);

/**
 * What the vehicle's own records say of a sent command, or undefined while they say nothing yet (no record
 * after it was sent that bears on it). Per type, immobilise:
 * - `charge`: a CAN record after sending with `allow_charging` 0, or one showing no charging current;
 * - `discharge`: `allow_discharging` 0, or no discharging current;
 * - `chargendischarge`: both;
 * - `ignition`, `crank`, `movement`, `can`: a fix after sending standing with the ignition off, and no fix
 *   after sending with the ignition on or moving.
 * Mobilise, the reverse: `allow_charging` / `allow_discharging` 1 (or the current flowing); a fix with the
 * ignition on or moving. A record showing the opposite does not end the watch: the device may act late;
 * the window (`sweep.ts`) does, as not confirmed.
 */
export function judge(c: Judged, l: LatestValues | undefined): Verdict | undefined {
  if (!l) return undefined;
  const f = l.fields;
  const S = c.sentAt;
  /** The pack's side (`charge` or `discharge`): its allow flag after the send, else its current, said so. */
  const pack = (allowField: 'allow_charging' | 'allow_discharging', activeAt: number | undefined, what: 'charging' | 'discharging'): Verdict | undefined => {
    const allow = after(f[allowField], S);
    const current = after(f.current, S);
    if (c.op === 'immobilize') {
      if (allow && allow[1] === 0) return { confirmed: true, because: `${allowField} 0 at ${iso(allow[0])}` };
      if (current && !(activeAt !== undefined && activeAt >= current[0])) return { confirmed: true, because: `no ${what} current at ${iso(current[0])}` };
      return undefined;
    }
    if (allow && allow[1] === 1) return { confirmed: true, because: `${allowField} 1 at ${iso(allow[0])}` };
    if (activeAt !== undefined && activeAt > S) return { confirmed: true, because: `${what} at ${iso(activeAt)}` };
    return undefined;
  };
  const charge = (): Verdict | undefined => pack('allow_charging', l.charging, 'charging');
  const discharge = (): Verdict | undefined => pack('allow_discharging', l.discharging, 'discharging');
  switch (c.type) {
    case 'charge':
      return charge();
    case 'discharge':
      return discharge();
    case 'chargendischarge': {
      const a = charge();
      const b = discharge();
      return a && b ? { confirmed: true, because: `${a.because}; ${b.because}` } : undefined;
    }
    default: {
      const speed = after(f.speed, S);
      const ign = after(f.ignstatus, S);
      const activeAfter = l.active !== undefined && l.active[0] > S;
      if (c.op === 'immobilize') {
        if (!speed || !ign) return undefined;
        if (activeAfter) return undefined;
        return { confirmed: true, because: `standing with the ignition off at ${iso(Math.min(speed[0], ign[0]))}` };
      }
      if (activeAfter) return { confirmed: true, because: `${l.active![4] === 1 ? 'ignition on' : 'moving'} at ${iso(l.active![0])}` };
      return undefined;
    }
  }
}

const iso = (t: number): string => new Date(t).toISOString();

/** Who asked: a named admin credential, or an automation rule. */
export interface Author {
  kind: 'credential' | 'rule';
  name: string;
}

/** One change of a command's state, as the ledger keeps it. */
export interface Transition {
  state: CommandState;
  at: number;
  note?: string;
}

/**
 * A command as the ledger stores it (format `v: 1`, src/formats/README.md "Command ledger"): what was asked,
 * by whom, why, the vehicle's state then, and every state it went through.
 */
export interface CommandEntry {
  v: 1;
  id: string;
  vehicleno: string;
  op: CommandOp;
  type: CommandType;
  immediate: boolean;
  reason: string;
  author: Author;
  requestedAt: number;
  idempotencyKey?: string;
  vehicle: VehicleSnapshot;
  state: CommandState;
  history: Transition[];
  /** The command this one replaced (cancelled) for its vehicle, and the one that replaced this. */
  replaces?: string;
  replacedBy?: string;
  /** A waiting command expires at this time (requestedAt + COMMANDS_WAIT_MAX). */
  expiresAt: number;
  /** When the upstream answered; its sentence. */
  sentAt?: number;
  answer?: string;
  /** A sent command is confirmed or not by this time (sentAt + COMMANDS_CONFIRM_WINDOW). */
  confirmBy?: number;
}

/** What a request asks, checked (`routes.ts` parses the body into it). */
export interface CommandRequest {
  vehicleno: string;
  op: CommandOp;
  type: CommandType;
  immediate: boolean;
  reason: string;
  idempotencyKey?: string;
}

/** What an idempotency key stands for: the same key with the same request by the same author is the same command. */
export function requestDigestOf(r: CommandRequest, author: Author): string {
  return JSON.stringify([r.vehicleno, r.op, r.type, r.immediate, r.reason, author.kind, author.name]);
}

export const REASON_MAX = 500;
export const IDEMPOTENCY_KEY_MAX = 200;
