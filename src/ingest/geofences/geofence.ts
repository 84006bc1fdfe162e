import { z } from 'zod';
import booleanPointInPolygon from '@turf/boolean-point-in-polygon';
import circle from '@turf/circle';
import { featureCollection, lineString } from '@turf/helpers';
import lineIntersect from '@turf/line-intersect';
import type { Feature, LineString, MultiPolygon, Point, Polygon, Position } from 'geojson';
import { haversineM } from '../../telemetry/geo.js';
import { tagValueFaults } from '../../telemetry/lineProtocol.js';

/**
 * A geofence: a named area of the fleet's (a depot, a charging point, a customer, a restricted zone) as
 * GeoJSON, a polygon (holes and multi-polygons too) or a circle (a point with `radius_m`), with an
 * optional speed limit. Each has a frozen numeric id, and the span of record time it holds for: a record
 * is judged by the geofences that held at its own time, so one added or removed while records of before
 * are still arriving judges those as it would have then.
 */

export const GEOFENCE_KINDS = ['depot', 'charging', 'customer', 'restricted', 'other'] as const;
export type GeofenceKind = (typeof GEOFENCE_KINDS)[number];

export interface Geofence {
  /** Frozen: a vehicle's state names the geofences it is in by it. */
  id: number;
  name: string;
  kind: GeofenceKind;
  /** km/h; the lowest of the limits that apply wins (overspeed). */
  speedLimitKmh?: number;
  geometry: Polygon | MultiPolygon | Point;
  /** A circle's radius (with a Point geometry). */
  radiusM?: number;
  /** Record time (ms) from which it holds, and to which (removed; absent: holds on). */
  from: number;
  to?: number;
}

/** A geofence as given (a GeoJSON Feature's properties and geometry), before the registry numbers it. */
export type GeofenceInput = Omit<Geofence, 'id' | 'from' | 'to'>;

/**
 * What one geofence, one document and the registry may hold. Each vertex costs the fixes in the
 * geofence's box (a point is tested against every edge: 1 to 3 µs of CPU a fix per 1,000 vertices, see
 * the README's caps), and every worker holds every geofence in memory; these keep a fix's cost, the
 * registry's size in Redis and a worker's memory bounded whatever is added.
 */
export interface GeofenceLimits {
  /** Vertices of one geofence: its rings' positions less each ring's closing one (a circle: CIRCLE_SIDES). */
  vertices: number;
  /** Geofences in one document (a POST's body, a file). */
  perDocument: number;
  /** Geofences holding at once in the registry. */
  live: number;
  /** Vertices of the geofences holding at once. */
  liveVertices: number;
}
export const GEOFENCE_LIMITS: Readonly<GeofenceLimits> = Object.freeze({ vertices: 10_000, perDocument: 10_000, live: 10_000, liveVertices: 1_000_000 });

/** A circle's sides as a polygon (its bounding box, the crossings of a step). */
export const CIRCLE_SIDES = 64;

/** A document or a change over one of GeofenceLimits (413 on the admin API). */
export class GeofenceLimitError extends Error {
  override readonly name = 'GeofenceLimitError';
  constructor(
    readonly code: 'too_many_geofences' | 'too_many_vertices',
    message: string,
  ) {
    super(message);
  }
}

/** C0, DEL and C1 control characters (`tagValueFaults` refuses them; this finds which, and where, for the message). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** Unicode's bidirectional controls (marks, embeddings, overrides, isolates): they reorder the text shown around them. */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const codePoint = (c: string): string => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Why a geofence's name cannot be one, or undefined. A name is the `geofence` tag of the vehicle
 * events, trips and stops in InfluxDB, so it passes the rule every tag does (`tagValueFaults`: no
 * control characters, which would end the line and start another, into any measurement; no backslash
 * line protocol cannot carry, which would break every line of the geofence); and, as it is printed on
 * terminals and dashboards, no bidirectional controls.
 */
export function nameFault(name: string): string | undefined {
  const fault = tagValueFaults(name);
  if (fault !== undefined) {
    const control = CONTROL.exec(name);
    return control ? `${fault} (${codePoint(control[0])} at ${control.index}): a name is written as an InfluxDB tag and printed on terminals` : fault;
  }
  const bidi = BIDI.exec(name);
  if (bidi) return `must not contain Unicode bidirectional controls (${codePoint(bidi[0])} at ${bidi.index}): they reorder how names are shown`;
  return undefined;
}

const lng = z.number().min(-180).max(180);
const lat = z.number().min(-90).max(90);
const position = z.tuple([lng, lat]).rest(z.number());
const ring = z
  .array(position)
  .min(4, 'a ring has at least 4 positions')
  .refine((r) => r[0]![0] === r.at(-1)![0] && r[0]![1] === r.at(-1)![1], 'a ring ends where it starts');
