/**
 * What a geofence at the caps costs (src/ingest/geofences/README.md, "Caps"): per fix, the questions
 * the detector asks (`detectors/geofences.ts`: the step's crossings, then the geofences holding the fix;
 * trips and stops ask the latter again, answered from its cache), by the lookup alone and through the
 * whole derivation (`ingest`, against the same drive with no geofence); and what checking a geofence as
 * it is added costs. `npx tsx test/bench/geofences.ts [vertices]`
 */
import { DEFAULT_DERIVE_OPTIONS, flush, ingest, inputOf, newState } from '../../src/ingest/events/derive.js';
import { GEOFENCE_LIMITS, parseGeofences, type Geofence } from '../../src/ingest/geofences/geofence.js';
import { GeofenceLookup } from '../../src/ingest/geofences/lookup.js';
import { wavy, zigzag } from '../../src/ingest/geofences/geofences.testkit.js';

const VERTICES = Number(process.argv[2] ?? GEOFENCE_LIMITS.vertices);
const LAT = 12.9;
const LNG = 77.5;
const RADIUS_M = 5_000;
const FIXES = Number(process.env.BENCH_FIXES ?? 2_000);
const ROUNDS = 5;
const north = (m: number) => m / 111_195.08;
const east = (m: number) => north(m) / Math.cos((LAT * Math.PI) / 180);

const city = (id: number): Geofence => ({ id, name: `city ${id}`, kind: 'other', geometry: { type: 'Polygon', coordinates: wavy(LAT, LNG, RADIUS_M, VERTICES) }, from: 0 });

/** A drive north at 36 km/h, a fix a second, from `m` metres east and north of the centre. */
const drive = (eastM: number, northM: number) => Array.from({ length: FIXES }, (_, k) => ({ time: 1_700_000_000_000 + k * 1000, lat: LAT + north(northM + 10 * k), lng: LNG + east(eastM) }));

/** The median over ROUNDS of CPU µs per fix (CPU time: a busy machine does not inflate it). */
function perFix(run: () => void): number {
  run();
  const us: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const before = process.cpuUsage();
    run();
    const used = process.cpuUsage(before);
    us.push((used.user + used.system) / FIXES);
  }
  return us.sort((a, b) => a - b)[ROUNDS >> 1]!;
}

/** The detector's questions of each fix, on the lookup alone. */
const questions = (lookup: GeofenceLookup, fixes: ReturnType<typeof drive>) => () => {
  for (let k = 1; k < fixes.length; k++) {
    lookup.crossed(fixes[k - 1]!, fixes[k]!);
    lookup.containing(fixes[k]!.lat, fixes[k]!.lng, fixes[k]!.time);
  }
};

/** The whole derivation of the drive, a record a call (as deliveries in order). */
const derivation = (lookup: GeofenceLookup | undefined, fixes: ReturnType<typeof drive>) => () => {
  const opts = lookup ? { ...DEFAULT_DERIVE_OPTIONS, geofences: { current: lookup } } : DEFAULT_DERIVE_OPTIONS;
  const s = newState();
  for (const f of fixes) ingest('BENCH', s, [inputOf('gps', f.time, { lat: f.lat, lng: f.lng, alti: 900, speed: 36, ignstatus: 1 })], f.time, opts);
  flush('BENCH', s, fixes.at(-1)!.time + 3_600_000, opts);
};

const one = new GeofenceLookup([city(1)]);
const stacked = new GeofenceLookup(Array.from({ length: Math.floor(GEOFENCE_LIMITS.liveVertices / VERTICES) }, (_, i) => city(i + 1)));
const drives: Array<[string, ReturnType<typeof drive>]> = [
  ['far from it (outside its box)', drive(4 * RADIUS_M, -10_000)],
  ['in its box, outside it (a corner)', drive(-0.95 * RADIUS_M, -1.25 * RADIUS_M)],
  ['along its border, in and out', drive(RADIUS_M, -1.5 * RADIUS_M)],
  ['inside it', drive(0, -0.3 * RADIUS_M)],
];

const rows: Array<[string, string]> = [];
for (const [label, fixes] of drives) {
  const lookupUs = perFix(questions(one, fixes));
  const withUs = perFix(derivation(one, fixes));
  const withoutUs = perFix(derivation(undefined, fixes));
  rows.push([`a fix ${label}: the lookup's answers / the derivation, beyond no geofence`, `${lookupUs.toFixed(1)} / ${(withUs - withoutUs).toFixed(1)}`]);
}
rows.push([
  `a fix inside ${stacked.size} such geofences at once (${GEOFENCE_LIMITS.liveVertices} vertices, the live cap), the lookup's answers`,
  perFix(questions(stacked, drives[3]![1])).toFixed(0),
]);

/** ms to check one geofence of `coordinates` as it is added (parseGeofences), best of 3. */
const checking = (coordinates: unknown) => {
  const doc = { type: 'Feature', properties: { name: 'x' }, geometry: { type: 'Polygon', coordinates } };
  let best = Infinity;
  for (let r = 0; r < 3; r++) {
    const t = performance.now();
    parseGeofences(doc);
    best = Math.min(best, performance.now() - t);
  }
  return best.toFixed(0);
};

process.stdout.write(`Geofences of ${VERTICES} vertices (a wavy area ${(2 * RADIUS_M) / 1000} km across), CPU µs per fix (median of ${ROUNDS} rounds of ${FIXES} fixes):\n`);
const width = Math.max(...rows.map(([n]) => n.length));
for (const [n, v] of rows) process.stdout.write(`  ${n.padEnd(width)}  ${v}\n`);
process.stdout.write(`Checking one as it is added (ms): an ordinary shape ${checking(wavy(LAT, LNG, RADIUS_M, VERTICES))}, one built against the sweep line (every edge spanning the same longitudes) ${checking(zigzag(LAT, LNG, VERTICES))}\n`);
