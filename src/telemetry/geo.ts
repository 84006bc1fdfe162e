/** Distances between fixes: the track's steps (events), towing's and a circle geofence's radius. */

/** The mean Earth radius (IUGG, (2a + b) / 3 of WGS 84), metres: the sphere haversine distances are on. */
export const MEAN_EARTH_RADIUS_M = 6_371_008.8;

const RAD = Math.PI / 180;

/**
 * Great-circle distance in metres between two WGS 84 positions in degrees, on the mean sphere
 * (haversine: well conditioned at the metre steps between consecutive fixes, where the spherical law
 * of cosines loses its digits). Within 0.5 % of the ellipsoidal distance everywhere.
 */
export function haversineM(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const sLat = Math.sin(((lat2 - lat1) * RAD) / 2);
  const sLng = Math.sin(((lng2 - lng1) * RAD) / 2);
  const h = sLat * sLat + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * sLng * sLng;
  return 2 * MEAN_EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}
