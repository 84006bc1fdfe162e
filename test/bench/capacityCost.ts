/**
 * What charging's capacity estimate and BMS comparison (events/detectors/charging.ts) cost a CAN record:
 * forty deep charges of a pack reporting its ids, soh and rated capacity (events.testkit.ts `packCycles`, CAN
 * only, every record through charging), derived by this tree and by a ref (before them), interleaved
 * round by round: `npx tsx test/bench/capacityCost.ts [ref]`. Each build makes the records with its own
 * testkit (a ref without `soh` in its pick leaves it out). Prints every round and the median difference,
 * core-µs per record.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { median, refTree, ROOT } from './ab.js';
import { packCycles } from '../../src/ingest/events/events.testkit.js';

const [ref = '315eb24'] = process.argv.slice(2);
const { dir: other, sha } = refTree(ref);
const feed = packCycles({ cycles: 40, capacityAh: (c) => 100 - 0.5 * c, soh: () => 100, ratedAh: 100, bmsId: 410_233, low: 20, high: 90 }).records;

async function build(dir: string): Promise<() => number> {
  const load = (p: string) => import(pathToFileURL(join(dir, p)).href);
  const kit = await load('src/ingest/events/events.testkit.ts');
  const derive = await load('src/ingest/events/derive.ts');
  const recs = feed.map((r) => kit.can(r.time, r.fields));
  // The fastest of three runs: a run is a few ms, which one collection can double.
  const once = () => {
    const s = derive.newState();
    const t0 = performance.now();
    for (let i = 0; i < recs.length; i += 50) derive.ingest(kit.V, s, recs.slice(i, i + 50), recs[Math.min(i + 49, recs.length - 1)].time + 1000, derive.DEFAULT_DERIVE_OPTIONS);
    return ((performance.now() - t0) * 1000) / recs.length;
  };
  return () => Math.min(once(), once(), once());
}
const mine = await build(ROOT);
const theirs = await build(other);
for (let w = 0; w < 5; w++) { theirs(); mine(); }
const rows: Array<[number, number]> = [];
for (let r = 0; r < 15; r++) rows.push([theirs(), mine()]);
for (const [i, [a, b]] of rows.entries()) console.log(`round ${i + 1}: ${ref} ${a.toFixed(3)} µs/record, this ${b.toFixed(3)}, diff ${(b - a).toFixed(3)}`);
console.log(`against ${sha.slice(0, 12)}: ${feed.length} CAN records; median diff ${median(rows.map(([a, b]) => b - a)).toFixed(3)} core-µs per record`);
