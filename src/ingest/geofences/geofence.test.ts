import { describe, expect, it } from 'vitest';
import lineIntersect from '@turf/line-intersect';
import { lineString } from '@turf/helpers';
import { areaOf, contains, featureOf, GEOFENCE_LIMITS, GeofenceLimitError, holdsAt, parseGeofences, parseGeofencesYielding, type Geofence } from './geofence.js';
import { GeofenceLookup } from './lookup.js';
import { square, wavy, zigzag } from './geofences.testkit.js';

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

describe('names: what an InfluxDB tag and a terminal can hold', () => {
  const named = (name: string) => ({ ...depot, properties: { name, kind: 'depot' } });
  it.each([
    ['Depot North\ngps', 'control characters (U+000A at 11)'],
    ["Depot\rA", "control characters (U+000D at 5)"],
    ['Depot \u001b[2J', 'control characters (U+001B at 6)'],
    ['Depot\u007f', 'control characters (U+007F'],
    ['Depot\u0085', 'control characters (U+0085'],
    ['Depot \u202eA', 'bidirectional controls (U+202E at 6)'],
    ['\u2067Depot', 'bidirectional controls (U+2067'],
    ['Depot\u200f', 'bidirectional controls (U+200F'],
    ['Depot A\\', 'must not end with a backslash'],
    ['Depot\\,A', 'backslash before a comma, space or equals sign'],
    ['Depot\\ A', 'backslash before a comma, space or equals sign'],
    ['Depot\\=A', 'backslash before a comma, space or equals sign'],
  ])('refuses the name %j, naming the field and why', (name, why) => {
    expect(() => parseGeofences(named(name))).toThrow(`geofences: properties.name: must`);
    expect(() => parseGeofences(named(name))).toThrow(why);
    expect(() => parseGeofences({ type: 'FeatureCollection', features: [depot, named(name)] })).toThrow('features.1.properties.name');
  });

  it.each(['Depot A (north), gate=2', 'C:\\yards\\north', 'Dépôt Nord — 北', 'شارع', '1'])('takes the name %j', (name) => {
    expect(parseGeofences(named(name))[0]!.name).toBe(name);
  });
});

