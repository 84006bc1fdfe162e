import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import type { CommandKeys } from '../queue/keys.js';
import { IMMOBILISATIONS_KEPT, readImmobilisations, type Immobilisations } from './immobilisations.js';
import { FINAL, requestDigestOf, STOPPING_TYPES, type Author, type CommandEntry, type CommandRequest, type CommandState, type VehicleSnapshot } from './model.js';

/**
 * The live command ledger in Redis (CommandKeys; format v1 in src/formats/README.md "Command ledger"):
 * each command as one JSON value with every state it went through, the one command in flight per
 * vehicle, the idempotency keys, and each vehicle's immobilisations (the one it is under and its last ended
 * ones, immobilisations.ts). Every write of a state is one script (`commands-request-5.lua`,
 * `commands-move-4.lua`): a move succeeds only from the states it names, which is the lock that keeps two
 * workers from sending one command.
 */

/** The most commands the ledger keeps by default (COMMANDS_KEEP): the oldest ended ones beyond go (InfluxDB keeps their history). */
export const DEFAULT_KEEP = 10_000;

type WithScripts = {
  telematicsCommandsRequest(entries: string, live: string, idem: string, order: string, changes: string, ...args: string[]): Promise<[string, string, string]>;
  telematicsCommandsMove(entries: string, live: string, immobilised: string, changes: string, ...args: string[]): Promise<string | null>;
};

export type RequestOutcome =
  | { outcome: 'created'; command: CommandEntry; replaced?: CommandEntry }
  | { outcome: 'same'; command: CommandEntry }
  | { outcome: 'conflict'; id: string }
  | { outcome: 'busy'; id: string };

/** What a move sets beside the state. */
export type MovePatch = Partial<Pick<CommandEntry, 'sentAt' | 'answer' | 'confirmBy'>>;

/** A new command's id: time-ordered and unique without coordination (`c` + ms in base 36 + 8 random hex digits). */
export function newCommandId(now: number): string {
  return `c${now.toString(36)}${randomBytes(4).toString('hex')}`;
}

export class CommandLedger {
  /** The changes stream's bound (MAXLEN ~): changes beyond it not yet published (tell.ts) are lost from the history (never from the ledger). */
  readonly changesMax: number;

  /**
   * Called each time a vehicle's immobilisation is set or lifted, with the time it was: the vehicle events
   * judge its records from then again (a correction), for those derived before the workers' view of the
   * immobilisations had it.
   */
  onImmobilisation: ((vehicleno: string, at: number) => Promise<void>) | undefined;

  constructor(
    readonly redis: RedisClient,
    readonly keys: CommandKeys,
    readonly keep: number = DEFAULT_KEEP,
  ) {
    // Room for every command kept to change state several times before the changes are published (tell.ts).
    this.changesMax = Math.max(1_000, keep * 10);
    defineScript(redis, 'telematicsCommandsRequest', 'commands-request-5');
    defineScript(redis, 'telematicsCommandsMove', 'commands-move-4');
  }

  private get scripts(): WithScripts {
    return this.redis as unknown as WithScripts;
  }

  /**
   * Records a command as `requested`, with who asked, why, and the vehicle's state now; a command of the
   * same vehicle still in flight is replaced (cancelled, and named in `replaces`).
   */
  async request(r: CommandRequest, author: Author, vehicle: VehicleSnapshot, now: number, expiresAt: number): Promise<RequestOutcome> {
    const id = newCommandId(now);
    const entry: CommandEntry = {
      v: 1,
      id,
      vehicleno: r.vehicleno,
      op: r.op,
      type: r.type,
      immediate: r.immediate,
      reason: r.reason,
      author,
      requestedAt: now,
      ...(r.idempotencyKey !== undefined ? { idempotencyKey: r.idempotencyKey } : {}),
      vehicle,
      state: 'requested',
      history: [{ state: 'requested', at: now }],
      expiresAt,
    };
    const k = this.keys;
    const [outcome, got, replaced] = await this.scripts.telematicsCommandsRequest(k.entries, k.live, k.idempotency, k.order, k.changes, JSON.stringify(entry), id, r.vehicleno, r.idempotencyKey ?? '', requestDigestOf(r, author), String(now), String(this.keep), String(this.changesMax));
    if (outcome === 'created') {
      const old = replaced ? (JSON.parse(replaced) as CommandEntry) : undefined;
      return old ? { outcome, command: { ...entry, replaces: old.id }, replaced: old } : { outcome, command: entry };
    }
    if (outcome === 'same') return { outcome, command: (await this.get(got))! };
    return { outcome: outcome as 'conflict' | 'busy', id: got };
  }

  /**
   * Moves command `id` from one of `from` to `to`, with a note and fields to set; undefined when it was in
   * none of `from` (another worker moved it first). A confirmed immobilise of a stopping type puts its
   * vehicle under immobilisation; a mobilise of a stopping type lifts it as it is claimed for sending (from
   * then on the vehicle may be free again: a record after it never counts as moving while immobilised).
   */
  async move(id: string, from: readonly CommandState[], to: CommandState, now: number, note = '', patch: MovePatch = {}, op?: Pick<CommandEntry, 'op' | 'type'>): Promise<CommandEntry | undefined> {
    const k = this.keys;
    const stops = op !== undefined && STOPPING_TYPES.has(op.type);
    const mark = stops && op.op === 'immobilize' && to === 'confirmed' ? 'set' : stops && op.op === 'mobilize' && to === 'sending' ? 'clear' : '';
    const out = await this.scripts.telematicsCommandsMove(k.entries, k.live, k.immobilised, k.changes, id, from.join(','), to, String(now), note, JSON.stringify(patch), mark, FINAL.has(to) ? '1' : '0', String(this.changesMax), String(IMMOBILISATIONS_KEPT));
    if (out === null) return undefined;
    const entry = JSON.parse(out) as CommandEntry;
    if (mark !== '') await this.onImmobilisation?.(entry.vehicleno, now);
    return entry;
  }

  async get(id: string): Promise<CommandEntry | undefined> {
    const json = await this.redis.hget(this.keys.entries, id);
    return json === null ? undefined : (JSON.parse(json) as CommandEntry);
  }

  /** The commands in flight (one per vehicle at most), for the sweep. */
  async inFlight(): Promise<CommandEntry[]> {
    const ids = await this.redis.hvals(this.keys.live);
    if (ids.length === 0) return [];
    const jsons = await this.redis.hmget(this.keys.entries, ...ids);
    return jsons.flatMap((j) => (j === null ? [] : [JSON.parse(j) as CommandEntry]));
  }

  /** The newest commands first, at most `limit`, of one vehicle when given (read from the newest `scan` ids). */
  async list(opts: { vehicleno?: string; limit: number }): Promise<CommandEntry[]> {
    const out: CommandEntry[] = [];
    const page = 500;
    for (let start = 0; out.length < opts.limit; start += page) {
      const ids = await this.redis.zrevrange(this.keys.order, start, start + page - 1);
      if (ids.length === 0) break;
      const jsons = await this.redis.hmget(this.keys.entries, ...ids);
      for (const j of jsons) {
        if (j === null) continue;
        const e = JSON.parse(j) as CommandEntry;
        if (opts.vehicleno === undefined || e.vehicleno === opts.vehicleno) out.push(e);
        if (out.length >= opts.limit) break;
      }
    }
    return out;
  }

  /** The vehicles under a confirmed immobilisation of a stopping type, and the ended ones each keeps. */
  async immobilisations(): Promise<Immobilisations> {
    return readImmobilisations(this.redis, this.keys);
  }
}
