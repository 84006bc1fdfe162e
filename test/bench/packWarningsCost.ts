/**
 * What the pack warnings (events/detectors/packHeat.ts, cRate.ts, and the pack values they read,
 * events/packValues.ts) cost a CAN record: ten hours of a healthy pack's records (detectors/pack.testkit.ts
 * `healthy`: current, capacity, six temperature sensors) derived as they are, and with the sensors and the
 * capacity left out (the same records otherwise: nothing for the warnings to do), interleaved round by round:
 * `npx tsx test/bench/packWarningsCost.ts`. Prints every round and the median difference, core-µs per record.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_DERIVE_OPTIONS, ingest, newState } from '../../src/ingest/events/derive.js';
import { can, V, type Named } from '../../src/ingest/events/events.testkit.js';
import { healthy } from '../../src/ingest/events/detectors/pack.testkit.js';

const full = healthy(7, Date.UTC(2026, 0, 5), 600);
const bare: Named[] = full.map((r) => {
  const { battery_capacity: _c, no_of_temperature_sensors: _n, ...rest } = r.fields;
  for (const k of Object.keys(rest)) if (k.startsWith('cell_temperature_')) delete rest[k];
  return can(r.time, rest);
});
function run(recs: readonly Named[]): number {
  const s = newState();
  const t0 = performance.now();
  for (let i = 0; i < recs.length; i += 50) ingest(V, s, recs.slice(i, i + 50), recs[Math.min(i + 49, recs.length - 1)]!.time + 1000, DEFAULT_DERIVE_OPTIONS);
  return ((performance.now() - t0) * 1000) / recs.length;
}
for (let w = 0; w < 5; w++) { run(bare); run(full); }
const rows: Array<[number, number]> = [];
for (let r = 0; r < 15; r++) rows.push([run(bare), run(full)]);
for (const [i, [a, b]] of rows.entries()) console.log(`round ${i + 1}: without pack fields ${a.toFixed(3)} µs/record, with ${b.toFixed(3)}, diff ${(b - a).toFixed(3)}`);
const diffs = rows.map(([a, b]) => b - a).sort((x, y) => x - y);
console.log(`CAN records ${full.length}; median diff ${diffs[7]!.toFixed(3)} core-µs per record`);
