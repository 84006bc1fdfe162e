import { pendingSince, type Derived, type DeriveOptions, type VehicleState } from '../derive.js';
import { emptyRecord } from '../inputs.js';
import { pendingMax, prepareCommitted, writeCheckpoint, writeCommitted, writePending, writePendingAt, writePrepared } from '../wire.js';
import { toldField, toldLine, toldOf } from '../corrections/ledger.js';
import { packCheckpoint } from '../corrections/correct.js';
import { outputsOf, type OutboxEntry } from '../outbox.js';
import { giveBuffer, Packed } from './buffers.js';
import { RECORD_SETS, recordSetKeys, type PartitionKeys } from './partition.js';

/**
 * What the store's two scripts are sent, declared once: the commit (`src/redis/scripts/events-commit.lua`)
 * and the correction (`events-correct.lua`), each script's KEYS and ARGV laid out in its header.
 *
 * - **The state hash's value** (KEYS[1] of both, a field per vehicle): `<version> <committed part>`
 *   (`stateValuePrefix`, `readStateValue`); the scripts check the version before they write.
 * - **The commit's arguments**, one field list (`COMMIT_HEAD`, `COMMIT_BODY`): the packer (`CommitArgs`)
 *   writes it, the script unpacks it, and both are checked against the list: `readCommit` reads a packed
 *   commit by walking it (a packer that writes more, less or otherwise fails there; `readCommitArgs`, its
 *   reading for tests and tools), and `luaTokens` is what the script's `struct.unpack` formats must spell,
 *   in order (commit.test.ts reads the script). The byte table in src/formats/README.md ("The events'
 *   commit") is generated from the list (`commitTable`, `npm run docs`).
 * - **The correction's arguments** (`correctionCall`), plain Redis arguments: a correction is one vehicle.
 *
 * The commit is given everything in three arguments: ioredis spends about half a microsecond on each
 * argument of a command, and a bulk job's 500 vehicles made thousands of them. Numbers go as 8-byte
 * doubles, so no number is printed by the worker (Redis prints a Lua number to a command exactly, as
 * `%.17g`). The plates and versions apart from the rest, so the worker never copies the two into one.
 * Counts and lengths are 4-byte big-endian (`I4`), numbers 8-byte big-endian doubles (`d`); bytes are a
 * length and that many bytes (`I4c0`).
 */

// ---- the state hash's value ----------------------------------------------------------------------

/** What precedes a state's committed part (`wire.ts`) in the state hash: its version, in decimal, and a space. */
export const stateValuePrefix = (version: number): string => `${version} `;

/** A state hash's value read: its version and its committed part (a view of `b`). */
export function readStateValue(b: Buffer): { version: number; committed: Buffer } {
  const space = b.indexOf(0x20);
  return { version: Number(b.toString('latin1', 0, space)), committed: b.subarray(space + 1) };
}

// ---- the commit's layout -------------------------------------------------------------------------

/** One item of the layout: a double, bytes, or a nested list. */
export type Item =
  | { kind: 'double'; name: string; doc: string }
  | { kind: 'bytes'; name: string; doc: string }
  /** A count, then that many of `of`. */
  | { kind: 'list'; name: string; doc: string; of: readonly Item[] }
  /** As many of `of` as another part says (`times`: a list of the head, or ARGV[2], the streams). */
  | { kind: 'each'; name: string; doc: string; times: string; of: readonly Item[] };

/** ARGV[1]: what the version check reads, apart, so the worker never copies it into the rest. */
export const COMMIT_HEAD: readonly Item[] = [
  {
    kind: 'list',
    name: 'vehicles',
    doc: 'the job’s vehicles',
    of: [
      { kind: 'bytes', name: 'vehicleno', doc: 'the plate' },
      { kind: 'bytes', name: 'version', doc: 'the version its state was read at (empty: none)' },
    ],
  },
];

