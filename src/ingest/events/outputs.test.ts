import { describe, expect, it } from 'vitest';
import { fieldsOf, influxName, OUTPUT_COMMON_FIELDS, type Output } from './detectors/detector.js';
import { fuelEvent } from './detectors/fuel.js';
import type { Immobilisation, ImmobilisationLookup } from './detectors/context.js';
import { EVENTS_OUTPUTS } from './kinds.js';
import { outputsOf, webhookPayloadOf, type OutboxEntry } from './outbox.js';
import { CAPACITY, cellDays, healthy, withCurrent, withSensor } from './detectors/pack.testkit.js';
import { can, gps, history, HISTORY_OPTS, packCycles, route, runOrdered, sorted, T0, V, type Named } from './events.testkit.js';
import type { DeriveOptions } from './derive.js';

/**
 * The fields each output carries are declared once, in its detector's `outputs` (docs/events.md's tables
 * are rendered from them): here the derivation, run on histories and a few scripted feeds that reach every
 * kind, emits exactly those in the webhook's `data`, no field undeclared and none declared that never comes.
 */

const MIN = 60_000;
const HOUR = 3_600_000;

/** What an output's webhook delivery is named by: the event, or `vehicle.<kind>` for a row. */
const typeOf = (e: OutboxEntry): string => (e.kind === 'event' ? e.event : `vehicle.${e.kind}`);

/** The output declaring a type, and the fields it declares for it. */
const declared = new Map<string, { output: Output; fields: Set<string> }>();
for (const o of EVENTS_OUTPUTS) {
  for (const e of o.events) declared.set(e, { output: o, fields: new Set(fieldsOf(o, e).map((f) => f.name)) });
  if (o.kind !== undefined) declared.set(`vehicle.${o.kind}`, { output: o, fields: new Set(fieldsOf(o).map((f) => f.name)) });
}

/** Every field of every entry's webhook `data` beyond the common ones, by type. */
function emittedFields(entries: readonly OutboxEntry[]): Map<string, Set<string>> {
  const by = new Map<string, Set<string>>();
  for (const e of entries) {
    const common: readonly string[] = [...(e.kind === 'event' ? OUTPUT_COMMON_FIELDS.event : OUTPUT_COMMON_FIELDS.row), ...OUTPUT_COMMON_FIELDS.marks];
    const fields = by.get(typeOf(e)) ?? new Set<string>();
    for (const k of Object.keys(webhookPayloadOf(e).data)) if (!common.includes(k)) fields.add(k);
    by.set(typeOf(e), fields);
  }
  return by;
}

/** An immobilisation from half an hour into every history on: a drive after it is a move while immobilised. */
const immobilised: ImmobilisationLookup = {
  at: (vehicleno: string, time: number): Immobilisation | undefined => (vehicleno === V && time >= T0 + 30 * MIN ? { id: 'c1', type: 'movement', from: T0 + 30 * MIN, to: Infinity } : undefined),
};
/** The histories' settings, with the soc thresholds inside their range and an immobilisation. */
const OPTS: DeriveOptions = { ...HISTORY_OPTS, socLowPercent: 45, socRecoveredPercent: 50, immobilisations: { current: immobilised } };

/** Parked with the ignition off for 4 hours, the soc falling a point each 30 minutes: a drain. */
function drained(): Named[] {
  const out: Named[] = [];
  for (let j = 0; j <= 240; j++) out.push(gps(T0 + j * MIN, 12.9, 77, 0, 0), can(T0 + j * MIN + 500, { soc: 80 - Math.floor(j / 30) }));
  return sorted(out);
}

/** Two packs: the ids change. */
const swapped = (): Named[] => [can(T0, { soc: 18, bms_id: 410_233, bat_id_1: 5_550_001 }), can(T0 + MIN, { soc: 96, bms_id: 733_019, bat_id_1: 5_550_417 })];

/** A pack heating fast on one sensor (so also apart from the others), then worked at 2.5 C for three minutes. */
const packTrouble = (): Named[] => withCurrent(withSensor(healthy(7), 2, 20, (m) => 35 + 3 * m), -2.5 * CAPACITY, 10, 3);

/** A drive cut by a silence of hours (its trip ended by the gap), then another. */
function cut(): Named[] {
  const a = route(T0, 12.9, [{ seconds: 600, kmh: 40, ign: 1 }]);
  const b = route(a.end + 3 * HOUR, a.lat, [{ seconds: 600, kmh: 40, ign: 1 }, { seconds: 60, kmh: 0, ign: 0 }]);
  return [...a.fixes, ...b.fixes];
}

/** A pack fading 100 → 80 Ah over ten deep charges while its BMS says 100 % all along: estimated, flagged. */
const faded = (): Named[] => packCycles({ cycles: 10, capacityAh: (c) => 100 - (20 * c) / 9, soh: () => 100, ratedAh: 100, bmsId: 410_233, low: 20, high: 90 }).records;

/** A pack whose last cell drifts 3 mV a day, each day a charge to full: told drifting, with its rest reading. */
const drifting = (): Named[] => cellDays({ days: 30, seed: 1, cells: 14, driftV: 0.003, every: 5 }).records;

function allEntries(): OutboxEntry[] {
  const runs = [...Array.from({ length: 40 }, (_, seed) => runOrdered(history(seed + 1), OPTS)), runOrdered(drained()), runOrdered(swapped()), runOrdered(cut(), OPTS), runOrdered(faded()), runOrdered(packTrouble()), runOrdered(drifting())];
  return runs.flatMap((d) => outputsOf(d));
}

describe("the outputs' fields, declared once", () => {
  const emitted = emittedFields(allEntries());

  it('every field the derivation emits is declared for its event (or row)', () => {
    for (const [type, fields] of emitted) {
      const d = declared.get(type);
      expect(d, `${type}: no output declares it`).toBeDefined();
      expect([...fields].filter((f) => !d!.fields.has(f)), `${type}: emitted, not declared`).toEqual([]);
    }
  });

  it('every field declared is emitted by some event of those it is declared for', () => {
    for (const o of EVENTS_OUTPUTS) {
      if (o.events.every((e) => e.startsWith('fuel_'))) continue; // the fuel sync's: below
      const types = o.kind !== undefined ? [`vehicle.${o.kind}`] : o.events;
      expect(types.some((t) => emitted.has(t)), `${o.shown}: never emitted by the feeds`).toBe(true);
      for (const f of o.fields) {
        const on = f.on ?? types;
        expect(on.some((t) => emitted.get(t)?.has(f.name)), `${o.shown}: ${f.name} declared, never emitted`).toBe(true);
      }
    }
  });

  it("the fuel sync's events carry what their output declares", () => {
    const fuel = EVENTS_OUTPUTS.find((o) => o.events.includes('fuel_drop'))!;
    const e = fuelEvent(V, 'litres', { event: 'fuel_drop', fromAt: T0, from: 40, toAt: T0 + 10 * MIN, to: 31.5 });
    const fields = emittedFields([{ kind: 'event', ...e }]).get('fuel_drop')!;
    expect([...fields].sort()).toEqual(fieldsOf(fuel, 'fuel_drop').map((f) => f.name).sort());
  });

  it('each declared field is a field or tag of the measurement its output is written to (which gives its unit)', () => {
    for (const o of EVENTS_OUTPUTS) {
      const names = new Set([...o.measurement.fields, ...o.measurement.tags].map((f) => f.name));
      for (const f of o.fields) expect(names.has(influxName(f.name)), `${o.shown}: ${f.name} not in ${o.measurement.name}`).toBe(true);
    }
  });
});
