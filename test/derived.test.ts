/**
 * The derived measurements are declared once (src/telemetry/derivedMeasurements.ts): every tag and field
 * a writer writes is declared there, with its unit, and the docs' tables are rendered from it.
 */
import { describe, expect, it } from 'vitest';
import { CAN_PACK, COMMANDS, DERIVED_MEASUREMENTS, FUEL, type DerivedMeasurement } from '../src/telemetry/derivedMeasurements.js';
import { commandPoint } from '../src/ingest/commands/tell.js';
import type { CommandEntry } from '../src/ingest/commands/model.js';
import { DEFAULT_DERIVE_OPTIONS, flush, ingest, newState, type Derived } from '../src/ingest/events/derive.js';
import { marked, retraction, toldOf } from '../src/ingest/events/corrections/ledger.js';
import { pointOf, type OutboxEntry } from '../src/ingest/events/outbox.js';
import { PACK_MEASUREMENT, PACK_NAMES } from '../src/ingest/flatten/packHealth.js';
import { fuelLine } from '../src/ingest/sync/fuel.js';
import { can, gps, north, route, T0, V } from '../src/ingest/events/events.testkit.js';
import { parseGeofences } from '../src/ingest/geofences/geofence.js';
import { GeofenceLookup } from '../src/ingest/geofences/lookup.js';

/** A line's measurement, tag keys and field keys (the lines here carry no escaped separators). */
function parts(line: string): { measurement: string; tags: string[]; fields: string[] } {
  const [head, fieldSet] = line.split(' ');
  const [measurement, ...tags] = head!.split(',');
  return { measurement: measurement!, tags: tags.map((t) => t.split('=')[0]!), fields: fieldSet!.split(',').map((f) => f.split('=')[0]!) };
}

const declared = (name: string): DerivedMeasurement => {
  const m = DERIVED_MEASUREMENTS.find((d) => d.name === name);
  if (!m) throw new Error(`${name} is not declared`);
  return m;
};

function expectDeclared(line: string): void {
  const { measurement, tags, fields } = parts(line);
  const m = declared(measurement);
  expect(tags.filter((t) => !m.tags.some((d) => d.name === t)), `${measurement}'s tags`).toEqual([]);
  expect(fields.filter((f) => !m.fields.some((d) => d.name === f)), `${measurement}'s fields`).toEqual([]);
}