/** ARGV[3]: every vehicle's writes, in the head's order, then the outbox's entries. */
export const COMMIT_BODY: readonly Item[] = [
  {
    kind: 'each',
    name: 'vehicles',
    times: 'vehicles',
    doc: 'per vehicle of the head, in its order',
    of: [
      { kind: 'bytes', name: 'committed', doc: 'its state’s committed part, after `<version + 1> ` (README: "Vehicle state")' },
      { kind: 'double', name: 'since', doc: 'wall ms since which one of its streams holds records idle (NaN: none pending)' },
      {
        kind: 'each',
        name: 'streams',
        times: 'streams',
        doc: 'per stream, by stream id, then per stream whose records wait for the track, its held records (ARGV[2] of them in all)',
        of: [
          { kind: 'double', name: 'watermark', doc: 'its watermark, or for held records how far the waiting detectors took them (NaN: none); records at or below it are removed' },
          { kind: 'list', name: 'replaces', doc: 'pending records to replace (one merged into them)', of: [{ kind: 'double', name: 'time', doc: 'the record’s time' }] },
          {
            kind: 'list',
            name: 'adds',
            doc: 'pending records to add',
            of: [
              { kind: 'double', name: 'time', doc: 'its time (the score)' },
              { kind: 'bytes', name: 'record', doc: 'its bytes (README: "Pending record")' },
            ],
          },
        ],
      },
    ],
  },
  { kind: 'list', name: 'entries', doc: 'outbox entries, in order', of: [{ kind: 'bytes', name: 'entry', doc: 'one entry, JSON as UTF-8' }] },
  {
    kind: 'list',
    name: 'lates',
    doc: 'the vehicles whose corrections this commit writes to (README: "Corrections"), each with a key of its own after the vehicles’ keys, in this order',
    of: [
      { kind: 'double', name: 'vehicle', doc: 'which of the head’s vehicles (from 0)' },
      { kind: 'double', name: 'reset', doc: '1: their corrections begin afresh (every field of the hash dropped first)' },
      { kind: 'double', name: 'correctFrom', doc: 'a correction is due from this record time (NaN: none): the vehicle is put in the corrections set, due at ARGV[4]' },
      { kind: 'list', name: 'checkpoints', doc: 'checkpoints taken, oldest first', of: [{ kind: 'double', name: 'epoch', doc: 'the epoch it begins' }, { kind: 'double', name: 'cut', doc: 'its cut (-Infinity: before any record)' }, { kind: 'bytes', name: 'committed', doc: 'its committed part without rings (README: "Vehicle state"), raw-deflated' }] },
      { kind: 'list', name: 'told', doc: 'what the commit told, for the ledger (one at most)', of: [{ kind: 'bytes', name: 'field', doc: '`t<epoch>`: the epoch’s ledger' }, { kind: 'bytes', name: 'lines', doc: 'its lines to append (README: "Corrections")' }] },
    ],
  },
];

// ---- the commit's writer -------------------------------------------------------------------------

/** The places of a vehicle's added records in a stream, and the record being written (reused: commits are written one at a time). */
const PLACES: number[] = [];
const WRITING = emptyRecord(0, 0);

/** One commit as the script reads it: every vehicle's plate and version, then every vehicle's writes, then the outbox entries. */
export class CommitArgs {
  /** The count, then plates and versions. */
  private readonly head: Packed;
  private readonly body: Packed;
  /** The vehicles, in order: each has its record sets' keys. */
  private readonly vehiclenos: string[] = [];
  /** The vehicles whose corrections this commit writes to, with what it writes. */
  private readonly lates: Array<{ vehicle: number; vehicleno: string; d: Derived; state: Buffer | undefined; genesis: Buffer | undefined; firstCut: number; correctFrom: number }> = [];

  /** Sized for `vehicles` with full rings and a few pending records each, so a commit seldom grows it. */
  constructor(vehicles: number) {
    this.head = new Packed(4 + vehicles * 40);
    this.head.count(0);
    this.body = new Packed(1_024 + vehicles * 1_400);
  }

