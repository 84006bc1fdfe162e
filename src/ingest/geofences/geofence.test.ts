import { describe, expect, it } from 'vitest';
import { featureOf, parseGeofences, type Geofence } from './geofence.js';
import { GeofenceLookup } from './lookup.js';
import { square } from './geofences.testkit.js';

const depot = { type: 'Feature', properties: { name: 'Depot A', kind: 'depot', speed_limit: 15 }, geometry: { type: 'Polygon', coordinates: square(12.9, 77.5, 500) } };
const charger = { type: 'Feature', properties: { name: 'Charger 1', kind: 'charging', radius_m: 50 }, geometry: { type: 'Point', coordinates: [77.6, 12.95] } };

describe('geofences as GeoJSON', () => {
  it('reads polygons and circles with their name, kind and speed limit, and writes them back', () => {
    const read = parseGeofences({ type: 'FeatureCollection', features: [depot, charger] });
    expect(read).toEqual([
      { name: 'Depot A', kind: 'depot', speedLimitKmh: 15, geometry: depot.geometry },
      { name: 'Charger 1', kind: 'charging', geometry: charger.geometry, radiusM: 50 },
    ]);
    const g: Geofence = { ...read[0]!, id: 7, from: 1 };
    expect(parseGeofences(featureOf(g))).toEqual([read[0]]);
  });

  it.each([
    [{ type: 'FeatureCollection', features: [{ ...charger, properties: { name: 'x' } }] }, 'features.0.properties.radius_m: a Point geofence is a circle: give properties.radius_m'],
    [{ type: 'FeatureCollection', features: [depot, depot] }, 'two features are named "Depot A"'],
    [{ ...depot, geometry: { type: 'Polygon', coordinates: [[[77.5, 12.9], [77.6, 12.9], [77.6, 13]]] } }, 'a ring has at least 4 positions'],
    [{ ...depot, geometry: { type: 'LineString', coordinates: [[77.5, 12.9], [77.6, 12.9]] } }, 'geometry.type'],
    [{ ...depot, properties: { name: '', kind: 'depot' } }, 'properties.name'],
    [{ ...depot, properties: { name: 'x', kind: 'garage' } }, 'properties.kind'],
    [{ ...depot, geometry: { type: 'Polygon', coordinates: [[[77.5, 12.9], [77.6, 12.9], [77.6, 13], [200, 13], [77.5, 12.9]]] } }, 'geometry.coordinates'],
  ])('refuses %j, naming what is wrong', (json, message) => {
    expect(() => parseGeofences(json)).toThrow(message);
  });
});

describe('the lookup', () => {
  const at = (input: ReturnType<typeof parseGeofences>[number], id: number, from = 0, to?: number): Geofence => ({ ...input, id, from, ...(to === undefined ? {} : { to }) });
  const [d, c] = parseGeofences({ type: 'FeatureCollection', features: [depot, charger] });

  it('finds the geofences holding a point at a time: inside a polygon, within a circle’s radius, not before it was added nor after it was removed', () => {
    const lookup = new GeofenceLookup([at(d!, 1, 1_000, 5_000), at(c!, 2)]);
    const inDepot = [12.9 + 250 / 111_195, 77.5 + 0.002];
    expect(lookup.containing(inDepot[0]!, inDepot[1]!, 2_000).map((g) => g.name)).toEqual(['Depot A']);
    expect(lookup.containing(inDepot[0]!, inDepot[1]!, 999)).toEqual([]);
    expect(lookup.containing(inDepot[0]!, inDepot[1]!, 5_000)).toEqual([]);
    expect(lookup.containing(12.9 - 0.001, 77.5, 2_000)).toEqual([]);
    // 49 m and 51 m from the charger's centre.
    expect(lookup.containing(12.95 + 49 / 111_195.08, 77.6, 0).map((g) => g.name)).toEqual(['Charger 1']);
    expect(lookup.containing(12.95 + 51 / 111_195.08, 77.6, 0)).toEqual([]);
    expect(lookup.speedLimitAt(inDepot[0]!, inDepot[1]!, 2_000)).toBe(15);
  });

  it('a step across a geofence with neither end inside is a crossing, timed where the step meets its border', () => {
    const lookup = new GeofenceLookup([at(d!, 1)]);
    const mid = 12.9 + 250 / 111_195.08;
    const dLng = 500 / 111_195.08 / Math.cos((12.9 * Math.PI) / 180);
    // West to east through the square's middle: 1 km in 100 s, the square from 250 m to 750 m along.
    const [x] = lookup.crossed({ time: 0, lat: mid, lng: 77.5 - dLng / 2 }, { time: 100_000, lat: mid, lng: 77.5 + 1.5 * dLng });
    expect(x!.geofence.name).toBe('Depot A');
    expect(x!.entered).toBeCloseTo(25_000, -2);
    expect(x!.exited).toBeCloseTo(75_000, -2);
    // Passing beside it: none.
    expect(lookup.crossed({ time: 0, lat: 12.89, lng: 77.49 }, { time: 100_000, lat: 12.89, lng: 77.51 })).toEqual([]);
  });

  it('answers as fast with 10,000 geofences as with 10 (an R-tree finds the few near)', () => {
    const many = (n: number) =>
      new GeofenceLookup(
        Array.from({ length: n }, (_, i) => at({ name: `g${i}`, kind: 'customer', geometry: { type: 'Polygon', coordinates: square(8 + (i % 100) * 0.1, 70 + Math.floor(i / 100) * 0.1, 200) } }, i + 1)),
      );
    const time = (lookup: GeofenceLookup) => {
      const t = process.hrtime.bigint();
      for (let k = 0; k < 20_000; k++) lookup.containing(8 + (k % 1000) * 0.001, 70 + (k % 997) * 0.001, k);
      return Number(process.hrtime.bigint() - t) / 20_000;
    };
    const small = many(10);
    const large = many(10_000);
    time(small);
    time(large);
    const [a, b] = [Math.min(time(small), time(small)), Math.min(time(large), time(large))];
    // Per question, ns: a few times at most, not a thousand.
    expect(b).toBeLessThan(Math.max(8 * a, 20_000));
  });
});
