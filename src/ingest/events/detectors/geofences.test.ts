import { describe, expect, it } from 'vitest';
import { can, eventTimes, gps, north, OPTS, route, runAt, runOrdered, sorted, T0, V, type Named } from '../events.testkit.js';
import { parseGeofences, type Geofence } from '../../geofences/geofence.js';
import { GeofenceLookup } from '../../geofences/lookup.js';
import { SpeedLimits } from '../../speedLimits/registry.js';
import { square } from '../../geofences/geofences.testkit.js';
import type { DerivedEvent } from '../derive.js';

/** Geofences: entered and exited after GEOFENCE_MIN_DWELL, crossings between fixes, the geofences that held at each fix's time. */

const SIDE = 500;
/** Depot A: a 500-m square whose south edge lies 995 m north of 12.9° (no fix of the routes falls on its border), from T0 on. */
const depotSouth = 12.9 + north(995);
const DEPOT = parseGeofences({ type: 'Feature', properties: { name: 'Depot A', kind: 'depot', speed_limit: 15 }, geometry: { type: 'Polygon', coordinates: square(depotSouth, 76.999, SIDE) } })[0]!;
const withGeofences = (geofences: Geofence[], extra: Partial<typeof OPTS> = {}) => ({ ...OPTS, geofences: { current: new GeofenceLookup(geofences) }, ...extra });
const OPTS_DEPOT = withGeofences([{ ...DEPOT, id: 1, from: T0 }]);
const of = (events: readonly DerivedEvent[]) => events.filter((e) => e.event.startsWith('geofence_'));