  /**
   * One vehicle after its derivation `d`: its plate, the version its state was read at (0: none), its new
   * committed part, when it is next swept (`pendingSince`), and for each record set its watermark and the
   * records added (of `d.added` still pending, to replace where one merged into a stored one; held records
   * the call added); then, when the call emitted anything, took a checkpoint, began its corrections afresh or
   * left one due, what its corrections keep (`late`; `genesis`: the state as it was before a call that
   * began them, `writeCheckpoint`).
   */
  vehicle(vehicleno: string, version: number, state: VehicleState, d: Derived, opts: DeriveOptions, genesis?: Buffer): void {
    const { head, body } = this;
    head.text(vehicleno);
    head.text(version === 0 ? '' : String(version));
    body.room(4 + prepareCommitted(state, stateValuePrefix(version + 1)));
    body.wrote(writePrepared(body.buf, body.len + 4));
    const since = pendingSince(state, opts);
    body.number(since === Infinity ? undefined : since);
    const added = d.added;
    for (const set of RECORD_SETS) {
      const plan = set.plan;
      const stream = state.streams[plan.streamId]!;
      if (set.held) {
        // Held records leave from the front as charging takes them (removed only when some did); the call's own are the last.
        const held = stream.held;
        const heldAdded = stream.heldNew;
        const through = stream.heldTaken ? state.late.chargingThrough : undefined;
        body.number(through === undefined || through === -Infinity ? undefined : through);
        body.count(0);
        body.count(heldAdded);
        for (let at = held.length - heldAdded; at < held.length; at++) {
          body.number(held.timeAt(at));
          body.room(4 + pendingMax(plan));
          body.wrote(writePendingAt(plan, held.read(at, WRITING), body.buf, body.len + 4));
        }
        continue;
      }
      const pending = stream.pending;
      body.number(stream.watermark === -Infinity ? undefined : stream.watermark);
      // The added records still pending, each once (a record merged into is listed again), by their place.
      const places = PLACES;
      while (places.length > 0) places.pop(); // (`length = 0` is a call into the runtime)
      let last = -1;
      for (let k = 0; k < added.length; k += 2) {
        if (added[k] !== plan.streamId || added[k + 1]! <= stream.watermark) continue;
        const at = pending.lowerBound(added[k + 1]!);
        // Mostly in order: only a place at or before the last is looked for among those listed.
        if (at > last) places.push((last = at));
        else if (!places.includes(at)) places.push(at);
      }
      let replaces = 0;
      for (const at of places) if (pending.mergedAt(at)) replaces++;
      body.count(replaces);
      if (replaces > 0) for (const at of places) if (pending.mergedAt(at)) body.number(pending.timeAt(at));
      body.count(places.length);
      for (const at of places) {
        body.number(pending.timeAt(at));
        body.room(4 + pendingMax(plan));
        body.wrote(writePendingAt(plan, pending.read(at, WRITING), body.buf, body.len + 4));
      }
    }
    const told = d.events.length + d.trips.length + d.chargingSessions.length + d.stops.length + d.packLife.length;
    if (d.reset || d.checkpoint !== undefined || told > 0 || state.late.correctFrom !== Infinity) {
      this.lates.push({ vehicle: this.vehiclenos.length, vehicleno, d, state: d.checkpoint ? writeCheckpoint(state) : undefined, genesis, firstCut: state.late.firstCut, correctFrom: state.late.correctFrom });
    }
    this.vehiclenos.push(vehicleno);
  }

  /** Hands its buffers back for the next commit (the arguments `finish` gave are not to be read after). */
  release(): void {
    giveBuffer(this.head.buf);
    giveBuffer(this.body.buf);
  }

  /** The two packed arguments: the plates and versions (ARGV[1]), and the writes with the outbox's entries and the late items last (ARGV[3]). */
  finish(entries: readonly string[]): [Buffer, Buffer] {
    this.head.buf.writeUInt32BE(this.vehiclenos.length, 0);
    const { body } = this;
    body.count(entries.length);
    for (const e of entries) body.text(e);
    body.count(this.lates.length);
    for (const l of this.lates) {
      const { d } = l;
      body.number(l.vehicle);
      body.number(d.reset ? 1 : 0);
      body.number(l.correctFrom === Infinity ? undefined : l.correctFrom);
      const checkpoints: Array<[number, number, Buffer]> = [];
      if (d.reset && l.genesis) checkpoints.push([0, l.firstCut, l.genesis]);
      if (d.checkpoint && l.state) checkpoints.push([d.checkpoint.epoch, d.checkpoint.cut, l.state]);
      body.count(checkpoints.length);
      for (const [epoch, cut, committed] of checkpoints) {
        body.number(epoch);
        body.number(cut);
        const packed = packCheckpoint(committed);
        body.room(4 + packed.length);
        packed.copy(body.buf, body.len + 4);
        body.wrote(body.len + 4 + packed.length);
      }
      // What the call emitted, as lines appended to its epoch's ledger field.
      const outputs = outputsOf(d);
      body.count(outputs.length > 0 ? 1 : 0);
      if (outputs.length > 0) {
        body.text(toldField(d.epoch));
        body.text(outputs.map((e) => `${toldLine(toldOf(e, d.epoch))}\n`).join(''));
      }
    }
    return [this.head.buf.subarray(0, this.head.len), body.buf.subarray(0, body.len)];
  }

