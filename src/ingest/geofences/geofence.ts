import { z } from 'zod';
import booleanPointInPolygon from '@turf/boolean-point-in-polygon';
import circle from '@turf/circle';
import type { Feature, MultiPolygon, Point, Polygon } from 'geojson';
import { haversineM } from '../../telemetry/geo.js';

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
  name: z.string().trim().min(1).max(200),
  kind: z.enum(GEOFENCE_KINDS).default('other'),
  speed_limit: z.number().positive().max(1_000).optional(),
  radius_m: z.number().positive().max(1_000_000).optional(),
});
const feature = z
  .object({ type: z.literal('Feature'), properties, geometry: z.discriminatedUnion('type', [polygon, multiPolygon, point]) })
  .refine((f) => f.geometry.type !== 'Point' || f.properties.radius_m !== undefined, { message: 'a Point geofence is a circle: give properties.radius_m', path: ['properties', 'radius_m'] })
  .refine((f) => f.geometry.type === 'Point' || f.properties.radius_m === undefined, { message: 'radius_m is for a Point geofence (a circle) only', path: ['properties', 'radius_m'] });
const collection = z.object({ type: z.literal('FeatureCollection'), features: z.array(feature) });

/**
 * Geofences from GeoJSON (a FeatureCollection or one Feature): each a `name` (unique within the input),
 * a `kind` (depot, charging, customer, restricted, other), an optional `speed_limit` (km/h), and a
 * Polygon, MultiPolygon, or Point with `radius_m`. Throws an Error naming what is wrong and where.
 */
export function parseGeofences(json: unknown): GeofenceInput[] {
  // By its own `type`, so that what is wrong is named in the member that is wrong (a union names neither).
  const isCollection = (json as { type?: unknown } | null)?.type === 'FeatureCollection';
  const parsed = (isCollection ? collection : feature).safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`geofences: ${issue.path.join('.') || 'the document'}: ${issue.message}`);
  }
  const features = 'features' in parsed.data ? parsed.data.features : [parsed.data];
  const names = new Set<string>();
  return features.map((f) => {
    if (names.has(f.properties.name)) throw new Error(`geofences: two features are named ${JSON.stringify(f.properties.name)}; a name is one geofence`);
    names.add(f.properties.name);
    return {
      name: f.properties.name,
      kind: f.properties.kind,
      ...(f.properties.speed_limit === undefined ? {} : { speedLimitKmh: f.properties.speed_limit }),
      geometry: f.geometry as Polygon | MultiPolygon | Point,
      ...(f.properties.radius_m === undefined ? {} : { radiusM: f.properties.radius_m }),
    };
  });
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
  if (g.geometry.type === 'Point') return circle(g.geometry.coordinates as [number, number], g.radiusM! / 1000, { steps: 64, units: 'kilometers' });
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
