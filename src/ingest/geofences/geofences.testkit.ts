/** A square of `sideM` metres at (lat, lng), as a GeoJSON polygon. */
export function square(lat: number, lng: number, sideM: number): [number, number][][] {
  const dLat = sideM / 111_195.08;
  const dLng = dLat / Math.cos((lat * Math.PI) / 180);
  return [[[lng, lat], [lng + dLng, lat], [lng + dLng, lat + dLat], [lng, lat + dLat], [lng, lat]]];
}

