/** The emulator's mutable state: users and their tokens, the command log, injected faults, 429s answered. */
import { createHmac, randomBytes } from 'node:crypto';
import type { CommandType, Operation } from '../client/schema.js';

export interface EmulatorUser {
  username: string;
  password: string;
  token: string;
}

export interface CommandLogEntry {
  at: number;
  op: 'immobilize' | 'mobilize';
  vehicleno: string;
  type: CommandType;
  immediate?: boolean;
  username: string;
}

export interface Fault {
  /** Which operation; '*' for any. */
  op: Operation | '*';
  /** How many calls it applies to. */
  times: number;
  /** Answer this HTTP status with a FAILURE envelope; without it, only the delay applies. */
  status?: number;
  /** Wait this long before answering (to provoke client timeouts). */
  delayMs?: number;
  /** Sent as Retry-After (seconds). */
  retryAfterSeconds?: number;
}

export const DEFAULT_USER: Readonly<EmulatorUser> = {
  username: 'demo',
  password: 'demo-password',
  token: 'emulator-token',
};

export class EmulatorState {
  readonly users: EmulatorUser[];
  readonly commands: CommandLogEntry[] = [];
  private readonly faults: Fault[] = [];
  /** Calls received per operation, faults included; handy in tests of retries. */
  readonly calls = new Map<Operation, number>();
  /** Calls answered 429 per operation, for being beyond the limits (limits.ts); faults injected with 429 are not counted here. */
  readonly throttled = new Map<Operation, number>();
  /** Tokens issued with an expiry (`issueToken`): token → its user and when it expires (emulator clock, ms). */
  private readonly issued = new Map<string, { username: string; expiresAt: number }>();
  /** Signs issued tokens, so that they look and parse as the JWTs a real service might issue. */
  private readonly signingKey = randomBytes(32);

  constructor(users: readonly EmulatorUser[] = [DEFAULT_USER]) {
    if (users.length === 0) throw new Error('the emulator needs at least one user');
    this.users = users.map((u) => ({ ...u }));
  }

  /** The user a token is of, whether or not it has expired (see `tokenExpiresAt`). */
  userByToken(token: string): EmulatorUser | undefined {
    const issued = this.issued.get(token);
    if (issued) return this.users.find((u) => u.username === issued.username);
    return this.users.find((u) => u.token === token);
  }

  /**
   * A new token of `username` that expires at `expiresAt` (emulator clock, epoch ms), shaped as a JWT
   * (HS256, payload `{"sub", "iat", "exp"}` with `exp` in seconds, as RFC 7519 has it): the client reads
   * its expiry from it. Calls with it are refused (`token_expired`) from `expiresAt` on. The users'
   * configured tokens never expire.
   */
  issueToken(username: string, expiresAt: number, issuedAt: number = Date.now()): string {
    if (!this.users.some((u) => u.username === username)) throw new Error(`no user ${username}`);
    const part = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const head = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: username, iat: Math.floor(issuedAt / 1000), exp: Math.floor(expiresAt / 1000) })}`;
    const token = `${head}.${createHmac('sha256', this.signingKey).update(head).digest('base64url')}`;
    this.issued.set(token, { username, expiresAt: Math.floor(expiresAt / 1000) * 1000 });
    return token;
  }

  /** When a token issued by `issueToken` expires (ms); undefined for the configured tokens, which never do. */
  tokenExpiresAt(token: string): number | undefined {
    return this.issued.get(token)?.expiresAt;
  }

  /** Make the next `times` calls of `op` fail or stall, for demos and tests of client retries. */
  injectFault(fault: Fault): void {
    this.faults.push({ ...fault });
  }

  /** The fault that applies to this call, if any (consumes one use of it). */
  takeFault(op: Operation): Fault | undefined {
    const i = this.faults.findIndex((f) => f.times > 0 && (f.op === '*' || f.op === op));
    const fault = this.faults[i];
    if (!fault) return undefined;
    fault.times -= 1;
    if (fault.times === 0) this.faults.splice(i, 1);
    return fault;
  }

  countCall(op: Operation): void {
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
  }

  countThrottled(op: Operation): void {
    this.throttled.set(op, (this.throttled.get(op) ?? 0) + 1);
  }

  /** Calls answered 429 for being beyond the limits, all operations together. */
  throttledTotal(): number {
    let n = 0;
    for (const c of this.throttled.values()) n += c;
    return n;
  }
}
