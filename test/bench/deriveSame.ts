/**
 * Whether this tree derives what a git ref derives, call by call: `npx tsx test/bench/deriveSame.ts <ref> [days]`.
 * Both builds derive the same generated days (`history(seed)` of the events' testkit, with its geofences and
 * scaled minimums), delivered two ways: in order, a record a call; and in shuffled batches of up to 40 records,
 * the wall clock up to 20 s behind. After every call it compares what each build emitted (events, trips, stops,
 * charging sessions, and the call's counters) and the state it would store, section by section: every section
 * the ref stores (a stream, a slice) must be stored with the same doubles, as many as the ref stores, those this tree
 * leaves out at a flat slice's end read as it reads them (`asStored`) (a slice
 * this tree adds, or doubles it adds at a slice's end, are not compared: the ref does not read them). Events are
 * compared as a set within a call and, apart, in order (an output may gain fields the ref does not write: counted apart): a change of the detectors' order may reorder one call's
 * events without changing any. Exits 1 on any difference but such a reorder, which it counts.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { refTree, ROOT } from './ab.js';
import { asStored, committedSections } from '../../src/ingest/events/wire.js';

const [ref = 'HEAD', daysArg = '60'] = process.argv.slice(2);
const days = Number(daysArg);
const { dir: other, sha } = refTree(ref);

type Part = Record<string, unknown> | Map<string, number[]>;

/** A build's derivation of one generated day, delivered both ways: each call's outputs, then its stored sections. */
async function builder(dir: string): Promise<(seed: number) => Part[]> {
  const load = (p: string) => import(pathToFileURL(join(dir, p)).href);
  const kit = await load('src/ingest/events/events.testkit.ts');
  const derive = await load('src/ingest/events/derive.ts');
  // Each build's own writer; the sections read by this tree's reader (the state is v3 in both).
  const wire = await load('src/ingest/events/wire.ts');
  const sections = (s: unknown): Map<string, number[]> => committedSections(wire.writeCommitted(s));
  // What a call emitted, named as both builds name it (`sessions` became `chargingSessions`; `added` is new with #48).
  const outputs = (d: Record<string, unknown>): Record<string, unknown> => {
    const { added: _added, sessions, chargingSessions, ...rest } = d;
    return JSON.parse(JSON.stringify({ ...rest, chargingSessions: chargingSessions ?? sessions }, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)));
  };
  return (seed: number): Part[] => {
    const parts: Part[] = [];
    const records = kit.history(seed) as Array<{ time: number }>;
    for (const batched of [false, true]) {
      let a = (seed * 7 + 1) | 0;
      const rnd = (): number => {
        a = (a + 0x6d2b79f5) | 0;
        let t = Math.imul(a ^ (a >>> 15), 1 | a);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
      const s = derive.newState();
      let now = -Infinity;
      for (let i = 0; i < records.length; ) {
        const batch = records.slice(i, (i += batched ? 1 + Math.floor(rnd() * 40) : 1));
        if (batched) batch.sort(() => rnd() - 0.5);
        now = Math.max(now + 1, Math.max(...batch.map((r) => r.time)) + (batched ? Math.floor(rnd() * 20_000) : 0));
        parts.push(outputs(derive.ingest(kit.V, s, batch, now, kit.HISTORY_OPTS)), sections(s));
      }
      parts.push(outputs(derive.flush(kit.V, s, now + 10 * 60_000, kit.HISTORY_OPTS)), sections(s));
    }
    return parts;
  };
}

const mineOf = await builder(ROOT);
const theirsOf = await builder(other);
let calls = 0;
let reordered = 0;
const differ: string[] = [];
const key = (e: unknown): string => JSON.stringify(e);
/** Whether `mine` is `theirs` with, at most, fields added to an object (an output gaining a field the ref does not write). */
const sameOrAdded = (mine: unknown, theirs: unknown): boolean => {
  if (theirs === null || typeof theirs !== 'object') return Object.is(mine, theirs);
  if (mine === null || typeof mine !== 'object' || Array.isArray(mine) !== Array.isArray(theirs)) return false;
  if (Array.isArray(theirs)) return (mine as unknown[]).length === theirs.length && theirs.every((x, j) => sameOrAdded((mine as unknown[])[j], x));
  return Object.entries(theirs).every(([k, x]) => sameOrAdded((mine as Record<string, unknown>)[k], x));
};
let added = 0;
for (let seed = 1; seed <= days; seed++) {
  const mine = mineOf(seed);
  const theirs = theirsOf(seed);
  for (let i = 0; i < Math.max(mine.length, theirs.length); i++) {
    const m = mine[i];
    const t = theirs[i];
    if (m instanceof Map || t instanceof Map) {
      // Every section the ref stores, stored alike: its doubles, as many as the ref stores (a slice may gain doubles at its end, which the ref does not read).
      for (const [section, doubles] of (t as Map<string, number[]>) ?? new Map()) {
        const own = (m as Map<string, number[]> | undefined)?.get(section);
        // (What this tree leaves out at a flat slice's end, its fresh values, read as those: `asStored`.)
        const read = own === undefined ? undefined : asStored(section, own, doubles.length);
        if (read === undefined || doubles.some((x, j) => !Object.is(x, read[j]))) differ.push(`call ${calls}: ${section} stored otherwise`);
      }
      continue;
    }
    calls++;
    for (const k of new Set([...Object.keys(m ?? {}), ...Object.keys(t ?? {})])) {
      const a = (m ?? {})[k];
      const b = (t ?? {})[k];
      if (key(a) === key(b)) continue;
      // (An output list the ref has not, as `packLife`, is an output added.)
      if (b === undefined || sameOrAdded(a, b)) {
        added++;
        continue;
      }
      if (k === 'events' && Array.isArray(a) && Array.isArray(b) && key(a.map(key).sort()) === key(b.map(key).sort())) reordered++;
      else differ.push(`call ${calls}: ${k}`);
    }
  }
}
console.log(`this tree against ${ref} (${sha.slice(0, 12)}), ${days} days in order and in shuffled batches: ${calls} calls; outputs or stored sections differing in ${differ.length}; outputs with fields added within ${added} calls; events reordered within ${reordered} calls`);
for (const d of differ.slice(0, 20)) console.log(`  ${d}`);
process.exit(differ.length > 0 ? 1 : 0);
