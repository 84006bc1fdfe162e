import { describe, expect, it } from 'vitest';
import { detectorsTable, eventOutputsTable, webhookDataTable } from '../../devstack/generatedDocs.js';
import { CONFIG_KEYS } from '../../config/index.js';
import { VEHICLE_EVENTS } from '../../telemetry/derivedMeasurements.js';
import { EVENT_NAMES } from '../fleet/history.js';
import { flatSlice } from './detectors/context.js';
import { detector, eventNamesOf } from './detectors/detector.js';
import { newState, SLICES } from './derive.js';
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

  it('a kind added is its module and one line in the list: its slice, names and table rows follow', () => {
    interface Hail {
      hits: number;
    }
    const HAIL = detector({
      key: 'hail',
      slice: flatSlice<Hail>(nextSliceId(), 'hail', ['hits'], () => ({ hits: 0 })),
      reads: 'CAN `hail_hits` (a fixture)',
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
  });
});
