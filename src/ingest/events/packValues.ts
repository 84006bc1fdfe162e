import { NO_OF_TEMPERATURE_SENSORS, packKind } from '../flatten/packHealth.js';

/**
 * What derivation keeps of a CAN record's pack: four values computed as the record arrives from its
 * temperature sensors (a stream's record keeps a handful of values, inputs.ts MAX_VALUES, not each
 * sensor's), on the pack's real sensors only, by the rule of the `can_pack` point
 * (../flatten/packHealth.ts): a sensor numbered beyond `no_of_temperature_sensors` (when sent), or reading
 * one of `CAN_TEMP_SENTINELS`, is none. The early warnings read them (packHeat.ts).
 *
 * A pending record stores each under a wire id of its own, from 0x3f00 up: a range the field
 * dictionary never reaches (a payload's ids are its index, about a hundred), below the pending
 * record's flag bits (wire.ts). A release that does not know them leaves them out when it reads the
 * record (wire.ts `readPending`), and one that does reads none from a record stored before: no stored
 * layout changes. Two records of one instant merged (streams.ts) keep the later record's values, as
 * InfluxDB keeps the later point's fields. (0x3f04 and 0x3f05 are kept for the cell furthest from the
 * cells' median and its number, cell drift's: left out until it reads them, as every value costs each
 * CAN record its computing, its 10 bytes in Redis and its column in a worker's cache.)
 */
export const PACK_VALUES = [
  /** The hottest real sensor's reading (°C), and its number. */
  { place: 'hottestAt', name: 'pack:hottest', wireId: 0x3f00 },
  { place: 'hottestSensorAt', name: 'pack:hottest_sensor', wireId: 0x3f01 },
  /** Of three or more real sensors, the one furthest from their median: its reading less the median (°C), and its number. */
  { place: 'apartAt', name: 'pack:apart', wireId: 0x3f02 },
  { place: 'apartSensorAt', name: 'pack:apart_sensor', wireId: 0x3f03 },
] as const;
export type PackValueAt = (typeof PACK_VALUES)[number]['place'];

/** A record type's pack fields: their names, and once placed in an input's values, where each sits. */
export interface PackSources {
  readonly names: readonly string[];
  /** For each of `names`, its sensor's number as -1 − number, or COUNT_OF_SENSORS (last). */
  readonly kinds: Int32Array;
  /** Each name's slot in an input's values (set by `slotsIn`). */
  readonly slots: Int32Array;
  slotsIn(fields: readonly string[]): PackSources;
}

const COUNT_OF_SENSORS = 0x4000_0011;

/** The pack fields among a type's field names (none: the type reports no pack). */
export function packSourcesOf(fieldNames: readonly string[]): PackSources {
  const names: string[] = [];
  const kinds: number[] = [];
  for (const name of fieldNames) {
    // packKind: a cell's number (≥ 0), a sensor's as -1 − number, an alert flag or anything else above.
    const k = packKind(name);
    if (k < 0) {
      names.push(name);
      kinds.push(k);
    }
  }
  if (names.length > 0 && fieldNames.includes(NO_OF_TEMPERATURE_SENSORS)) {
    names.push(NO_OF_TEMPERATURE_SENSORS);
    kinds.push(COUNT_OF_SENSORS);
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
 * it reported too little (no real sensor; fewer than three). Whether it has any.
 */
export function packValuesInto(p: PackSources, src: ArrayLike<number>, base: number, sentinels: readonly number[], out: Float64Array): boolean {
  const kinds = p.kinds;
  const slots = p.slots;
  let n = kinds.length;
  let sensorCount = Infinity;
  if (n > 0 && kinds[n - 1] === COUNT_OF_SENSORS) {
    const x = src[base + slots[--n]!]!;
    if (x === x) sensorCount = x;
  }
  let nt = 0;
  outer: for (let j = 0; j < n; j++) {
    const x = src[base + slots[j]!]!;
    if (x !== x) continue;
    const sensor = -1 - kinds[j]!;
    if (sensor > sensorCount) continue;
    // (A loop, not `includes`: a call into the runtime for each of a record's sensors.)
    for (let k = 0; k < sentinels.length; k++) if (x === sentinels[k]) continue outer;
    temps[nt] = x;
    sensors[nt++] = sensor;
  }
  if (nt === 0) {
    out[0] = out[1] = out[2] = out[3] = NaN;
    return false;
  }
  let h = 0;
  for (let i = 1; i < nt; i++) if (temps[i]! > temps[h]! || (temps[i] === temps[h] && sensors[i]! < sensors[h]!)) h = i;
  out[0] = temps[h]!;
  out[1] = sensors[h]!;
  if (nt >= 3) apart(temps, sensors, nt, out, 2);
  else out[2] = out[3] = NaN;
  return true;
}
