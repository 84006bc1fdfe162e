import { NO_OF_CELLS, NO_OF_TEMPERATURE_SENSORS, packKind, PACK_OTHER } from '../flatten/packHealth.js';

/**
 * What derivation keeps of a CAN record's pack: six values computed as the record arrives from its
 * sixteen cell voltages and six temperature sensors (a stream's record keeps a handful of values,
 * inputs.ts MAX_VALUES, not twenty-four), on the pack's real cells and sensors only, by the rule of
 * the `can_pack` point (../flatten/packHealth.ts): a cell numbered beyond `no_of_cells`, a sensor beyond
 * `no_of_temperature_sensors` (each when sent), or a sensor reading one of `CAN_TEMP_SENTINELS` is
 * none; so is a cell at 0 V or below (an unused slot). The early warnings read them (packHeat.ts,
 * cellDrift.ts).
 *
 * A pending record stores each under a wire id of its own, from 0x3f00 up: a range the field
 * dictionary never reaches (a payload's ids are its index, about a hundred), below the pending
 * record's flag bits (wire.ts). A release that does not know them leaves them out when it reads the
 * record (wire.ts `readPending`), and one that does reads none from a record stored before: no stored
 * layout changes. Two records of one instant merged (streams.ts) keep the later record's values, as
 * InfluxDB keeps the later point's fields.
 */
export const PACK_VALUES = [
  /** The hottest real sensor's reading (°C), and its number. */
  { place: 'hottestAt', name: 'pack:hottest', wireId: 0x3f00 },
  { place: 'hottestSensorAt', name: 'pack:hottest_sensor', wireId: 0x3f01 },
  /** Of three or more real sensors, the one furthest from their median: its reading less the median (°C), and its number. */
  { place: 'apartAt', name: 'pack:apart', wireId: 0x3f02 },
  { place: 'apartSensorAt', name: 'pack:apart_sensor', wireId: 0x3f03 },
  /** Of three or more real cells, the one furthest from their median voltage: its voltage less the median (V), and its number. */
  { place: 'cellApartAt', name: 'pack:cell_apart', wireId: 0x3f04 },
  { place: 'cellApartNumberAt', name: 'pack:cell_apart_number', wireId: 0x3f05 },
] as const;
export type PackValueAt = (typeof PACK_VALUES)[number]['place'];

/** A record type's pack fields: their names, and once placed in an input's values, where each sits. */
export interface PackSources {
  readonly names: readonly string[];
  /** For each of `names`, its cell's number (≥ 1), its sensor's as -1 − number, or COUNT_OF_CELLS / COUNT_OF_SENSORS. */
  readonly kinds: Int32Array;
  /** Each name's slot in an input's values (set by `slotsIn`). */
  readonly slots: Int32Array;
  slotsIn(fields: readonly string[]): PackSources;
}

const COUNT_OF_CELLS = 0x4000_0010;
const COUNT_OF_SENSORS = 0x4000_0011;

/** The pack fields among a type's field names (none: the type reports no pack). */
export function packSourcesOf(fieldNames: readonly string[]): PackSources {
  const names: string[] = [];
  const kinds: number[] = [];
  for (const name of fieldNames) {
    const k = packKind(name);
    // packKind: a cell's number (≥ 0), a sensor's as -1 − number, an alert flag or anything else above.
    if (k < 0 || (k > 0 && k < PACK_OTHER - 1)) {
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

// Reused scratch (derivation is never re-entered): readings and their numbers.
const temps = new Float64Array(32);
const sensors = new Int32Array(32);
const volts = new Float64Array(32);
const cells = new Int32Array(32);
const sorted = new Float64Array(32);

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
 * it reported too little (no real sensor; fewer than three sensors or cells). Whether it has any.
 */
export function packValuesInto(p: PackSources, src: ArrayLike<number>, base: number, sentinels: readonly number[], out: Float64Array): boolean {
  out.fill(NaN);
  let cellCount = Infinity;
  let sensorCount = Infinity;
  const kinds = p.kinds;
  const slots = p.slots;
  for (let j = kinds.length - 1; j >= 0 && kinds[j]! >= COUNT_OF_CELLS; j--) {
    const x = src[base + slots[j]!]!;
    if (x === x) {
      if (kinds[j] === COUNT_OF_CELLS) cellCount = x;
      else sensorCount = x;
    }
  }
  let nt = 0;
  let nv = 0;
  for (let j = 0; j < kinds.length; j++) {
    const k = kinds[j]!;
    if (k >= COUNT_OF_CELLS) break;
    const x = src[base + slots[j]!]!;
    if (x !== x) continue;
    if (k < 0) {
      const sensor = -1 - k;
      if (sensor > sensorCount || sentinels.includes(x)) continue;
      temps[nt] = x;
      sensors[nt++] = sensor;
    } else {
      if (k > cellCount || x <= 0) continue;
      volts[nv] = x;
      cells[nv++] = k;
    }
  }
  if (nt > 0) {
    let h = 0;
    for (let i = 1; i < nt; i++) if (temps[i]! > temps[h]! || (temps[i] === temps[h] && sensors[i]! < sensors[h]!)) h = i;
    out[0] = temps[h]!;
    out[1] = sensors[h]!;
    if (nt >= 3) apart(temps, sensors, nt, out, 2);
  }
  if (nv >= 3) apart(volts, cells, nv, out, 4);
  return nt > 0 || nv >= 3;
}
