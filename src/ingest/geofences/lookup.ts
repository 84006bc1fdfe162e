import RBush from 'rbush';
import bbox from '@turf/bbox';
import lineIntersect from '@turf/line-intersect';
import { lineString, multiLineString } from '@turf/helpers';
import type { Feature, MultiPolygon, Polygon, Position } from 'geojson';
import { haversineM } from '../../telemetry/geo.js';
import { areaOf, contains, holdsAt, type Geofence } from './geofence.js';

/**
 * The fleet's geofences, indexed for the questions a vehicle's fixes ask: which geofences hold a point
 * at a time, and which a step between two fixes passes through. An R-tree (rbush) of their bounding
 * boxes finds the few a point or a step can touch, so 10,000 geofences cost about what 10 do; only those
 * are tested exactly (a polygon with turf, a circle by its radius). A step is tested for crossings only
 * against the edges whose boxes meet its own, so that a large geofence costs a step near it one pass
 * over its edges (~20 µs at 10,000), not a sweep of them all (~8 ms).
 */
export interface Crossing {
  geofence: Geofence;
  /** Record times (ms) at which the step enters and leaves it, by where along the step its border lies. */
  entered: number;
  exited: number;
}

interface Item {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
  geofence: Geofence;
  area: Feature<Polygon | MultiPolygon>;
}

const NONE: readonly Geofence[] = Object.freeze([]);

export class GeofenceLookup {
  private readonly tree = new RBush<Item>();
  private readonly byId = new Map<number, Geofence>();
  /** The last point asked about, and its answer (the detectors of one fix ask alike). */
  private lastLat = NaN;
  private lastLng = NaN;
  private lastTime = NaN;
  private last: readonly Geofence[] = NONE;

  constructor(
    geofences: readonly Geofence[],
    /** The registry's version these are (a watch replaces the lookup when it moves on). */
    readonly version = 0,
  ) {
    const items = geofences.map((g): Item => {
      const area = areaOf(g);
      const [minX, minY, maxX, maxY] = bbox(area);
      return { minX: minX!, minY: minY!, maxX: maxX!, maxY: maxY!, geofence: g, area };
    });
    this.tree.load(items);
    for (const g of geofences) this.byId.set(g.id, g);
  }

  get size(): number {
    return this.byId.size;
  }

  /** A geofence by id, whether it holds now or held before (a vehicle inside one that was removed leaves it by name). */
  geofence(id: number): Geofence | undefined {
    return this.byId.get(id);
  }

  /** The geofences holding at `time` that contain the point, by id. */
  containing(lat: number, lng: number, time: number): readonly Geofence[] {
    if (lat === this.lastLat && lng === this.lastLng && time === this.lastTime) return this.last;
    let found: Geofence[] | undefined;
    for (const item of this.tree.search({ minX: lng, minY: lat, maxX: lng, maxY: lat })) {
      const g = item.geofence;
      if (holdsAt(g, time) && contains(g, lat, lng)) (found ??= []).push(g);
    }
    const out = found === undefined ? NONE : found.sort((a, b) => a.id - b.id);
    this.lastLat = lat;
    this.lastLng = lng;
    this.lastTime = time;
    this.last = out;
    return out;
  }

  /** The lowest speed limit of the geofences holding the point at `time` (undefined: none has one). */
  speedLimitAt(lat: number, lng: number, time: number): number | undefined {
    let limit: number | undefined;
    for (const g of this.containing(lat, lng, time)) if (g.speedLimitKmh !== undefined && !(limit !== undefined && limit <= g.speedLimitKmh)) limit = g.speedLimitKmh;
    return limit;
  }

  /**
   * The geofences a step from fix `a` to fix `b` passes through without either fix inside (a vehicle
   * crossing a small geofence between two sparse fixes), holding at both times; with when it entered and
   * left, at the step's crossings of the border (time shared out by distance along the step).
   */
  crossed(a: { time: number; lat: number; lng: number }, b: { time: number; lat: number; lng: number }): Crossing[] {
    const box = { minX: Math.min(a.lng, b.lng), minY: Math.min(a.lat, b.lat), maxX: Math.max(a.lng, b.lng), maxY: Math.max(a.lat, b.lat) };
    const out: Crossing[] = [];
    const length = haversineM(a.lat, a.lng, b.lat, b.lng);
    if (length === 0) return out;
    let line: ReturnType<typeof lineString> | undefined;
    // Which hold either fix: the detector asked of `a` at the fix before and asks of `b` next, so these
    // are answered once (the last point's answer is kept).
    let inA: readonly Geofence[] | undefined;
    let inB: readonly Geofence[] | undefined;
    for (const item of this.tree.search(box)) {
      const g = item.geofence;
      if (!holdsAt(g, a.time) || !holdsAt(g, b.time)) continue;
      if ((inA ??= this.containing(a.lat, a.lng, a.time)).includes(g) || (inB ??= this.containing(b.lat, b.lng, b.time)).includes(g)) continue;
      // Only the edges whose boxes meet the step's can cross it: most steps near a geofence meet none,
      // and those that do are tested against a few edges, not all (a sweep of 10,000 edges is ~8 ms).
      const edges = edgesNear(item.area.geometry, box);
      if (edges.length < 2) continue;
      line ??= lineString([
        [a.lng, a.lat],
        [b.lng, b.lat],
      ]);
      const points = lineIntersect(line, multiLineString(edges)).features;
      if (points.length < 2) continue; // touched, not crossed
      const fractions = points.map((p) => haversineM(a.lat, a.lng, p.geometry.coordinates[1]!, p.geometry.coordinates[0]!) / length);
      const at = (f: number) => Math.round(a.time + Math.min(1, Math.max(0, f)) * (b.time - a.time));
      out.push({ geofence: g, entered: at(Math.min(...fractions)), exited: at(Math.max(...fractions)) });
    }
    return out.sort((x, y) => x.geofence.id - y.geofence.id);
  }
}

/** The edges of an area whose bounding boxes meet `box`, each as a line of its two ends. */
function edgesNear(area: Polygon | MultiPolygon, box: { minX: number; minY: number; maxX: number; maxY: number }): Position[][] {
  const out: Position[][] = [];
  const { minX, minY, maxX, maxY } = box;
  const polygons = area.type === 'Polygon' ? [area.coordinates] : area.coordinates;
  for (const rings of polygons) {
    for (const r of rings) {
      let p = r[0]!;
      for (let i = 1; i < r.length; i++) {
        const q = r[i]!;
        const px = p[0]!;
        const qx = q[0]!;
        const py = p[1]!;
        const qy = q[1]!;
        if (!((px < minX && qx < minX) || (px > maxX && qx > maxX) || (py < minY && qy < minY) || (py > maxY && qy > maxY))) out.push([p, q]);
        p = q;
      }
    }
  }
  return out;
}

/** No geofences: what derivation is given when none are configured. */
export const NO_GEOFENCES = new GeofenceLookup([]);
