/** A square of `sideM` metres at (lat, lng), as a GeoJSON polygon. */
export function square(lat: number, lng: number, sideM: number): [number, number][][] {
  const dLat = sideM / 111_195.08;
  const dLng = dLat / Math.cos((lat * Math.PI) / 180);
  return [[[lng, lat], [lng + dLng, lat], [lng + dLng, lat + dLat], [lng, lat + dLat], [lng, lat]]];
}


/**
 * A star-shaped ring of `vertices` vertices around (lat, lng), its radius `radiusM` ± 30 % in `waves`
 * waves (a border that is never straight: every vertex counts), closed; as a GeoJSON polygon's rings.
 */
export function wavy(lat: number, lng: number, radiusM: number, vertices: number, waves = 7): [number, number][][] {
  const dLat = radiusM / 111_195.08;
  const dLng = dLat / Math.cos((lat * Math.PI) / 180);
  const ring: [number, number][] = [];
  for (let i = 0; i < vertices; i++) {
    const a = (2 * Math.PI * i) / vertices;
    const r = 1 + 0.3 * Math.sin(a * waves);
    ring.push([lng + dLng * r * Math.cos(a), lat + dLat * r * Math.sin(a)]);
  }
  ring.push(ring[0]!);
  return [ring];
}

/**
 * A ring of `vertices` vertices whose edges all span the same longitudes (a zigzag between two
 * meridians, closed around its west side): the worst case of a sweep line's test for self-crossings.
 */
export function zigzag(lat: number, lng: number, vertices: number): [number, number][][] {
  const rows = vertices - 3;
  const ring: [number, number][] = [[lng - 0.01, lat - 0.0001]];
  for (let i = 0; i < rows; i++) ring.push([i % 2 === 0 ? lng : lng + 0.1, lat + i * 0.0001]);
  ring.push([lng + 0.11, lat + rows * 0.0001], [lng - 0.01, lat + rows * 0.0001], ring[0]!);
  return [ring];
}