  /**
   * The script's keys and arguments, after `finish`: KEYS the partition's four, each vehicle's record
   * sets, then each late item's vehicle's corrections hash; ARGV as the layout above (ARGV[4], when a
   * correction it puts in the set is due; ARGV[5], EVENTS_HORIZON).
   */
  call(keys: PartitionKeys, [head, body]: readonly [Buffer, Buffer], dueMs: number, horizonMs: number): { keys: string[]; argv: Array<string | Buffer> } {
    return {
      keys: [keys.state, keys.outbox, keys.pending, keys.corrections, ...this.vehiclenos.flatMap((v) => recordSetKeys(keys, v)), ...this.lates.map((l) => keys.late(l.vehicleno))],
      argv: [head, String(RECORD_SETS.length), body, String(dueMs), String(horizonMs)],
    };
  }
}

// ---- the correction's arguments ------------------------------------------------------------------

/**
 * A correction's keys and arguments (`events-correct.lua`): the vehicle's replayed `state`, written if its
 * version is still `version`, with its pending and held records whole, its corrections hash's fields to
 * `drop` and to `write`, and the outbox `entries` the correction tells. `sinceMs`: when it is next swept
 * (Infinity: never); `dueMs`: when a correction still due is due (undefined: none).
 */
export function correctionCall(
  keys: PartitionKeys,
  vehicleno: string,
  version: number,
  state: VehicleState,
  sinceMs: number,
  dueMs: number | undefined,
  drop: readonly string[],
  write: ReadonlyArray<[string, string | Buffer]>,
  entries: readonly OutboxEntry[],
): { keys: string[]; argv: Array<string | Buffer> } {
  const argv: Array<string | Buffer> = [
    vehicleno,
    version === 0 ? '' : String(version),
    Buffer.concat([Buffer.from(stateValuePrefix(version + 1)), writeCommitted(state)]),
    sinceMs === Infinity ? '' : String(sinceMs),
    dueMs === undefined ? '' : String(dueMs),
    String(RECORD_SETS.length),
  ];
  for (const set of RECORD_SETS) {
    const stream = state.streams[set.plan.streamId]!;
    const records = (set.held ? stream.held : stream.pending).records();
    argv.push(String(records.length));
    for (const r of records) argv.push(String(r.time), writePending(set.plan, r));
  }
  argv.push(String(drop.length), ...drop);
  argv.push(String(write.length));
  for (const [f, v] of write) argv.push(f, v);
  argv.push(String(entries.length), ...entries.map((e) => JSON.stringify(e)));
  return { keys: [keys.state, keys.outbox, keys.pending, keys.corrections, keys.late(vehicleno), ...recordSetKeys(keys, vehicleno)], argv };
}

// ---- the commit's reader -------------------------------------------------------------------------

/** A commit as read: each item by its name (bytes as Buffers, doubles as numbers, NaN kept). */
export type Read = { [name: string]: number | Buffer | Read[] };

/** Reads a packed commit (`[head, body]`) by the lists; throws where the bytes and the lists part. */
export function readCommit([head, body]: readonly [Buffer, Buffer], streams: number): { head: Read; body: Read } {
  const counts = new Map<string, number>([['streams', streams]]);
  const walk = (b: Buffer, items: readonly Item[], at: { p: number }): Read => {
    const out: Read = {};
    for (const item of items) {
      if (item.kind === 'double') {
        out[item.name] = b.readDoubleBE(at.p);
        at.p += 8;
      } else if (item.kind === 'bytes') {
        const n = b.readUInt32BE(at.p);
        if (at.p + 4 + n > b.length) throw new RangeError(`commit: ${item.name} runs past the end`);
        out[item.name] = b.subarray(at.p + 4, at.p + 4 + n);
        at.p += 4 + n;
      } else {
        let n: number;
        if (item.kind === 'list') {
          n = b.readUInt32BE(at.p);
          at.p += 4;
          counts.set(item.name, n);
        } else {
          const known = counts.get(item.times);
          if (known === undefined) throw new Error(`commit: nothing says how many ${item.times}`);
          n = known;
        }
        out[item.name] = Array.from({ length: n }, () => walk(b, item.of, at));
      }
    }
    return out;
  };
  const read = (b: Buffer, items: readonly Item[]): Read => {
    const at = { p: 0 };
    const r = walk(b, items, at);
    if (at.p !== b.length) throw new RangeError(`commit: ${b.length - at.p} bytes after the last item`);
    return r;
  };
  const h = read(head, COMMIT_HEAD);
  return { head: h, body: read(body, COMMIT_BODY) };
}

