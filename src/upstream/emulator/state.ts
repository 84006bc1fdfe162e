/** The emulator's mutable state: users and their tokens, the command log, injected faults. */
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

  constructor(users: readonly EmulatorUser[] = [DEFAULT_USER]) {
    if (users.length === 0) throw new Error('the emulator needs at least one user');
    this.users = users.map((u) => ({ ...u }));
  }

  userByToken(token: string): EmulatorUser | undefined {
    return this.users.find((u) => u.token === token);
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
}
