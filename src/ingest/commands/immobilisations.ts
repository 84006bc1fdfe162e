import { z } from 'zod';
import type { Logger } from '../../log/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { VersionedWatch } from '../../metrics/sampler.js';
import type { Immobilisation, ImmobilisationLookup } from '../events/detectors/immobilised.js';
import type { CommandKeys } from '../queue/keys.js';

/**
 * The immobilisations the ledger holds (CommandKeys.immobilised, written by `commands-move-4.lua`), as the
 * vehicle events read them to emit `moved_while_immobilised` (events/detectors/immobilised.ts): each
 * vehicle's current one and its last ended ones (IMMOBILISATIONS_KEPT), as intervals of wall time.
 */

/** The ended immobilisations kept a vehicle: enough for a correction to judge records up to EVENTS_HORIZON back across several commands. */
export const IMMOBILISATIONS_KEPT = 8;

const text = z.string().min(1).max(64);
const time = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const ended = z.object({ id: text, type: text, from: time, to: time }).refine((p) => p.to >= p.from);

/** A vehicle's value in the hash, format v1 (src/formats/README.md "Command ledger"). */
const storedValue = z
  .object({
    id: text.optional(),
    type: text.optional(),
    since: time.optional(),
    // cjson writes an empty table as {}: no ended ones.
    past: z.preprocess((x) => (typeof x === 'object' && x !== null && !Array.isArray(x) && Object.keys(x).length === 0 ? [] : x), z.array(ended).max(64)).optional(),
  })
  .refine((v) => v.id === undefined || (v.type !== undefined && v.since !== undefined), { path: ['id'] });

/** What a refusal says, by where in the value it was. */
function refusalOf(path: readonly PropertyKey[]): string {
  if (path[0] === 'past') return path.length > 1 ? 'an ended one is not {id, type, from, to}' : 'past is not a list';
  return 'the current one is not {id, type, since}';
}

/**
 * One vehicle's immobilisations from its stored value, oldest first, or a reason it was refused: the hash
 * is written by the ledger's script, but what enters the derivation from Redis is checked as a push is.
 */
export function parseImmobilisations(json: string): Immobilisation[] | string {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return 'not JSON';
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'not an object';
  const v = storedValue.safeParse(raw);
  if (!v.success) return refusalOf(v.error.issues[0]!.path);
  const out: Immobilisation[] = [...(v.data.past ?? [])];
  if (v.data.id !== undefined) out.push({ id: v.data.id, type: v.data.type!, from: v.data.since!, to: Infinity });
  return out.sort((a, b) => a.from - b.from);
}

export class Immobilisations implements ImmobilisationLookup {
  constructor(
    private readonly byVehicle: ReadonlyMap<string, readonly Immobilisation[]>,
    /** The changes stream's last id, as a number (the watch reads again when it moves). */
    readonly version: number,
  ) {}

  at(vehicleno: string, time: number): Immobilisation | undefined {
    const list = this.byVehicle.get(vehicleno);
    if (list === undefined) return undefined;
    for (let i = list.length - 1; i >= 0; i--) {
      const im = list[i]!;
      if (im.from <= time && time < im.to) return im;
    }
    return undefined;
  }

  /** The vehicles under one now (its `to` Infinity). */
  current(): Array<{ vehicleno: string } & Immobilisation> {
    const out: Array<{ vehicleno: string } & Immobilisation> = [];
    for (const [vehicleno, list] of this.byVehicle) {
      const last = list.at(-1);
      if (last !== undefined && last.to === Infinity) out.push({ vehicleno, ...last });
    }
    return out;
  }
}

/** A stream id ("<ms>-<seq>") as one number that grows with it. */
function streamIdNumber(id: string): number {
  const [ms, seq] = id.split('-');
  return Number(ms) * 4096 + (Number(seq) % 4096);
}

/** Reads the ledger's immobilisations; a vehicle's value that does not parse is left out, logged. */
export async function readImmobilisations(redis: RedisClient, keys: Pick<CommandKeys, 'immobilised' | 'changes'>, log?: Logger): Promise<Immobilisations> {
  const version = await immobilisationsVersion(redis, keys);
  const all = await redis.hgetall(keys.immobilised);
  const by = new Map<string, Immobilisation[]>();
  for (const [vehicleno, json] of Object.entries(all)) {
    const parsed = parseImmobilisations(json);
    if (typeof parsed === 'string') log?.warn({ vehicleno, why: parsed }, 'commands: a stored immobilisation refused; moved_while_immobilised is not judged for the vehicle');
    else if (parsed.length > 0) by.set(vehicleno, parsed);
  }
  return new Immobilisations(by, version);
}

/** Every move of a command adds to the changes stream (both releases of a rolling upgrade do): its last id moves with any change of the immobilisations. */
async function immobilisationsVersion(redis: RedisClient, keys: Pick<CommandKeys, 'changes'>): Promise<number> {
  const last = await redis.xrevrange(keys.changes, '+', '-', 'COUNT', 1);
  const first = last[0];
  return first === undefined ? 0 : streamIdNumber(first[0]);
}

/**
 * A worker's view of the immobilisations, read again within `everyMs` of any move (index.ts: at most half
 * EVENTS_WINDOW and half EVENTS_CORRECTION_DELAY). Workers commit a record only once its stream's window has
 * passed it, so a view this fresh holds an immobilisation set or lifted before any record after it is
 * derived; a device clock running ahead may still beat it, and the correction the ledger asks for at each
 * set and lift (ledger.ts), due after the delay, judges those again with the view read by then.
 */
export class ImmobilisationWatch extends VersionedWatch<Immobilisations> {
  constructor(redis: RedisClient, keys: Pick<CommandKeys, 'immobilised' | 'changes'>, log?: Logger, everyMs = 2_000) {
    super(
      { version: () => immobilisationsVersion(redis, keys), read: () => readImmobilisations(redis, keys, log) },
      new Immobilisations(new Map(), -1),
      (err) => log?.warn({ err: (err as Error).message }, 'commands: reading the immobilisations failed; the last read hold meanwhile'),
      everyMs,
    );
  }
}