/**
 * What a packed commit (`CommitArgs.finish`) says, read by the field list: a packer that strays from the
 * list fails here (tests and the stages bench). Each vehicle's new state hash value read (`readStateValue`).
 */
export function readCommitArgs(packed: readonly [Buffer, Buffer]): {
  vehicles: Array<{ vehicleno: string; version: string; written: { version: number; committed: Buffer }; since?: number; streams: Array<{ streamId: number; watermark?: number; replaces: number[]; adds: Array<[number, Buffer]> }> }>;
  entries: string[];
  lates: Array<{ vehicleno: string; reset: boolean; correctFrom?: number; checkpoints: Array<{ epoch: number; cut: number; committed: Buffer }>; told: Array<[string, string]> }>;
} {
  const { head, body } = readCommit(packed, RECORD_SETS.length);
  const list = (r: Read, name: string) => r[name] as Read[];
  const known = (x: unknown) => (Number.isNaN(x) ? undefined : (x as number));
  const heads = list(head, 'vehicles');
  const vehicles = list(body, 'vehicles').map((v, i) => {
    const since = known(v.since);
    const streams = list(v, 'streams').map((st, j) => {
      const watermark = known(st.watermark);
      return {
        streamId: RECORD_SETS[j]!.id,
        ...(watermark === undefined ? {} : { watermark }),
        replaces: list(st, 'replaces').map((x) => x.time as number),
        adds: list(st, 'adds').map((x): [number, Buffer] => [x.time as number, x.record as Buffer]),
      };
    });
    return { vehicleno: String(heads[i]!.vehicleno), version: String(heads[i]!.version), written: readStateValue(v.committed as Buffer), ...(since === undefined ? {} : { since }), streams };
  });
  const lates = list(body, 'lates').map((l) => {
    const correctFrom = known(l.correctFrom);
    return {
      vehicleno: String(heads[l.vehicle as number]!.vehicleno),
      reset: l.reset === 1,
      ...(correctFrom === undefined ? {} : { correctFrom }),
      checkpoints: list(l, 'checkpoints').map((c) => ({ epoch: c.epoch as number, cut: c.cut as number, committed: c.committed as Buffer })),
      told: list(l, 'told').map((t): [string, string] => [String(t.field), String(t.lines)]),
    };
  });
  return { vehicles, entries: list(body, 'entries').map((e) => String(e.entry)), lates };
}

// ---- the layout as a table, and as the script spells it ------------------------------------------

/**
 * What the script's `struct.unpack` formats spell, in the order they appear in it: each list's count
 * (`I4`) before its items, each double `d`, each bytes `I4c0`.
 */
export function luaTokens(items: readonly Item[]): string[] {
  return items.flatMap((item) =>
    item.kind === 'double' ? ['d'] : item.kind === 'bytes' ? ['I4c0'] : item.kind === 'list' ? ['I4', ...luaTokens(item.of)] : luaTokens(item.of),
  );
}

/** The tokens of the `struct.unpack` formats in a Lua source, in order (`'>I4c0d'` → I4c0, d). */
export function unpackTokens(lua: string): string[] {
  return [...lua.matchAll(/struct\.unpack\('>([^']*)'/g)].flatMap((m) => m[1]!.match(/I4c0|I4|d/g) ?? []);
}

/** The lists as a markdown table (README.md), indented by nesting. */
export function commitTable(): string {
  const rows: string[] = ['| Argument | Item | Type | What |', '|---|---|---|---|'];
  const type = (i: Item) => (i.kind === 'double' ? '`d`' : i.kind === 'bytes' ? '`I4c0`' : i.kind === 'list' ? '`I4` count, then each' : `each of ${i.times}`);
  const add = (arg: string, items: readonly Item[], depth: number) => {
    for (const i of items) {
      rows.push(`| ${arg} | ${'&nbsp;&nbsp;'.repeat(depth)}${i.name} | ${type(i)} | ${i.doc} |`);
      if (i.kind === 'list' || i.kind === 'each') add(arg, i.of, depth + 1);
    }
  };
  add('ARGV[1]', COMMIT_HEAD, 0);
  rows.push('| ARGV[2] | streams | decimal text | how many streams each vehicle lists |');
  add('ARGV[3]', COMMIT_BODY, 0);
  rows.push('| ARGV[4] | due | decimal text | wall ms at which a correction put in the set is due |');
  rows.push('| ARGV[5] | horizon | decimal text | EVENTS_HORIZON, ms: checkpoints the newest has passed by more (but the newest of those) are dropped, with what was told in their epochs |');
  return rows.join('\n');
}
