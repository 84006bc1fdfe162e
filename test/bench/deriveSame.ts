/**
 * Whether this tree derives what a git ref derives, call by call: `npx tsx test/bench/deriveSame.ts <ref> [days]`.
 * Both builds derive the same generated days (`history(seed)` of the events' testkit, with its geofences and
 * scaled minimums), delivered two ways: in order, a record a call; and in shuffled batches of up to 40 records,
 * the wall clock up to 20 s behind. After every call it compares what each build emitted (events, trips, stops,
 * charging sessions, and the call's counters) and the committed bytes of the state it would store. Events are
 * compared as a set within a call and, apart, in order: a change of the detectors' order may reorder one call's
 * events without changing any. Exits 1 on any difference but such a reorder, which it counts.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { refTree, ROOT } from './ab.js';

const [ref = 'HEAD', daysArg = '60'] = process.argv.slice(2);
const days = Number(daysArg);
const { dir: other, sha } = refTree(ref);

type Part = Record<string, unknown> | string;

async function run(dir: string): Promise<Part[]> {
  const load = (p: string) => import(pathToFileURL(join(dir, p)).href);
  const kit = await load('src/ingest/events/events.testkit.ts');
  const derive = await load('src/ingest/events/derive.ts');
  const wire = await load('src/ingest/events/wire.ts');
  const parts: Part[] = [];
  const bytes = (s: unknown): string => createHash('sha1').update(wire.writeCommitted(s)).digest('hex');
  // What a call emitted, named as both builds name it (`sessions` became `chargingSessions`; `added` is new with #48).
  const outputs = (d: Record<string, unknown>): Record<string, unknown> => {
    const { added: _added, sessions, chargingSessions, ...rest } = d;
    return JSON.parse(JSON.stringify({ ...rest, chargingSessions: chargingSessions ?? sessions }, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)));
  };
  for (let seed = 1; seed <= days; seed++) {
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
        parts.push(outputs(derive.ingest(kit.V, s, batch, now, kit.HISTORY_OPTS)), bytes(s));
      }
      parts.push(outputs(derive.flush(kit.V, s, now + 10 * 60_000, kit.HISTORY_OPTS)), bytes(s));
    }
  }
  return parts;
}

const mine = await run(ROOT);
const theirs = await run(other);
let calls = 0;
let reordered = 0;
const differ: string[] = [];
// Counted apart: a release that adds a slice stores other bytes while every output stays the same.
let bytesDiffer = 0;
const key = (e: unknown): string => JSON.stringify(e);
for (let i = 0; i < Math.max(mine.length, theirs.length); i++) {
  const m = mine[i];
  const t = theirs[i];
  if (typeof m === 'string' || typeof t === 'string') {
    if (m !== t) bytesDiffer++;
    continue;
  }
  calls++;
  for (const k of new Set([...Object.keys(m ?? {}), ...Object.keys(t ?? {})])) {
    const a = (m ?? {})[k];
    const b = (t ?? {})[k];
    if (key(a) === key(b)) continue;
    if (k === 'events' && Array.isArray(a) && Array.isArray(b) && key(a.map(key).sort()) === key(b.map(key).sort())) reordered++;
    else differ.push(`call ${calls}: ${k}`);
  }
}
console.log(`this tree against ${ref} (${sha.slice(0, 12)}), ${days} days in order and in shuffled batches: ${calls} calls; outputs differing in ${differ.length}; committed bytes differing after ${bytesDiffer}; events reordered within ${reordered} calls`);
for (const d of differ.slice(0, 20)) console.log(`  ${d}`);
process.exit(differ.length > 0 || bytesDiffer > 0 ? 1 : 0);
