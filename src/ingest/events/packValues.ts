import { NO_OF_CELLS, NO_OF_TEMPERATURE_SENSORS, packKind, PACK_OTHER } from '../flatten/packHealth.js';

/**
 * What derivation keeps of a CAN record's pack: six values computed as the record arrives from its
 * temperature sensors and cell voltages (a stream's record keeps a handful of values, inputs.ts
 * MAX_VALUES, not each sensor's and cell's), on the pack's real sensors and cells only, by the rule of the
 * `can_pack` point (../flatten/packHealth.ts): a sensor numbered beyond `no_of_temperature_sensors`, or
 * reading one of `CAN_TEMP_SENTINELS`, is none; so is a cell numbered beyond `no_of_cells` (each count
 * when the record sent it), or reading 0 V (an empty slot). The early warnings read them (packHeat.ts,
 * cellDrift.ts).
 *
 * A pending record stores each under a wire id of its own, from 0x3f00 up: a range the field
 * dictionary never reaches (a payload's ids are its index, about a hundred), below the pending
 * record's flag bits (wire.ts). A release that does not know them leaves them out when it reads the
 * record (wire.ts `readPending`), and one that does reads none from a record stored before: no stored
 * layout changes. Two records of one instant merged (streams.ts) keep the later record's values, as
 * InfluxDB keeps the later point's fields. (Every value costs each CAN record its computing, its 10
 * bytes in Redis and its column in a worker's cache: a value is added when a detector reads it.)
 */
export const PACK_VALUES = [
  /** The hottest real sensor's reading (°C), and its number. */
  { place: 'hottestAt', name: 'pack:hottest', wireId: 0x3f00 },
  { place: 'hottestSensorAt', name: 'pack:hottest_sensor', wireId: 0x3f01 },
  /** Of three or more real sensors, the one furthest from their median: its reading less the median (°C), and its number. */
  { place: 'apartAt', name: 'pack:apart', wireId: 0x3f02 },
  { place: 'apartSensorAt', name: 'pack:apart_sensor', wireId: 0x3f03 },
  /** Of three or more real cells, the one furthest from their median voltage: its voltage less the median (V), and its number (cell drift, cellDrift.ts). */
  { place: 'cellApartAt', name: 'pack:cell_apart', wireId: 0x3f04 },
  { place: 'cellApartNumberAt', name: 'pack:cell_apart_number', wireId: 0x3f05 },
] as const;
export type PackValueAt = (typeof PACK_VALUES)[number]['place'];

/** A record type's pack fields: their names, and once placed in an input's values, where each sits. */
export interface PackSources {
  readonly names: readonly string[];
  /** For each of `names`, its cell's number (≥ 0), its sensor's as -1 − number, or, last, COUNT_OF_CELLS / COUNT_OF_SENSORS. */
  readonly kinds: Int32Array;
  /** Each name's slot in an input's values (set by `slotsIn`). */
  readonly slots: Int32Array;
  slotsIn(fields: readonly string[]): PackSources;
}

/** Above every cell's number (packKind's alert flags and PACK_OTHER are not sources). */
const COUNT_OF_CELLS = 0x4000_0010;
const COUNT_OF_SENSORS = 0x4000_0011;

/** The pack fields among a type's field names (none: the type reports no pack). */
export function packSourcesOf(fieldNames: readonly string[]): PackSources {
  const names: string[] = [];
  const kinds: number[] = [];
  for (const name of fieldNames) {
    // packKind: a cell's number (≥ 0), a sensor's as -1 − number, an alert flag (PACK_OTHER - 1) or anything else (PACK_OTHER).
    const k = packKind(name);
    if (k < PACK_OTHER - 1) {
      names.push(name);
      kinds.push(k);
    }
  }
  if (names.length > 0) {
    for (const [name, kind] of [[NO_OF_CELLS, COUNT_OF_CELLS], [NO_OF_TEMPERATURE_SENSORS, COUNT_OF_SENSORS]] as const) {
      if (fieldNames.includes(name)) {
        names.push(name);
        kinds.push(kind);
      }
    }
  }
  const sources: PackSources = {
    names,
    kinds: Int32Array.from(kinds),
    slots: new Int32Array(names.length).fill(-1),
    slotsIn(fields) {
      return { ...sources, slots: Int32Array.from(names, (n) => fields.indexOf(n)) };
    },
  };
  return sources;
}

