/**
 * What the pack warnings cost a CAN record: `npx tsx test/bench/packWarningsCost.ts`. Prints every round
 * and the median difference, core-µs per record, of two comparisons, each interleaved round by round (the
 * stages bench, stages.ts, prints their medians among its rows of the pack work):
 * - the temperature warnings (events/detectors/packHeat.ts, cRate.ts, and the pack values they read,
 *   events/packValues.ts): ten hours of a healthy pack's records (detectors/pack.testkit.ts `healthy`:
 *   current, capacity, six temperature sensors) derived as they are, and with the sensors and the capacity
 *   left out (the same records otherwise: nothing for the warnings to do);
 * - cell drift (events/detectors/cellDrift.ts, and the two cell values it reads): three days of a pack's
 *   records every 10 s (pack.testkit.ts `cellDays`: sixteen cell slots, soc, current, each day driven,
 *   parked and charged to full), as they are, and with the cell voltages and `no_of_cells` left out (the
 *   detector still follows the current on every record; no cell value is computed, no sample taken).
 */
import { DEFAULT_DERIVE_OPTIONS, ingest, newState } from '../../src/ingest/events/derive.js';
import { can, V, type Named } from '../../src/ingest/events/events.testkit.js';
import { cellDays, healthy } from '../../src/ingest/events/detectors/pack.testkit.js';

/** Core-µs a record (this process's CPU time, user and system: what other processes on a shared machine take is not counted). */
function run(recs: readonly Named[]): number {
  const s = newState();
  const t0 = process.cpuUsage();
  for (let i = 0; i < recs.length; i += 50) ingest(V, s, recs.slice(i, i + 50), recs[Math.min(i + 49, recs.length - 1)]!.time + 1000, DEFAULT_DERIVE_OPTIONS);
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / recs.length;
}

/** One comparison: 15 rounds of the records without the fields and with them (after five of each to warm up), core-µs a record, and the median difference. */
export function compare(full: readonly Named[], bare: readonly Named[]): { rounds: Array<[number, number]>; median: number } {
  for (let w = 0; w < 5; w++) {
    run(bare);
    run(full);
  }
  const rounds: Array<[number, number]> = [];
  for (let r = 0; r < 15; r++) rounds.push([run(bare), run(full)]);
  const diffs = rounds.map(([a, b]) => b - a).sort((x, y) => x - y);
  return { rounds, median: diffs[7]! };
}

const without = (feed: readonly Named[], leaveOut: (field: string) => boolean): Named[] =>
  feed.map((r) => can(r.time, Object.fromEntries(Object.entries(r.fields).filter(([k]) => !leaveOut(k)))));

/** The comparisons, by what they measure: each a pack's records with the fields a warning reads, and without them. */
export function packWarningComparisons(): Array<{ what: string; full: Named[]; bare: Named[] }> {
  const heat = healthy(7, Date.UTC(2026, 0, 5), 600);
  const cells = cellDays({ days: 3, seed: 7, cells: 14, driftV: 0.003, every: 1 / 6 }, Date.UTC(2026, 0, 5)).records;
  return [
    { what: 'temperature warnings', full: heat, bare: without(heat, (k) => k === 'battery_capacity' || k === 'no_of_temperature_sensors' || k.startsWith('cell_temperature_')) },
    { what: 'cell drift', full: cells, bare: without(cells, (k) => k === 'no_of_cells' || k.startsWith('cell_voltage_')) },
  ];
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  for (const { what, full, bare } of packWarningComparisons()) {
    const { rounds, median } = compare(full, bare);
    for (const [i, [a, b]] of rounds.entries()) console.log(`${what}, round ${i + 1}: without ${a.toFixed(3)} µs/record, with ${b.toFixed(3)}, diff ${(b - a).toFixed(3)}`);
    console.log(`${what}: CAN records ${full.length}; median diff ${median.toFixed(3)} core-µs per record`);
  }
}