const polygon = z.object({ type: z.literal('Polygon'), coordinates: z.array(ring).min(1) });
const multiPolygon = z.object({ type: z.literal('MultiPolygon'), coordinates: z.array(z.array(ring).min(1)).min(1) });
const point = z.object({ type: z.literal('Point'), coordinates: position });
const properties = z.object({
  name: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .superRefine((name, ctx) => {
      const why = nameFault(name);
      if (why !== undefined) ctx.addIssue({ code: 'custom', message: why });
    }),
  kind: z.enum(GEOFENCE_KINDS).default('other'),
  speed_limit: z.number().positive().max(1_000).optional(),
  radius_m: z.number().positive().max(1_000_000).optional(),
});
const feature = z
  .object({ type: z.literal('Feature'), properties, geometry: z.discriminatedUnion('type', [polygon, multiPolygon, point]) })
  .refine((f) => f.geometry.type !== 'Point' || f.properties.radius_m !== undefined, { message: 'a Point geofence is a circle: give properties.radius_m', path: ['properties', 'radius_m'] })
  .refine((f) => f.geometry.type === 'Point' || f.properties.radius_m === undefined, { message: 'radius_m is for a Point geofence (a circle) only', path: ['properties', 'radius_m'] });
const collection = z.object({ type: z.literal('FeatureCollection'), features: z.array(feature) });

/** A geometry's vertices: each ring's positions less its closing one; a circle's sides. */
export function verticesOf(geometry: Geofence['geometry']): number {
  if (geometry.type === 'Point') return CIRCLE_SIDES;
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  let n = 0;
  for (const rings of polygons) for (const r of rings) n += r.length - 1;
  return n;
}

const at = (p: Position): string => `[${+p[0]!.toFixed(7)}, ${+p[1]!.toFixed(7)}]`;

/** The ring's positions without repeats in a row nor its closing ones: its vertices, in order. */
function verticesOfRing(r: readonly Position[]): Position[] {
  const out: Position[] = [];
  for (const p of r) {
    const last = out.at(-1);
    if (last === undefined || last[0] !== p[0] || last[1] !== p[1]) out.push(p);
  }
  while (out.length > 1 && out.at(-1)![0] === out[0]![0] && out.at(-1)![1] === out[0]![1]) out.pop();
  return out;
}

type ShapeFault = { path: string; message: string };

/**
 * What is wrong with a polygon's ring, or undefined: fewer than 3 distinct positions; an edge spanning
 * more than 180° of longitude (a shape across the antimeridian, which read as drawn would cover the
 * rest of the world instead); a ring that crosses or touches itself (its inside is not what was drawn).
 * Crossings of its edges are found by @turf/line-intersect (a sweep line: ~25 ms for an ordinary ring of
 * 10,000 vertices, where @turf/kinks's test of every pair takes over a second); a vertex passed twice
 * (a ring pinched to a point, which edges meeting at a shared vertex don't tell), by its positions.
 */
function ringFault(r: readonly Position[], path: string): ShapeFault | undefined {
  const vertices = verticesOfRing(r);
  const keys = vertices.map((p) => `${p[0]},${p[1]}`);
  const distinct = new Set(keys);
  if (distinct.size < 3) return { path, message: 'the ring has fewer than 3 distinct positions: it holds no area' };
  for (let i = 1; i < r.length; i++) {
    if (Math.abs(r[i]![0]! - r[i - 1]![0]!) > 180) {
      return {
        path: `${path}.${i}`,
        message: `the edge from ${at(r[i - 1]!)} to ${at(r[i]!)} spans more than 180° of longitude: a shape across the antimeridian (±180°) is not read as drawn; split it at ±180° into a MultiPolygon, a polygon each side`,
      };
    }
  }
  let x: Position | undefined;
  if (distinct.size < keys.length) {
    const seen = new Set<string>();
    x = vertices.find((_, i) => seen.size === seen.add(keys[i]!).size);
  }
  x ??= lineIntersect(lineString(r as Position[]), featureCollection<LineString>([]), { ignoreSelfIntersections: false }).features[0]?.geometry.coordinates;
  if (x !== undefined) return { path, message: `the ring crosses itself at ${at(x)}: a geofence's border must not cross or touch itself (draw one loop, or a MultiPolygon of several)` };
  return undefined;
}

/** The circle as CIRCLE_SIDES sides, or what keeps it from being one (it reaches across ±180° or over a pole). */
function circleFault(center: Position, radiusM: number): ShapeFault | undefined {
  const sides = circle(center as [number, number], radiusM / 1000, { steps: CIRCLE_SIDES, units: 'kilometers' }).geometry.coordinates[0]!;
  const across = sides.some((p, i) => Math.abs(p[0]!) > 180 || (i > 0 && Math.abs(p[0]! - sides[i - 1]![0]!) > 180));
  if (!across) return undefined;
  return {
    path: 'properties.radius_m',
    message: `the circle of ${radiusM} m around ${at(center)} reaches across the antimeridian (±180°) or over a pole: give the area as a MultiPolygon split at ±180°`,
  };
}

/**
 * Geofences from GeoJSON (a FeatureCollection or one Feature): each a `name` (unique within the input),
 * a `kind` (depot, charging, customer, restricted, other), an optional `speed_limit` (km/h), and a
 * Polygon, MultiPolygon, or Point with `radius_m`. Throws an Error naming what is wrong and where (a
 * GeofenceLimitError when over `limits`).
 */
