/**
 * What `moved_while_immobilised` (events/detectors/immobilised.ts) costs a record: one vehicle's day in
 * miniature (events.testkit.ts `history`) derived without a ledger and with one that holds the vehicle
 * immobilised all day among 1,000 others (every GPS record looks it up), interleaved round by round:
 * `npx tsx test/bench/immobilisedCost.ts`. Prints every round and the median difference, core-µs per record.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_DERIVE_OPTIONS, ingest, newState } from '../../src/ingest/events/derive.js';
import { history, V } from '../../src/ingest/events/events.testkit.js';
import { Immobilisations } from '../../src/ingest/commands/immobilisations.js';

const recs = history(7);
const gpsN = recs.filter((r) => r.type === 'gps').length;
const lookup = new Immobilisations(new Map([[V, [{ id: 'c1', type: 'movement', from: 0, to: 1e15 }]], ...Array.from({ length: 1000 }, (_, i) => [`KA${i}`, [{ id: 'x', type: 'movement', from: 0, to: Infinity }]] as [string, { id: string; type: string; from: number; to: number }[]])]), 1);
const variants = { none: DEFAULT_DERIVE_OPTIONS, ledger: { ...DEFAULT_DERIVE_OPTIONS, immobilisations: { current: lookup } } } as const;
function run(opts: typeof DEFAULT_DERIVE_OPTIONS): number {
  const s = newState();
  const t0 = performance.now();
  for (let i = 0; i < recs.length; i += 50) ingest(V, s, recs.slice(i, i + 50), recs[Math.min(i + 49, recs.length - 1)]!.time + 1000, opts);
  return ((performance.now() - t0) * 1000) / recs.length;
}
for (let w = 0; w < 5; w++) { run(variants.none); run(variants.ledger); }
const rows: Array<[number, number]> = [];
for (let r = 0; r < 15; r++) rows.push([run(variants.none), run(variants.ledger)]);
for (const [i, [a, b]] of rows.entries()) console.log(`round ${i + 1}: without ledger ${a.toFixed(3)} µs/record, with ${b.toFixed(3)}, diff ${(b - a).toFixed(3)}`);
const diffs = rows.map(([a, b]) => b - a).sort((x, y) => x - y);
console.log(`records ${recs.length} (gps ${gpsN}); median diff ${diffs[7]!.toFixed(3)} core-µs per record`);
