/**
 * Where a bulk record's service CPU goes, stage by stage, in one process (CPU time, so a busy machine
 * does not inflate it): the receiver's decode, parse, validation, judgement and job encoding, and the
 * worker's decode, flattening, fleet bookkeeping and request body. The same records as the bench's
 * bulk phase (1000-record mixed pushes). `npx tsx test/bench/stages.ts [pushes]`
 */
import { loadConfig } from '../../src/config/index.js';
import { plausibilityFor } from '../../src/ingest/service/components.js';
import { validateRecord } from '../../src/ingest/validate/record.js';
import { encodePointsJob, jobRows } from '../../src/ingest/queue/codec.js';
import { readRows, rowsOf } from '../../src/ingest/flatten/points.js';
import { RecordSorter } from '../../src/ingest/receive/sort.js';
import { scanPush } from '../../src/ingest/scan/scan.js';
import { BenchData } from './data.js';
import { DEFAULT_DERIVE_OPTIONS, DERIVE_PICK, ingest, newState, type DeriveOptions, type VehicleState } from '../../src/ingest/events/derive.js';
import { GeofenceLookup } from '../../src/ingest/geofences/lookup.js';
import type { Geofence } from '../../src/ingest/geofences/geofence.js';
import { restore } from '../../src/ingest/events/wire.js';
import { CommitArgs, readCommitArgs } from '../../src/ingest/events/store/commit.js';
import { inputsByVehicle } from '../../src/ingest/events/store/eventsStore.js';
import type { WrittenRecord } from '../../src/telemetry/record.js';
import { FLATTEN } from './options.js';
import { history, HISTORY_OPTS } from '../../src/ingest/events/events.testkit.js';
import { CorrectedVehicle } from '../../src/ingest/events/corrections/model.testkit.js';
import { correction, readCorrections, replayFrom } from '../../src/ingest/events/corrections/correct.js';
import { STREAMS } from '../../src/ingest/events/inputs.js';
import { canByVehicle, PACK_DETECTORS, PACK_DETECTORS_READ, PACK_PHASES, runDetectors, runPackValues } from './packWork.js';
import { compare, packWarningComparisons } from './packWarningsCost.js';

const PUSHES = Number(process.argv[2] ?? 100);
const SIZE = 1_000;
const ROUNDS = 3;
const data = new BenchData(500);
const plausibility = plausibilityFor(loadConfig({ PUSH_AUTH: 'none' }));
const pushes = Array.from({ length: PUSHES }, (_, p) => Array.from({ length: SIZE }, (_, i) => data.mixed(p * SIZE + i)));
const bodies = pushes.map((records) => Buffer.from(JSON.stringify({ bulkData: records })));
// The same pushes with one parameter outside the schema in every CAN record (CAN objects are dynamic).
const unknownBodies = pushes.map((records) =>
  Buffer.from(JSON.stringify({ bulkData: records.map((r) => (r.type === 'can' ? { ...r, data: { ...r.data, motor_temp: 61.5 } } : r)) })),
);
const decoder = new TextDecoder('utf-8', { fatal: true });

/** CPU µs per record of `stage` over every push, after a warm-up pass; returns the stage's outputs. */
/** A stage's core-µs per record over `records` records all its inputs hold (a push's records each, by default). */
function measure<I, O>(name: string, inputs: I[], stage: (input: I) => O, rows: Array<[string, number]>, records = PUSHES * SIZE): O[] {
  let out = inputs.map(stage);
  const before = process.cpuUsage();
  for (let r = 0; r < ROUNDS; r++) out = inputs.map(stage);
  const used = process.cpuUsage(before);
  rows.push([name, (used.user + used.system) / (ROUNDS * records)]);
  return out;
}

