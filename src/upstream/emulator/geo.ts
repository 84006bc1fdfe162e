/** Just enough geography for plausible tracks: depots in Indian cities, distances, offsets. */

export interface Point {
  lat: number;
  lng: number;
}

export interface City extends Point {
  /** Registration state code used for the vehicle numbers of this depot. */
  state: string;
  name: string;
  /** Metres above sea level. */
  alt: number;
}

export const CITIES: readonly City[] = [
  { state: 'MH', name: 'Mumbai', lat: 19.076, lng: 72.8777, alt: 14 },
  { state: 'KA', name: 'Bengaluru', lat: 12.9716, lng: 77.5946, alt: 920 },
  { state: 'DL', name: 'Delhi', lat: 28.6139, lng: 77.209, alt: 216 },
  { state: 'TN', name: 'Chennai', lat: 13.0827, lng: 80.2707, alt: 6 },
  { state: 'GJ', name: 'Ahmedabad', lat: 23.0225, lng: 72.5714, alt: 53 },
  { state: 'RJ', name: 'Jaipur', lat: 26.9124, lng: 75.7873, alt: 431 },
  { state: 'UP', name: 'Lucknow', lat: 26.8467, lng: 80.9462, alt: 123 },
  { state: 'TS', name: 'Hyderabad', lat: 17.385, lng: 78.4867, alt: 542 },
  { state: 'KL', name: 'Kochi', lat: 9.9312, lng: 76.2673, alt: 3 },
  { state: 'WB', name: 'Kolkata', lat: 22.5726, lng: 88.3639, alt: 9 },
];

const EARTH_RADIUS_KM = 6371;
const toRad = (deg: number): number => (deg * Math.PI) / 180;

export function distanceKm(a: Point, b: Point): number {
  const dLat = toRad(b.lat - a.lat);
  const dLng = toRad(b.lng - a.lng);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(toRad(a.lat)) * Math.cos(toRad(b.lat)) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** The point `km` away from `p` towards `bearing` (radians from north); flat-earth, fine below ~50 km. */
export function offset(p: Point, km: number, bearing: number): Point {
  const dLat = (km * Math.cos(bearing)) / 111.32;
  const dLng = (km * Math.sin(bearing)) / (111.32 * Math.cos(toRad(p.lat)));
  return { lat: p.lat + dLat, lng: p.lng + dLng };
}

export function lerp(a: Point, b: Point, f: number): Point {
  return { lat: a.lat + (b.lat - a.lat) * f, lng: a.lng + (b.lng - a.lng) * f };
}

/** Gentle terrain above the depot altitude, so altitude varies along a track without jumping. */
export function terrainMetres(p: Point): number {
  // Periods of roughly 10 km; 0 to 20 m above the depot.
  return 6 * (1 + Math.sin(p.lat * 60)) + 4 * (1 + Math.cos(p.lng * 80));
}
