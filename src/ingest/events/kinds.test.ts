import { describe, expect, it } from 'vitest';
import { detectorsTable, eventOutputsTable, webhookDataTable } from '../../devstack/generatedDocs.js';
import { CONFIG_KEYS } from '../../config/index.js';
import { VEHICLE_EVENTS } from '../../telemetry/derivedMeasurements.js';
import { EVENT_NAMES } from '../fleet/history.js';
import { flatSlice } from './detectors/context.js';
import { detector, eventNamesOf, runOrder, PHASES, type Detector } from './detectors/detector.js';
import { TRACK_SLICE, type Step } from './detectors/track.js';
import { emitEvent, DEFAULT_DERIVE_OPTIONS, emptyDerived, type Context } from './detectors/context.js';
import { compilePhases, newState, SLICES } from './derive.js';
import { inputOf, NAMED_FIELDS, recordOf, STREAMS } from './inputs.js';
import { readFileSync } from 'node:fs';
import { runOrderTable } from '../../devstack/generatedDocs.js';
import { DETECTORS, EVENTS_EVENT_NAMES, EVENTS_OUTPUTS, nextSliceId, slicesOf } from './kinds.js';

/** The detectors' list is the one place a kind is declared: what is derived from it, and what guards it. */

describe('the detectors’ list (kinds.ts)', () => {
  it('gives each slice an id of its own and names the next free one; the vehicle state holds every slice, fresh', () => {
    const ids = DETECTORS.map((d) => d.slice.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(DETECTORS.map((d) => d.key)).size).toBe(DETECTORS.length);
    expect(nextSliceId()).toBe(Math.max(...ids) + 1);
    const s = newState() as unknown as Record<string, unknown>;
    for (const d of DETECTORS) expect(s[d.key], d.key).toEqual(d.slice.fresh());
    expect(Object.keys(SLICES)).toEqual(DETECTORS.map((d) => d.key));
  });

  it('declares what each detector reads, writes into, derives and takes: every setting it names is one, every slice it writes into is listed', () => {
    const keys = new Set<string>(DETECTORS.map((d) => d.key));
    for (const d of DETECTORS) {
      for (const k of d.settings) expect(CONFIG_KEYS, `${d.key}: ${k}`).toContain(k);
      for (const k of d.writesInto ?? []) expect(keys.has(k), `${d.key} writes into ${k}`).toBe(true);
    }
  });

  it('the event names (the CLI’s --event) are the outputs declared, each once, and the vehicle_events tag describes each', () => {
    expect(new Set(EVENT_NAMES).size).toBe(EVENT_NAMES.length);
    for (const e of EVENTS_EVENT_NAMES) expect(EVENT_NAMES).toContain(e);
    expect(EVENT_NAMES).toEqual(expect.arrayContaining(['silent', 'back', 'fuel_drop', 'moved_while_immobilised', 'alert_thermal_runaway_raised']));
    const described = VEHICLE_EVENTS.tags.find((t) => t.name === 'event')!.description;
    for (const o of EVENTS_OUTPUTS) for (const e of o.events) if (!e.startsWith('alert_')) expect(described, e).toMatch(new RegExp(`\`${e}\`|\`${e.replace(/_[a-z]+$/, '')}_[a-z]+\` / \`_${e.split('_').at(-1)}\``));
  });

  it('runs each detector after what it reads or amends and before what it writes into, else in the list’s order', () => {
    const order: string[] = runOrder(DETECTORS).map((d) => d.key);
    const at = (k: string): number => order.indexOf(k);
    for (const d of DETECTORS) {
      for (const k of [...d.reads, ...d.amends, ...d.after]) expect(at(d.key), `${d.key} after ${k}`).toBeGreaterThan(at(k));
      for (const k of [...d.readsBefore, ...d.writesInto, ...d.before]) expect(at(d.key), `${d.key} before ${k}`).toBeLessThan(at(k));
    }
    // What users meet of it: idling's and overspeed's time counts in the trip a record ends; towing's parked place is the settled fix.
    expect(at('idle')).toBeLessThan(at('trips'));
    expect(at('overspeed')).toBeLessThan(at('trips'));
    expect(at('towing')).toBeGreaterThan(at('trips'));
    // Nothing else asked: the list's order (the track and the soc first, as kinds were added).
    expect(order.slice(0, 4)).toEqual(['track', 'soc', 'alarms', 'charging']);
    // Idling and stops read the ignition as the records before left it: the ignition's own update comes after them.
    expect(at('ignition')).toBeGreaterThan(Math.max(at('idle'), at('stops')));
    expect(runOrderTable()).toContain('| `gap` | `idle` → `overspeed` → `trips` |');
  });

  it('declares the record fields each detector reads: those its module reads, each named in its table row, and no field read that none declares', () => {
    const usedIn = (file: string): Set<string> => new Set([...readFileSync(new URL(file, import.meta.url), 'utf8').matchAll(/\bplan\.(\w+At|alarms)\b/g)].map((m) => m[1]!));
    // Charging and the drain are handed their records' fields by derive.ts's waits.
    const waits = usedIn('./derive.ts');
    const byModule = new Map<string, Set<string>>();
    for (const d of DETECTORS) {
      const file = d.key === 'late' ? undefined : d.key === 'finishedTrips' ? 'trips.ts' : `${d.key}.ts`;
      if (file === undefined) continue;
      const declared = byModule.get(file) ?? new Set<string>();
      for (const f of d.fields) declared.add(f);
      byModule.set(file, declared);
      const used = usedIn(`./detectors/${file}`);
      for (const f of d.fields) expect(used.has(f) || ((d.key === 'charging' || d.key === 'drain') && waits.has(f)), `${d.key} declares ${f}`).toBe(true);
      for (const f of d.fields) if (f in NAMED_FIELDS) expect(d.input, `${d.key}'s row names ${f}`).toContain(`\`${NAMED_FIELDS[f as keyof typeof NAMED_FIELDS]}\``);
    }
    for (const [file, declared] of byModule) for (const f of usedIn(`./detectors/${file}`)) expect(declared.has(f), `${file} reads ${f}`).toBe(true);
    const all = new Set(DETECTORS.flatMap((d) => d.fields));
    for (const f of [...Object.keys(NAMED_FIELDS), 'latAt', 'lngAt', 'alarms']) expect(all.has(f as never), `no detector declares ${f}`).toBe(true);
  });

  it('refuses declarations that ask for a circle, naming the detectors, and a relation to no detector', () => {
    const a = detector({ key: 'a', slice: flatSlice<{ x: number }>(90, 'a', ['x'], () => ({ x: 0 })), fields: [], input: '', writesInto: { b: flatSlice<{ y: number }>(91, 'b', ['y'], () => ({ y: 0 })) }, settings: [], derives: '', rules: '', outputs: [] });
    const b = detector({ key: 'b', slice: flatSlice<{ y: number }>(91, 'b', ['y'], () => ({ y: 0 })), fields: [], input: '', reads: {}, after: [], before: ['a'], settings: [], derives: '', rules: '', outputs: [] });
    expect(() => runOrder([a, b] as Detector[])).toThrow(/circle among a, b/);
    const c = detector({ key: 'c', slice: flatSlice<{ z: number }>(92, 'c', ['z'], () => ({ z: 0 })), fields: [], input: '', after: ['nobody'], settings: [], derives: '', rules: '', outputs: [] });
    expect(() => runOrder([c] as Detector[])).toThrow(/c names nobody, which is no detector/);
  });

  it('a kind added is its module and one line in the list: its slice, names, table rows and its place in the phases follow', () => {
    interface Hail {
      hits: number;
    }
    const HAIL = detector({
      key: 'hail',
      slice: flatSlice<Hail>(nextSliceId(), 'hail', ['hits'], () => ({ hits: 0 })),
      fields: [],
      input: 'CAN `hail_hits` (a fixture)',
      // It reads the track (after its fix: the fixes this record confirmed) and writes into nothing.
      reads: { track: TRACK_SLICE },
      on: {
        position(ctx, s, _r, _plan, steps) {
          for (const step of steps) if (s.track.anchor === step.fix) emitEvent(ctx, 'hail_started', step.fix.time, 1, { hits: ++s.hail.hits });
        },
      },
      settings: [],
      derives: '`hail_started` / `hail_ended`',
      rules: 'a fixture kind: hail on the roof',
      outputs: [{ events: ['hail_started', 'hail_ended'], shown: '`hail_started` / `hail_ended`', measurement: VEHICLE_EVENTS, fields: [{ name: 'hits', meaning: 'hailstones counted' }], what: 'hail on the roof' }],
    });
    const list = [...DETECTORS, HAIL] as const;
    expect(Object.keys(slicesOf(list)).at(-1)).toBe('hail');
    expect(slicesOf(list).hail.id).toBe(nextSliceId());
    expect(nextSliceId(list)).toBe(nextSliceId() + 1);
    expect(eventNamesOf(list.flatMap((d) => d.outputs))).toEqual([...eventNamesOf(DETECTORS.flatMap((d) => d.outputs)), 'hail_started', 'hail_ended']);
    expect(detectorsTable(list)).toContain('| `hail.ts` | CAN `hail_hits` (a fixture) | `hail_started` / `hail_ended` | a fixture kind: hail on the roof |');
    expect(eventOutputsTable([...EVENTS_OUTPUTS, ...HAIL.outputs])).toContain('| `hail_started` / `hail_ended` | `vehicle_events` (`hits`) | hail on the roof |');
    expect(webhookDataTable([...EVENTS_OUTPUTS, ...HAIL.outputs])).toContain('| `vehicle.hail_started` / `vehicle.hail_ended` | `hits`: hailstones counted |');
    // Its hook runs in its phase, after the track it reads (the fixes it confirmed are its anchor), and nowhere else.
    expect(runOrderTable(list)).toMatch(/\| `position` \| `track` → .* → `hail` \|/);
    for (const p of PHASES) if (p !== 'position') expect(runOrderTable(list)).not.toMatch(new RegExp(`\\| \`${p}\` \\|.*hail`));
    const phases = compilePhases(list);
    const s = { ...newState(), hail: HAIL.slice.fresh() };
    const ctx: Context = { vehicleno: 'V', opts: DEFAULT_DERIVE_OPTIONS, out: emptyDerived(), late: s.late, cutBefore: NaN, previousTime: -Infinity };
    const plan = STREAMS.get('gps')!;
    const steps: Step[] = [];
    for (let k = 0; k < 5; k++) {
      const r = recordOf(inputOf('gps', 1_767_600_000_000 + k * 1000, { lat: 12.97 + k * 1e-4, lng: 77.59, speed: 40, ignstatus: 1 }), plan)!;
      // As derive.ts commits a record: the time of the one before it in its stream.
      ctx.previousTime = k === 0 ? -Infinity : r.time - 1000;
      phases.gap(ctx, s, r, plan, steps);
      phases.position(ctx, s, r, plan, steps);
    }
    expect(ctx.out.events.filter((e) => e.event === 'hail_started').map((e) => e.fields.hits)).toEqual([1, 2, 3, 4]);
    expect(s.hail.hits).toBe(4);
  });
});