const rows_: Array<[string, number]> = [];
/** The scanner's row, apart: it replaces the general path's decode, parse, validate, judge and flatten. */
const scanRows: Array<[string, number]> = [];
/** The vehicle events' derivation in the worker, apart (EVENTS=on). */
const eventRows: Array<[string, number]> = [];
/** The pack work of a CAN record in the worker (packWork.ts), apart: per CAN record, not per record. */
const packRows: Array<[string, number]> = [];
/** Encode and read back without deflate, apart: what a job costs while workers keep up. */
const deflateRows: Array<[string, number]> = [];
const texts = measure('receiver: UTF-8 decode (TextDecoder, fatal)', bodies, (b) => decoder.decode(b), rows_);
const parsed = measure('receiver: JSON.parse', texts, (t) => (JSON.parse(t) as { bulkData: unknown[] }).bulkData, rows_);
const now = Date.now();
const valid = measure('receiver: validate (validateRecord)', parsed, (items) => items.map((i) => validateRecord(i, now)).flatMap((v) => (v.ok ? [v.record] : [])), rows_);
// judge refuses fields in place: judge fresh copies, outside the timing.
const copies = valid.map((rs) => rs.map((r) => ({ ...r, fields: { ...r.fields } })));
measure('receiver: judge (plausibility)', copies, (rs) => rs.map((r) => plausibility.judge(r, now)), rows_);
const rows = measure('receiver: flatten into rows', valid, (rs) => rowsOf(rs, FLATTEN), rows_);
// The receiver's own path: one pass from the bytes to the rows (the four stages above, for plain records).
const facts = { receivedAt: now, originOf: () => ({ deliveryId: '', sender: '', receivedAt: now, route: '', stage: 'receive' as const }) };
const scanned = measure('receiver: scan (bytes to rows, one pass)', bodies, (b) => {
  const sorter = new RecordSorter(facts, { plausibility, flatten: FLATTEN, quarantineRawLimit: 1_000, partitions: 1 });
  if (!scanPush(b, 'bulk', sorter, { plausibility, flatten: FLATTEN, receivedAt: now }) || sorter.accepted !== SIZE) throw new Error('the scanner declined a bench push');
  return sorter.rows[0]!;
}, scanRows);
/** A sorter that counts the records the scanner hands to the general path. */
class Counting extends RecordSorter {
  handed = 0;
  override item(i: number, item: unknown, text?: string): void {
    this.handed++;
    super.item(i, item, text);
  }
}
const scanOf = (b: Buffer) => {
  const sorter = new Counting(facts, { plausibility, flatten: FLATTEN, quarantineRawLimit: 1_000, partitions: 1 });
  if (!scanPush(b, 'bulk', sorter, { plausibility, flatten: FLATTEN, receivedAt: now }) || sorter.handed > 0) throw new Error('the scanner handed a bench record over');
  return sorter.rows[0]!;
};
// Alternated round by round with the same pushes without it, medians of each: the pair's ratio is what matters.
{
  const known: number[] = [];
  const unknown: number[] = [];
  for (let r = 0; r < 9; r++) {
    for (const [bodiesOf, out] of [[bodies, known], [unknownBodies, unknown]] as const) {
      const row: Array<[string, number]> = [];
      measure('', bodiesOf, scanOf, row);
      out.push(row[0]![1]);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  scanRows.push(['receiver: scan, one unknown parameter per CAN record', median(unknown)], ['receiver: scan, the same without it (alternated)', median(known)]);
}
for (let i = 0; i < PUSHES; i++) if (!scanned[i]!.buf.subarray(0, scanned[i]!.len).equals(rows[i]!.buf.subarray(0, rows[i]!.len))) throw new Error(`push ${i}: the scanner's rows differ from the general path's`);
const jobs = measure('receiver: encode job (codec v3, deflated: a backlog)', rows, (r) => encodePointsJob([{ rows: r, from: 0, to: r.records }]), rows_);
// Apart from the stages: the same job as text, as the receiver writes it while workers keep up.
const textJobs = measure('job as text (no backlog)', rows, (r) => encodePointsJob([{ rows: r, from: 0, to: r.records }], false), deflateRows);
measure('job rows from text', textJobs, (j) => jobRows(j)!, deflateRows);
const bytes = measure('worker: job rows (inflate)', jobs, (j) => jobRows(j)!, rows_);
measure('worker: request body from rows (bytes)', bytes, (b) => readRows(b).lines.bytes, rows_);
// Vehicle events (EVENTS=on): what the store (events/store/) does around its Redis round trip, per job and vehicle (its
// own functions): the job's inputs by vehicle, each state (cached in the process, or restored from what
// Redis holds: its committed part and its pending records' texts), its records derived, and the
// arguments of the commit script (the committed part, each new pending record's score and text). States
// start empty each round and build up over the pushes, as a fleet's do (a few pending records a vehicle).
{
  const writtenRecords = bytes.map((b) => readRows(b, DERIVE_PICK).writtenRecords);
  /** By vehicle, as Redis holds them: the committed part, and each stream's pending records sorted by time (Redis sorts them). */
  let stored = new Map<string, { committed: Buffer; pending: Map<number, Array<[number, Buffer]>> }>();
  let cache = new Map<string, VehicleState>();
  let pushIndex = 0;
  const deriveJob = (writtenRecords: readonly WrittenRecord[], cached: boolean, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS) => {
    if (pushIndex++ % PUSHES === 0) {
      stored = new Map();
      cache = new Map();
    }
    const byVehicle = inputsByVehicle(writtenRecords);
    const args = new CommitArgs(byVehicle.size);
    const states: VehicleState[] = [];
    for (const [v, inputs] of byVehicle) {
      const hit = cached ? cache.get(v) : undefined;
      const kept = hit === undefined ? stored.get(v) : undefined;
      const state =
        hit ?? (kept === undefined ? newState() : restore(kept.committed, [...kept.pending].map(([streamId, list]) => ({ streamId, members: list.map((e) => e[1]) }))));
      const d = ingest(v, state, inputs, now, opts);
      args.vehicle(v, 1, state, d, opts);
      states.push(state);
    }
    const packed = args.finish([]);
    if (cached) [...byVehicle.keys()].forEach((v, i) => cache.set(v, states[i]!));
    else {
      // As the script does: the committed part, the new pending records, those at or below the watermark removed.
      for (const a of readCommitArgs(packed).vehicles) {
        const k = stored.get(a.vehicleno) ?? { committed: Buffer.alloc(0), pending: new Map<number, Array<[number, Buffer]>>() };
        k.committed = Buffer.from(a.written.committed);
        for (const st of a.streams) {
          const wm = st.watermark ?? -Infinity;
          const list = (k.pending.get(st.streamId) ?? []).filter((e) => e[0] > wm && !st.replaces.includes(e[0]));
          for (const [time, bytes] of st.adds) list.push([time, Buffer.from(bytes)]);
          list.sort((x, y) => x[0] - y[0]);
          k.pending.set(st.streamId, list);
        }
        stored.set(a.vehicleno, k);
      }
    }
    // As the store does once the script answered: the buffers serve the next commit.
    args.release();
    return byVehicle.size;
  };
  measure('worker: vehicle events (read the inputs, derive, write; state cached)', bytes, (b) => deriveJob(readRows(b, DERIVE_PICK).writtenRecords, true), eventRows);
  // Picking the inputs, beyond reading the lines the worker reads anyway: alternated with the same reads
  // without it, each job's result dropped at once as a worker drops it (kept, a hundred jobs' picked values
  // would be garbage collection's work here, as they are not in a worker).
  {
    const withPick: number[] = [];
    const without: number[] = [];
    for (let r = 0; r < 9; r++) {
      for (const [pick, out] of [[DERIVE_PICK, withPick], [undefined, without]] as const) {
        const row: Array<[string, number]> = [];
        measure('', bytes, (b) => readRows(b, pick).writtenRecords.length, row);
        out.push(row[0]![1]);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    eventRows.push(['  of which picking the inputs (beyond the lines; medians of 9 alternated rounds)', median(withPick) - median(without)]);
  }
  pushIndex = 0;
  measure('  of which derive + write (state cached, as while a vehicle stays with one process)', writtenRecords, (x) => deriveJob(x, true), eventRows);
  pushIndex = 0;
  measure('  of which derive + write, every state parsed (no cache)', writtenRecords, (x) => deriveJob(x, false), eventRows);
  // With geofences: a 500-m circle at each of the first 10 vehicles' depots (they start and end their
  // drives there); then those and 9,990 squares of 200 m scattered within 15 km of the fleet's depots.
  const depots = data.depots();
  const circles = depots.slice(0, 10).map((d, i): Geofence => ({ id: i + 1, name: `depot ${i}`, kind: 'depot', geometry: { type: 'Point', coordinates: [d.lng, d.lat] }, radiusM: 500, from: 0 }));
  let seed = 1;
  const rnd = () => ((seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647);
  const squares = Array.from({ length: 9_990 }, (_, i): Geofence => {
    const d = depots[i % depots.length]!;
    const lat = d.lat + (rnd() - 0.5) * 0.27;
    const lng = d.lng + (rnd() - 0.5) * 0.27;
    const s = 0.0018;
    return { id: 11 + i, name: `zone ${i}`, kind: 'customer', geometry: { type: 'Polygon', coordinates: [[[lng, lat], [lng + s, lat], [lng + s, lat + s], [lng, lat + s], [lng, lat]]] }, from: 0 };
  });
  for (const [label, geofences] of [['10 geofences', circles], ['10,000 geofences', [...circles, ...squares]]] as const) {
    const opts = { ...DEFAULT_DERIVE_OPTIONS, geofences: { current: new GeofenceLookup(geofences) } };
    pushIndex = 0;
    measure(`  of which derive + write, ${label} (state cached)`, writtenRecords, (x) => deriveJob(x, true, opts), eventRows);
  }

  // The pack work of each CAN record (packWork.ts): its pack values as it arrives, and the pack detectors'
  // hooks over each vehicle's records in time order (fresh states each pass), alternated with the detectors
  // they read alone; medians of 9 rounds each (one pass over the CAN records is all the warm-up a round
  // has: the first rounds run before the engine has optimized them). And, reused, what packWarningsCost.ts
  // measures of the warnings within derive + write, on a pack's records with and without their fields.
  const cans = canByVehicle(writtenRecords.flatMap((w) => [...inputsByVehicle(w)]));
  const canList = [...cans.values()].flat();
  {
    const values: number[] = [];
    const withPack: number[] = [];
    const without: number[] = [];
    for (let r = 0; r < 9; r++) {
      const row: Array<[string, number]> = [];
      measure('', [canList], (list) => runPackValues(list), row, canList.length);
      for (const phases of [PACK_PHASES.with, PACK_PHASES.without]) measure('', [cans], (byVehicle) => runDetectors(phases, byVehicle), row, canList.length);
      values.push(row[0]![1]);
      withPack.push(row[1]![1]);
      without.push(row[2]![1]);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    packRows.push(
      ['worker: pack values on arrival (packValuesInto; medians of 9 rounds)', median(values)],
      [`worker: pack detectors (${PACK_DETECTORS.map((d) => d.key).join(', ')}; beyond ${PACK_DETECTORS_READ.map((d) => d.key).join(', ')}, medians of 9 alternated rounds)`, median(withPack) - median(without)],
    );
  }
  for (const { what, full, bare } of packWarningComparisons()) {
    packRows.push([`  ${what}: a pack's record derived + written with the fields they read, less without (packWarningsCost.ts, median of 15 alternated rounds)`, compare(full, bare).median]);
  }
  process.stderr.write(`pack work over ${canList.length} CAN records of ${cans.size} vehicles\n`);
}

// Corrections (events/corrections/): a late record's vehicle replayed from its checkpoint over its
// records (read back from InfluxDB in the service: here at hand), what it derived diffed against what was
// told; per record replayed. A vehicle's hour of drives, parks, charges and alarm flaps, a record or two a second.
{
  const records = history(42);
  const live = new CorrectedVehicle('KA01AB1234', HISTORY_OPTS);
  for (let i = 0; i < records.length; i += 20) live.deliver(records.slice(i, i + 20) as unknown as Parameters<typeof live.deliver>[0], records[Math.min(i + 19, records.length - 1)]!.time);
  const kept = readCorrections('KA01AB1234', Object.fromEntries(live.hash));
  const from = kept.checkpoints[0]!;
  const inputs = records.filter((r) => r.time > replayFrom(from, HISTORY_OPTS).get(STREAMS.get(r.type)!.streamId)!);
  measure(`corrections: replay a vehicle's hour from its first checkpoint, diff what was told (${inputs.length} records)`, [inputs], (rs) => correction('KA01AB1234', live.state, kept, from, rs, now, HISTORY_OPTS).replayed.outputs.length, eventRows, inputs.length);
}

const width = Math.max(...rows_.map(([n]) => n.length));
process.stdout.write(`${PUSHES} pushes of ${SIZE} mixed records, core-µs per record (${ROUNDS} rounds after a warm-up):\n`);
for (const [n, us] of rows_) process.stdout.write(`  ${n.padEnd(width)}  ${us.toFixed(2).padStart(6)}\n`);
const sum = (p: string) => rows_.filter(([n]) => n.startsWith(p)).reduce((a, [, us]) => a + us, 0);
const general = ['decode', 'JSON.parse', 'validate', 'judge', 'flatten'].reduce((a, k) => a + rows_.find(([n]) => n.includes(k))![1], 0);
process.stdout.write(`  ${scanRows[0]![0].padEnd(width)}  ${scanRows[0]![1].toFixed(2).padStart(6)}  (the general path's decode to flatten: ${general.toFixed(2)})\n`);
process.stdout.write(`  ${scanRows[1]![0].padEnd(width)}  ${scanRows[1]![1].toFixed(2).padStart(6)}  (${((scanRows[1]![1] / scanRows[2]![1] - 1) * 100).toFixed(1)} % against the same without it: ${scanRows[2]![1].toFixed(2)}; medians of 9 alternated rounds)\n`);
for (const [n, us] of eventRows) process.stdout.write(`  ${n.padEnd(width)}  ${us.toFixed(2).padStart(6)}  (beside the worker stages)\n`);
for (const [n, us] of packRows) process.stdout.write(`  ${n.padEnd(width)}  ${us.toFixed(2).padStart(6)}  (per CAN record, beside the worker stages)\n`);
for (const [n, us] of deflateRows) process.stdout.write(`  ${n.padEnd(width)}  ${us.toFixed(2).padStart(6)}\n`);
process.stdout.write(`  ${'receiver stages, scanning'.padEnd(width)}  ${(sum('receiver') - general + scanRows[0]![1]).toFixed(2).padStart(6)}\n`);
process.stdout.write(`  ${'receiver stages'.padEnd(width)}  ${sum('receiver').toFixed(2).padStart(6)}\n  ${'worker stages'.padEnd(width)}  ${sum('worker').toFixed(2).padStart(6)}\n`);