export function parseGeofences(json: unknown, limits: GeofenceLimits = GEOFENCE_LIMITS): GeofenceInput[] {
  const steps = reading(json, limits);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * `parseGeofences`, giving the event loop a turn every `sliceMs` between geofences: a document of
 * many large ones takes a while to check, and the admin listener shares the process with the push port.
 */
export async function parseGeofencesYielding(json: unknown, limits: GeofenceLimits = GEOFENCE_LIMITS, sliceMs = 10): Promise<GeofenceInput[]> {
  const steps = reading(json, limits);
  let since = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - since >= sliceMs) {
      await new Promise((resolve) => setImmediate(resolve));
      since = performance.now();
    }
  }
}

/** The reading of `parseGeofences`, a geofence a step. */
function* reading(json: unknown, limits: GeofenceLimits): Generator<void, GeofenceInput[], void> {
  // By its own `type`, so that what is wrong is named in the member that is wrong (a union names neither).
  const isCollection = (json as { type?: unknown } | null)?.type === 'FeatureCollection';
  const count = isCollection ? (json as { features?: unknown }).features : undefined;
  if (Array.isArray(count) && count.length > limits.perDocument) {
    throw new GeofenceLimitError('too_many_geofences', `geofences: ${count.length} features, more than the ${limits.perDocument} a document may hold; send them in parts`);
  }
  const parsed = (isCollection ? collection : feature).safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`geofences: ${issue.path.join('.') || 'the document'}: ${issue.message}`);
  }
  const features = 'features' in parsed.data ? parsed.data.features : [parsed.data];
  const names = new Set<string>();
  const out: GeofenceInput[] = [];
  for (const [i, f] of features.entries()) {
    const name = f.properties.name;
    if (names.has(name)) throw new Error(`geofences: two features are named ${JSON.stringify(name)}; a name is one geofence`);
    names.add(name);
    const where = (path: string) => [isCollection ? `features.${i}` : '', path].filter((s) => s !== '').join('.') || 'the feature';
    const geometry = f.geometry as Polygon | MultiPolygon | Point;
    const vertices = verticesOf(geometry);
    if (vertices > limits.vertices) {
      throw new GeofenceLimitError(
        'too_many_vertices',
        `geofences: ${where('geometry')} (${JSON.stringify(name)}): ${vertices} vertices, more than the ${limits.vertices} a geofence may have (each costs every fix near it); simplify it (mapshaper -simplify, ST_Simplify)`,
      );
    }
    let fault: ShapeFault | undefined;
    if (geometry.type === 'Point') fault = circleFault(geometry.coordinates, f.properties.radius_m!);
    else {
      const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
      const prefix = (p: number) => (geometry.type === 'Polygon' ? 'geometry.coordinates' : `geometry.coordinates.${p}`);
      for (const [p, rings] of polygons.entries()) {
        for (const [k, r] of rings.entries()) if ((fault = ringFault(r, `${prefix(p)}.${k}`))) break;
        if (fault) break;
      }
    }
    if (fault) throw new Error(`geofences: ${where(fault.path)} (${JSON.stringify(name)}): ${fault.message}`);
    out.push({
      name,
      kind: f.properties.kind,
      ...(f.properties.speed_limit === undefined ? {} : { speedLimitKmh: f.properties.speed_limit }),
      geometry,
      ...(f.properties.radius_m === undefined ? {} : { radiusM: f.properties.radius_m }),
    });
    yield;
  }
  return out;
}

/** A geofence as a GeoJSON Feature (what `list` shows, and what `parseGeofences` reads back). */
export function featureOf(g: Geofence): Feature {
  return {
    type: 'Feature',
    id: g.id,
    properties: { name: g.name, kind: g.kind, ...(g.speedLimitKmh === undefined ? {} : { speed_limit: g.speedLimitKmh }), ...(g.radiusM === undefined ? {} : { radius_m: g.radiusM }), from: g.from, ...(g.to === undefined ? {} : { to: g.to }) },
    geometry: g.geometry,
  };
}

/** Whether `g` holds at record time `t`. */
export const holdsAt = (g: Geofence, t: number): boolean => g.from <= t && (g.to === undefined || t < g.to);

/** The geofence's area as a polygon: a circle as 64 sides (for its bounding box and the crossings of a step). */
export function areaOf(g: Geofence): Feature<Polygon | MultiPolygon> {
  if (g.geometry.type === 'Point') return circle(g.geometry.coordinates as [number, number], g.radiusM! / 1000, { steps: CIRCLE_SIDES, units: 'kilometers' });
  return { type: 'Feature', properties: {}, geometry: g.geometry };
}

/** Whether the point lies inside (a circle: within its radius, exactly; a polygon: inside or on its border, holes excluded). */
export function contains(g: Geofence, lat: number, lng: number): boolean {
  if (g.geometry.type === 'Point') {
    const [clng, clat] = g.geometry.coordinates as [number, number];
    return haversineM(clat, clng, lat, lng) <= g.radiusM!;
  }
  return booleanPointInPolygon([lng, lat], g.geometry);
}