// Reused scratch (derivation is never re-entered): readings and their numbers (a cell's or sensor's number is two digits).
const temps = new Float64Array(100);
const sensors = new Int32Array(100);
const volts = new Float64Array(100);
const cells = new Int32Array(100);
const sorted = new Float64Array(100);

/** The median of `xs[0..n)` (n ≥ 1; of an even count, the mean of the middle two). */
function median(xs: Float64Array, n: number): number {
  for (let i = 0; i < n; i++) {
    const x = xs[i]!;
    let j = i - 1;
    while (j >= 0 && sorted[j]! > x) {
      sorted[j + 1] = sorted[j]!;
      j--;
    }
    sorted[j + 1] = x;
  }
  return n % 2 === 1 ? sorted[n >> 1]! : (sorted[(n >> 1) - 1]! + sorted[n >> 1]!) / 2;
}

/** Of `xs[0..n)` (n ≥ 3), the one furthest from their median (the lowest-numbered of equals): writes its deviation and number at `out[at]`, `out[at + 1]`. */
function apart(xs: Float64Array, numbers: Int32Array, n: number, out: Float64Array, at: number): void {
  const m = median(xs, n);
  let best = -1;
  let bestNumber = 0;
  let deviation = NaN;
  for (let i = 0; i < n; i++) {
    const d = xs[i]! - m;
    const a = Math.abs(d);
    if (a > best || (a === best && numbers[i]! < bestNumber)) {
      best = a;
      bestNumber = numbers[i]!;
      deviation = d;
    }
  }
  out[at] = deviation;
  out[at + 1] = bestNumber;
}

/**
 * A record's pack values (PACK_VALUES' order) into `out`, from `src[base + slot]` of its sources; NaN where
 * it reported too little (no real sensor; fewer than three sensors, or cells). Whether it has any.
 */
export function packValuesInto(p: PackSources, src: ArrayLike<number>, base: number, sentinels: readonly number[], out: Float64Array): boolean {
  const kinds = p.kinds;
  const slots = p.slots;
  let n = kinds.length;
  let cellCount = Infinity;
  let sensorCount = Infinity;
  // The counts, where the type has them, come last (packSourcesOf).
  while (n > 0 && kinds[n - 1]! >= COUNT_OF_CELLS) {
    const x = src[base + slots[--n]!]!;
    if (x !== x) continue;
    if (kinds[n] === COUNT_OF_CELLS) cellCount = x;
    else sensorCount = x;
  }
  let nt = 0;
  let nv = 0;
  outer: for (let j = 0; j < n; j++) {
    const x = src[base + slots[j]!]!;
    if (x !== x) continue;
    const k = kinds[j]!;
    if (k >= 0) {
      if (k > cellCount || x === 0) continue;
      volts[nv] = x;
      cells[nv++] = k;
      continue;
    }
    const sensor = -1 - k;
    if (sensor > sensorCount) continue;
    // (A loop, not `includes`: a call into the runtime for each of a record's sensors.)
    for (let s = 0; s < sentinels.length; s++) if (x === sentinels[s]) continue outer;
    temps[nt] = x;
    sensors[nt++] = sensor;
  }
  if (nt === 0) out[0] = out[1] = out[2] = out[3] = NaN;
  else {
    let h = 0;
    for (let i = 1; i < nt; i++) if (temps[i]! > temps[h]! || (temps[i] === temps[h] && sensors[i]! < sensors[h]!)) h = i;
    out[0] = temps[h]!;
    out[1] = sensors[h]!;
    if (nt >= 3) apart(temps, sensors, nt, out, 2);
    else out[2] = out[3] = NaN;
  }
  if (nv >= 3) apart(volts, cells, nv, out, 4);
  else out[4] = out[5] = NaN;
  return nt > 0 || nv >= 3;
}
