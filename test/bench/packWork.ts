/**
 * The pack work of a CAN record in the worker, apart, for the stages bench (stages.ts measures it as it
 * measures every stage: CPU time over the bench's records): the pack values computed as the record
 * arrives (events/packValues.ts `packValuesInto`), and the pack detectors' hooks over a vehicle's records
 * in time order. The pack detectors are derived from the declarations: every detector with a hook on the
 * `pack` phase, or reading a pack value (packHeat, cRate, packLife; a detector of cell drift joins them
 * by its declaration). Their hooks run compiled as derive.ts compiles them, beside the detectors whose
 * slices they read (batterySwap, the pack's ids), which `runDetectors` also runs alone: the difference is
 * the pack detectors' own.
 */
import { DEFAULT_DERIVE_OPTIONS, compilePhases, newState, type DeriveOptions, type EventInput } from '../../src/ingest/events/derive.js';
import { emptyDerived, type Context, type Step } from '../../src/ingest/events/detectors/context.js';
import type { Detector } from '../../src/ingest/events/detectors/detector.js';
import { DETECTORS } from '../../src/ingest/events/kinds.js';
import { STREAMS, emptyRecord, recordOf } from '../../src/ingest/events/inputs.js';
import { PACK_VALUES, packValuesInto } from '../../src/ingest/events/packValues.js';

const CAN = STREAMS.get('can')!;
const PACK_PLACES: ReadonlySet<string> = new Set(PACK_VALUES.map((v) => v.place));

/** The pack detectors, from their declarations. */
export const PACK_DETECTORS: readonly Detector[] = DETECTORS.filter((d) => d.on.pack !== undefined || d.fields.some((f) => PACK_PLACES.has(f)));

/** The detectors whose slices the pack detectors read, and theirs in turn (they run too, or the state the pack detectors read stands still). */
export const PACK_DETECTORS_READ: readonly Detector[] = (() => {
  const keys = new Set<string>();
  const visit = (d: Detector) => {
    for (const k of [...d.reads, ...d.readsBefore]) {
      if (keys.has(k) || PACK_DETECTORS.some((p) => p.key === k)) continue;
      keys.add(k);
      visit(DETECTORS.find((x) => x.key === k)!);
    }
  };
  PACK_DETECTORS.forEach(visit);
  return DETECTORS.filter((d) => keys.has(d.key));
})();

/** The CAN records among a job's (or several jobs') inputs, by vehicle, each vehicle's in the order given. */
export function canByVehicle(byVehicle: Iterable<[string, readonly EventInput[]]>, into = new Map<string, EventInput[]>()): Map<string, EventInput[]> {
  for (const [v, inputs] of byVehicle) {
    const cans = inputs.filter((i) => i.type === 'can');
    if (cans.length === 0) continue;
    const list = into.get(v);
    if (list === undefined) into.set(v, cans);
    else list.push(...cans);
  }
  return into;
}

const OUT = new Float64Array(PACK_VALUES.length);

/** `packValuesInto` of each CAN record, as recordOf calls it on arrival; how many had pack values. */
export function runPackValues(cans: readonly EventInput[], sentinels: readonly number[] = DEFAULT_DERIVE_OPTIONS.temperatureSentinels): number {
  let n = 0;
  for (const input of cans) if (packValuesInto(CAN.pack!, input.values, input.at, sentinels, OUT)) n++;
  return n;
}

const RECORD = emptyRecord(CAN.streamId, 0);
const STEPS: Step[] = [];

/**
 * Each vehicle's CAN records through the `battery` and `pack` phases of `detectors` (compiled as derive.ts
 * does; each vehicle from a fresh state, as derive.ts applies a committed record); the events they told.
 */
export function runDetectors(phases: ReturnType<typeof compilePhases>, byVehicle: ReadonlyMap<string, readonly EventInput[]>, opts: DeriveOptions = DEFAULT_DERIVE_OPTIONS): number {
  let told = 0;
  for (const [vehicleno, cans] of byVehicle) {
    const s = newState();
    const ctx: Context = { vehicleno, opts, out: emptyDerived(), late: s.late, cutBefore: NaN, previousTime: -Infinity };
    for (const input of cans) {
      const r = recordOf(input, CAN, RECORD, opts.temperatureSentinels);
      if (r === undefined) continue;
      if (CAN.bmsIdAt >= 0 || CAN.batteryIdAt >= 0) phases.battery(ctx, s, r, CAN, STEPS);
      if (CAN.pack !== undefined || CAN.capacityAt >= 0) phases.pack(ctx, s, r, CAN, STEPS);
    }
    told += ctx.out.events.length + ctx.out.packLife.length;
  }
  return told;
}

/** The phases of the pack detectors with those they read, and of those alone. */
export const PACK_PHASES = { with: compilePhases([...PACK_DETECTORS_READ, ...PACK_DETECTORS]), without: compilePhases(PACK_DETECTORS_READ) };