describe('shapes', () => {
  const polygon = (coordinates: unknown, name = 'Zone') => ({ type: 'Feature', properties: { name }, geometry: { type: 'Polygon', coordinates } });
  const refusal = (json: unknown): Error => {
    try {
      parseGeofences(json);
    } catch (err) {
      return err as Error;
    }
    throw new Error('taken');
  };

  it(`takes ${GEOFENCE_LIMITS.vertices} vertices a geofence, refuses more (413's GeofenceLimitError), a MultiPolygon's together`, () => {
    expect(parseGeofences(polygon(wavy(12.9, 77.5, 5_000, 10_000)))).toHaveLength(1);
    const over = refusal({ type: 'FeatureCollection', features: [depot, polygon(wavy(12.9, 77.5, 5_000, 10_001), 'City')] });
    expect(over).toBeInstanceOf(GeofenceLimitError);
    expect(over).toMatchObject({ code: 'too_many_vertices', message: expect.stringContaining('features.1.geometry ("City"): 10001 vertices, more than the 10000') });
    const multi = { type: 'Feature', properties: { name: 'Parts' }, geometry: { type: 'MultiPolygon', coordinates: [wavy(12.9, 77.5, 5_000, 6_000), wavy(13.9, 77.5, 5_000, 4_001)] } };
    expect(refusal(multi)).toMatchObject({ code: 'too_many_vertices' });
  });

  it('takes a document of as many geofences as the limit allows, refuses more', () => {
    const features = (n: number) => ({ type: 'FeatureCollection', features: Array.from({ length: n }, (_, i) => ({ ...depot, properties: { name: `z${i}` } })) });
    expect(parseGeofences(features(3), { ...GEOFENCE_LIMITS, perDocument: 3 })).toHaveLength(3);
    expect(() => parseGeofences(features(4), { ...GEOFENCE_LIMITS, perDocument: 3 })).toThrow('4 features, more than the 3 a document may hold');
  });

  it('refuses an edge across the antimeridian, saying to split the shape there; takes it split into a MultiPolygon', () => {
    const across = polygon([[[179, -17], [-179, -17], [-179, -16], [179, -16], [179, -17]]], 'Fiji');
    const err = refusal(across);
    expect(err.message).toBe(
      'geofences: geometry.coordinates.0.1 ("Fiji"): the edge from [179, -17] to [-179, -17] spans more than 180° of longitude: a shape across the antimeridian (±180°) is not read as drawn; split it at ±180° into a MultiPolygon, a polygon each side',
    );
    const split = { type: 'Feature', properties: { name: 'Fiji' }, geometry: { type: 'MultiPolygon', coordinates: [[[[179, -17], [180, -17], [180, -16], [179, -16], [179, -17]]], [[[-180, -17], [-179, -17], [-179, -16], [-180, -16], [-180, -17]]]] } };
    const [g] = parseGeofences(split);
    const at = { ...g!, id: 1, from: 0 };
    // Read as drawn: 179.5° and -179.5° inside, 0° (the rest of the world) not.
    expect([contains(at, -16.5, 179.5), contains(at, -16.5, -179.5), contains(at, -16.5, 0), contains(at, -16.5, 178.5)]).toEqual([true, true, false, false]);
  });

  it('refuses a circle reaching across the antimeridian or over a pole; takes one just short of it', () => {
    const circle = (lng: number, lat: number, radius_m: number) => ({ type: 'Feature', properties: { name: 'Port', radius_m }, geometry: { type: 'Point', coordinates: [lng, lat] } });
    expect(refusal(circle(179.99, 10, 5_000)).message).toBe(
      'geofences: properties.radius_m ("Port"): the circle of 5000 m around [179.99, 10] reaches across the antimeridian (±180°) or over a pole: give the area as a MultiPolygon split at ±180°',
    );
    expect(refusal(circle(-179.99, 10, 5_000)).message).toContain('reaches across the antimeridian');
    expect(refusal(circle(0, 89.99, 5_000)).message).toContain('or over a pole');
    const [g] = parseGeofences(circle(179.9, 10, 5_000));
    const sides = areaOf({ ...g!, id: 1, from: 0 }).geometry.coordinates[0] as number[][];
    expect(Math.max(...sides.map((p) => p[0]!))).toBeLessThan(180);
  });

  it.each([
    ['a bow-tie', [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]], 'geometry.coordinates.0 ("Zone"): the ring crosses itself at [0.5, 0.5]'],
    ['a figure of eight through one vertex', [[[0, 0], [1, 1], [2, 0], [2, 2], [1, 1], [0, 2], [0, 0]]], 'geometry.coordinates.0 ("Zone"): the ring crosses itself at [1, 1]'],
    ['a hole crossing itself', [square(12.9, 77.5, 1_000)[0], [[77.501, 12.901], [77.503, 12.903], [77.503, 12.901], [77.501, 12.903], [77.501, 12.901]]], 'geometry.coordinates.1 ("Zone"): the ring crosses itself at [77.502, 12.902]'],
    ['a ring of two distinct positions', [[[0, 0], [1, 1], [0, 0], [1, 1], [0, 0]]], 'geometry.coordinates.0 ("Zone"): the ring has fewer than 3 distinct positions'],
  ])('refuses %s, naming the feature and where', (_, coordinates, message) => {
    expect(refusal(polygon(coordinates)).message).toContain(message);
  });

  it('names the member of a collection and the polygon of a MultiPolygon where a ring crosses itself', () => {
    const bowtie = [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]];
    const multi = { type: 'Feature', properties: { name: 'Parts' }, geometry: { type: 'MultiPolygon', coordinates: [square(12.9, 77.5, 500), bowtie] } };
    expect(refusal({ type: 'FeatureCollection', features: [depot, multi] }).message).toBe(
      'geofences: features.1.geometry.coordinates.1.0 ("Parts"): the ring crosses itself at [0.5, 0.5]: a geofence\'s border must not cross or touch itself (draw one loop, or a MultiPolygon of several)',
    );
  });

  it('takes a ring with a position repeated in a row, and a hole touching its polygon’s border', () => {
    expect(parseGeofences(polygon([[[0, 0], [1, 0], [1, 0], [1, 1], [0, 1], [0, 0], [0, 0]]]))).toHaveLength(1);
    expect(parseGeofences(polygon([[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]], [[0, 2], [1, 1], [1, 3], [0, 2]]]))).toHaveLength(1);
  });

  it('checks a large document giving the event loop turns (the admin listener shares the process with the push port)', async () => {
    const features = Array.from({ length: 6 }, (_, i) => polygon(i % 2 === 0 ? wavy(12.9, 77.5, 5_000, 10_000) : zigzag(12.9, 77.5, 3_000), `z${i}`));
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    try {
      expect(await parseGeofencesYielding({ type: 'FeatureCollection', features }, GEOFENCE_LIMITS, 0)).toHaveLength(6);
    } finally {
      clearInterval(ticking);
    }
    expect(turns).toBeGreaterThanOrEqual(3);
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

  it('a crossing is found among the edges near the step as it would be among all of them', () => {
    const g = at({ name: 'Wavy', kind: 'other', geometry: { type: 'Polygon', coordinates: wavy(12.9, 77.5, 2_000, 1_000, 40) } }, 1);
    const lookup = new GeofenceLookup([g]);
    const area = areaOf(g);
    // By every edge (what lookup.ts did before it looked at the near ones only).
    const reference = (a: { time: number; lat: number; lng: number }, b: typeof a) => {
      if (!holdsAt(g, a.time) || contains(g, a.lat, a.lng) || contains(g, b.lat, b.lng)) return [];
      const points = lineIntersect(lineString([[a.lng, a.lat], [b.lng, b.lat]]), area).features;
      return points.length < 2 ? [] : [points.length];
    };
    let seed = 7;
    const rnd = () => ((seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647);
    let crossings = 0;
    for (let k = 0; k < 2_000; k++) {
      const a = { time: 0, lat: 12.9 + (rnd() - 0.5) * 0.05, lng: 77.5 + (rnd() - 0.5) * 0.05 };
      const b = { time: 60_000, lat: a.lat + (rnd() - 0.5) * 0.01, lng: a.lng + (rnd() - 0.5) * 0.01 };
      const found = lookup.crossed(a, b);
      expect(found.length, JSON.stringify([a, b])).toBe(reference(a, b).length);
      crossings += found.length;
    }
    expect(crossings).toBeGreaterThan(50);
  });

  it(`a fix near a geofence of ${GEOFENCE_LIMITS.vertices} vertices (the cap) costs well under a millisecond`, () => {
    // A wavy area 10 km across; a vehicle at 36 km/h, a fix a second, asking what the detector asks
    // (the step's crossings, then the geofences holding the fix): in its box outside it, along its border, inside.
    const lookup = new GeofenceLookup([at({ name: 'City', kind: 'other', geometry: { type: 'Polygon', coordinates: wavy(12.9, 77.5, 5_000, GEOFENCE_LIMITS.vertices) } }, 1)]);
    const north = (m: number) => m / 111_195.08;
    const drive = (lat: number, lng: number, n: number) => {
      let prev = { time: 0, lat, lng };
      const t = process.hrtime.bigint();
      for (let k = 1; k <= n; k++) {
        const fix = { time: k * 1000, lat: lat + north(10 * k), lng };
        lookup.crossed(prev, fix);
        lookup.containing(fix.lat, fix.lng, fix.time);
        prev = fix;
      }
      return Number(process.hrtime.bigint() - t) / n / 1000;
    };
    const dLng = north(5_000) / Math.cos((12.9 * Math.PI) / 180);
    drive(12.9, 77.5, 200);
    const us = [drive(12.9 - north(6_400), 77.5 - 0.9 * dLng, 500), drive(12.9 - north(300), 77.5 + 1.3 * dLng, 500), drive(12.9, 77.5, 500)];
    // Each about 20-100 µs (the README's bench); by every edge, the first was ~16 ms.
    for (const u of us) expect(u).toBeLessThan(1_000);
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