describe('derived measurements', () => {
  it('every tag and field the vehicle events write is declared', () => {
    const s = newState();
    const parts: Derived[] = [];
    const rs = [
      can(T0, { soc: 80, battery_voltage: 51, current: -20, alert_over_temp: 1 }),
      ...Array.from({ length: 400 }, (_, j) => gps(T0 + j * 1000, 12.97 + north(10 * j), 77.59, j === 399 ? 0 : 36, j === 399 ? 0 : 1)),
      ...Array.from({ length: 100 }, (_, j) => can(T0 + 400_000 + j * 1000, { load_status: 2, soc: 50, battery_voltage: 52, current: 20, alert_over_temp: 0 })),
      can(T0 + 500_000, { load_status: 0, soc: 51, bms_id: 7 }),
      can(T0 + 500_200, { soc: 15, bat_id_1: 2 }),
      can(T0 + 500_500, { soc: 95, bms_id: 8, bat_id_1: 3 }),
    ];
    parts.push(ingest(V, s, rs, T0 + 500_000));
    parts.push(ingest(V, s, [can(T0 + 10_000, { alert_thermal_runaway: 1 })], T0 + 500_001));
    parts.push(flush(V, s, T0 + 600_000));
    // Then over the speed limit, idling, parked, towed: every other kind a drive can tell.
    // In a geofence, so the geofence events, and the trips', stops' and charging sessions' geofence tags, are written too.
    const city = parseGeofences({ type: 'Feature', properties: { name: 'City', kind: 'other', radius_m: 50_000 }, geometry: { type: 'Point', coordinates: [77, 13] } });
    const opts = { ...DEFAULT_DERIVE_OPTIONS, speedLimitKmh: 60, geofenceMinDwellMs: 0, geofences: { current: new GeofenceLookup(city.map((g, i) => ({ ...g, id: i + 1, from: 0 }))) } };
    const later = route(T0 + 3_600_000, 13, [
      { seconds: 120, kmh: 80, ign: 1 },
      { seconds: 400, kmh: 0, ign: 1 },
      { seconds: 600, kmh: 0, ign: 0 },
      { seconds: 120, kmh: 20, ign: 0 },
      { seconds: 60, kmh: 36, ign: 1 },
    ]);
    // Parked with the ignition off (the route's third leg), the pack losing a point a minute: a drain.
    const parkedFrom = T0 + 3_600_000 + 520_000;
    const draining = Array.from({ length: 9 }, (_, k) => can(parkedFrom + 30_000 + k * 60_000, { soc: 80 - k }));
    parts.push(ingest(V, s, [...later.fixes, ...draining], later.end, opts), flush(V, s, later.end + 60_000, opts));
    const entries: OutboxEntry[] = [
      ...parts.flatMap((d) => d.events.map((e) => ({ kind: 'event' as const, ...e }))),
      ...parts.flatMap((d) => d.trips.map((t) => ({ kind: 'trip' as const, ...t, gapEnded: 1 }))),
      ...parts.flatMap((d) => d.chargingSessions.map((c) => ({ kind: 'charging' as const, ...c }))),
      ...parts.flatMap((d) => d.stops.map((p) => ({ kind: 'stop' as const, ...p }))),
      ...parts.flatMap((d) => d.packLife.map((p) => ({ kind: 'pack_life' as const, ...p }))),
    ];
    expect(new Set(entries.map((e) => e.kind))).toEqual(new Set(['event', 'trip', 'charging', 'stop', 'pack_life']));
    const told = new Set(entries.flatMap((e) => (e.kind === 'event' ? [e.event] : [])));
    for (const kind of ['overspeed_started', 'overspeed_ended', 'idle_started', 'idle_ended', 'moved_while_off', 'geofence_entered', 'battery_swapped', 'soc_low', 'soc_recovered', 'soc_drain_while_parked']) expect(told, kind).toContain(kind);
    expect(entries.some((e) => e.kind === 'trip' && e.startGeofence === 'City')).toBe(true);
    expect(entries.some((e) => e.kind === 'stop' && e.geofence === 'City')).toBe(true);
    for (const e of entries) expectDeclared(pointOf(e));
    // And what corrections write of each (corrections/ledger.ts): marked late, a revision, a retraction.
    for (const e of entries) {
      expectDeclared(pointOf(marked(e, { late: 1 })));
      expectDeclared(pointOf(marked(e, { revision: 2 })));
      expectDeclared(pointOf(retraction(V, toldOf(e, 0), 1)));
    }
  });

  it('can_pack’s fields are declared in the order job rows number them; fuel’s line is declared', () => {
    expect(PACK_MEASUREMENT).toBe(CAN_PACK.name);
    expect([...PACK_NAMES]).toEqual(CAN_PACK.fields.map((f) => f.name));
    expectDeclared(fuelLine(V, 'litres', T0, 12.5));
    expect(parts(fuelLine(V, 'litres', T0, 12.5)).measurement).toBe(FUEL.name);
  });

  it('the command ledger’s points (commands, moved_while_immobilised) are declared', () => {
    const c: CommandEntry = {
      v: 1, id: 'cabc', vehicleno: V, op: 'immobilize', type: 'discharge', immediate: true, reason: 'overdue', author: { kind: 'rule', name: 'towed' },
      requestedAt: T0, vehicle: { fixTime: T0, lat: 12.9, lng: 77.5, speed: 0, ignition: 0, soc: 50, allowCharging: 1, allowDischarging: 1 }, state: 'requested', history: [{ state: 'requested', at: T0 }], expiresAt: T0 + 1,
    };
    const line = commandPoint(c, 'sent', T0 + 5);
    expectDeclared(line);
    expect(parts(line).measurement).toBe(COMMANDS.name);
    expect(parts(line).fields).toHaveLength(COMMANDS.fields.length);
    expectDeclared(pointOf({ kind: 'event', vehicleno: V, event: 'moved_while_immobilised', time: T0, value: 1, fields: { lat: 1, lng: 2, speed: 30, ignition: 1 }, tags: { command_type: 'movement' } }));
  });

  it('gives every field a description, and a unit where it has one', () => {
    for (const m of DERIVED_MEASUREMENTS) {
      for (const f of [...m.tags, ...m.fields]) expect(f.description.length, `${m.name}.${f.name}`).toBeGreaterThan(3);
      expect(new Set(m.fields.map((f) => f.name)).size).toBe(m.fields.length);
    }
  });
});