describe('geofences', () => {
  it('entered at the first fix inside once it stayed GEOFENCE_MIN_DWELL, exited at the first fix out once it stayed out as long', () => {
    expect(OPTS.geofenceMinDwellMs).toBe(60_000);
    // North at 36 km/h: into the square at 100 s (1 km), stop inside for 5 min, on north out of it.
    const { fixes } = route(T0, 12.9, [{ seconds: 120, kmh: 36, ign: 1 }, { seconds: 300, kmh: 0, ign: 1 }, { seconds: 120, kmh: 36, ign: 1 }]);
    const d = runOrdered(fixes, OPTS_DEPOT);
    const geo = of(d.events);
    expect(eventTimes({ ...d, events: geo })).toEqual([
      ['geofence_entered', T0 + 100_000],
      ['geofence_exited', T0 + 450_000],
    ]);
    expect(geo[0]).toMatchObject({ value: 1, fields: { geofence_id: 1 }, tags: { geofence: 'Depot A', geofence_kind: 'depot' } });
  });

  it('a vehicle standing on the border, its fixes in and out every 10 s, flips nothing', () => {
    const border = depotSouth;
    const fixes = Array.from({ length: 600 }, (_, j) => gps(T0 + j * 1000, border + north(Math.floor(j / 10) % 2 === 0 ? -8 : 8), 77.001, 0, 1));
    expect(of(runOrdered(fixes, OPTS_DEPOT).events)).toEqual([]);
  });

  it('a step through a geofence with neither fix inside is a crossing: entered and exited at the border, whatever the dwell', () => {
    // A fix a minute at 60 km/h (1 km a step): one just south of the square, the next past it.
    const fixes = [0, 1, 2, 3].map((k) => gps(T0 + k * 60_000, depotSouth + north(-200 + (k - 1) * 1_000), 77.001, 60, 1));
    const d = runOrdered(fixes, OPTS_DEPOT);
    const geo = of(d.events);
    expect(geo.map((e) => [e.event, e.fields.crossed])).toEqual([
      ['geofence_entered', 1],
      ['geofence_exited', 1],
    ]);
    // 200 m and 700 m along a 1-km step of 60 s.
    expect(geo[0]!.time).toBeCloseTo(T0 + 60_000 + 12_000, -2);
    expect(geo[1]!.time).toBeCloseTo(T0 + 60_000 + 42_000, -2);
  });

  it('judges each fix by the geofences that held at its time: one added mid-drive, one removed while inside', () => {
    const { fixes } = route(T0, 12.9, [{ seconds: 120, kmh: 36, ign: 1 }, { seconds: 600, kmh: 0, ign: 1 }]);
    // Added 3 minutes in (the vehicle has stood inside for 80 s): entered at its first fix then.
    const added = runOrdered(fixes, withGeofences([{ ...DEPOT, id: 1, from: T0 + 180_000 }]));
    expect(eventTimes({ ...added, events: of(added.events) })).toEqual([['geofence_entered', T0 + 180_000]]);
    // Removed 8 minutes in: the vehicle leaves it then, by its name.
    const removed = runOrdered(fixes, withGeofences([{ ...DEPOT, id: 1, from: T0, to: T0 + 480_000 }]));
    expect(of(removed.events).map((e) => [e.event, e.time, e.tags?.geofence])).toEqual([
      ['geofence_entered', T0 + 100_000, 'Depot A'],
      ['geofence_exited', T0 + 480_000, 'Depot A'],
    ]);
  });

  it('the same whatever the order within the window and however often records come', () => {
    const { fixes } = route(T0, 12.9, [{ seconds: 120, kmh: 36, ign: 1 }, { seconds: 300, kmh: 0, ign: 1 }, { seconds: 120, kmh: 36, ign: 1 }]);
    const ordered = of(runOrdered(fixes, OPTS_DEPOT).events);
    // In 20-s deliveries, each reversed, every fifth record twice.
    const deliveries: Array<[number, Named[]]> = [];
    for (let i = 0; i < fixes.length; i += 20) {
      const chunk = fixes.slice(i, i + 20).reverse();
      deliveries.push([fixes[Math.min(i + 19, fixes.length - 1)]!.time, [...chunk, ...chunk.filter((_, k) => k % 5 === 0)]]);
    }
    expect(of(runAt(deliveries, OPTS_DEPOT).events)).toEqual(ordered);
  });

  it('overspeed: a geofence’s speed limit applies inside it; the lowest with SPEED_LIMIT, or the geofence’s with SPEED_LIMIT_PREFER_LOWEST off', () => {
    // Through the depot at 30 km/h: 60 s inside a 15 km/h zone.
    const { fixes } = route(T0, 12.9 + north(500), [{ seconds: 180, kmh: 30, ign: 1 }, { seconds: 5, kmh: 0, ign: 0 }]);
    const over = (extra: Partial<typeof OPTS>) => runOrdered(fixes, withGeofences([{ ...DEPOT, id: 1, from: T0 }], extra)).events.filter((e) => e.event === 'overspeed_ended');
    expect(over({}).map((e) => [e.fields.limit, e.fields.duration_s])).toEqual([[15, 60]]);
    expect(over({ speedLimitKmh: 60 }).map((e) => e.fields.limit)).toEqual([15]);
    // A fleet limit under 30 everywhere, and the zone's 15 inside: one overspeed, whose limit changed; with
    // the zone's limit preferred over the fleet's 10, the same.
    expect(over({ speedLimitKmh: 20 }).map((e) => e.fields.duration_s)).toEqual([180]);
    expect(over({ speedLimitKmh: 10, speedLimitPreferLowest: false }).map((e) => e.fields.duration_s)).toEqual([180]);
  });

  it('trips, stops and charging sessions say which geofences they start and end in', () => {
    // Parked in the depot 10 min (charging), then a drive north out of it, and a stop there.
    const { fixes } = route(T0, 12.9 + north(1_200), [{ seconds: 600, kmh: 0, ign: 0 }, { seconds: 400, kmh: 36, ign: 1 }, { seconds: 400, kmh: 0, ign: 0 }]);
    const charge = Array.from({ length: 300 }, (_, j) => can(T0 + 60_000 + j * 1000, { load_status: 2, soc: 50, battery_voltage: 52, current: 20 }));
    const d = runOrdered(sorted([...fixes, ...charge, can(T0 + 400_000, { load_status: 0, soc: 60 })]), OPTS_DEPOT);
    expect(d.trips.map((t) => [t.startGeofence, t.endGeofence])).toEqual([['Depot A', undefined]]);
    // (The stop after the drive is still open: told once the vehicle moves on.)
    expect(d.stops.map((x) => [x.start, x.geofence])).toEqual([[T0, 'Depot A']]);
    expect(d.chargingSessions.map((x) => x.geofence)).toEqual(['Depot A']);
  });

  it('overspeed: a vehicle’s own limit replaces SPEED_LIMIT for it, from when it was set; the lowest with a geofence’s', () => {
    const { fixes } = route(T0, 12.9 + north(500), [{ seconds: 180, kmh: 30, ign: 1 }, { seconds: 5, kmh: 0, ign: 0 }]);
    const own = new SpeedLimits(new Map([[V, [[T0 + 120_000, 25]]]]));
    const over = (extra: Partial<typeof OPTS>) => runOrdered(fixes, withGeofences([{ ...DEPOT, id: 1, from: T0 }], { speedLimits: { current: own }, ...extra })).events.filter((e) => e.event === 'overspeed_ended');
    // In the depot (15 km/h) from 60 s to 120 s; the vehicle's own 25 from 120 s to the stop.
    expect(over({ speedLimitKmh: 100 }).map((e) => [e.time, e.fields.limit, e.fields.duration_s])).toEqual([[T0 + 180_000, 15, 120]]);
  });
});
