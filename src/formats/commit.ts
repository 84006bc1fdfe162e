/**
 * The vehicle events' commit argument (README.md beside this file, "The events' commit"), as one field
 * list: the worker's packer (`CommitArgs`, src/ingest/events/store.ts) writes it, the script
 * (src/redis/scripts/events-commit.lua) unpacks it, and both are checked against this list:
 * `readCommit` reads a packed commit by walking it (a packer that writes more, less or otherwise fails
 * there), and `luaTokens` is what the script's `struct.unpack` formats must spell, in order
 * (commit.test.ts reads the script). The README's table is generated from it as well.
 *
 * Counts and lengths are 4-byte big-endian (`I4`), numbers 8-byte big-endian doubles (`d`); bytes are a
 * length and that many bytes (`I4c0`).
 */
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
