import { can, collect, OPTS, quiet, roundTrip, T0, V, type Named } from '../events.testkit.js';
import { flush, ingest, newState, type Derived, type DeriveOptions } from '../derive.js';

/** Feeds of a pack's CAN records for its early warnings (packHeat.ts, cRate.ts): a record every 10 s. */

export const MIN = 60_000;
export const STEP = 10_000;
export const CAPACITY = 30;

/** A seeded generator (tests must repeat). */
export function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/**
 * A healthy pack's hour: driving at up to 1 C with acceleration and regenerative-braking peaks of 3 C for
 * 10–20 s, then charging at 0.3 C; its four real sensors warming 0.2 °C a minute, within 3 °C of each other, each
 * with ±1 °C of noise; sensors 5 and 6 unused (the sentinel -40, and 95: numbered beyond
 * no_of_temperature_sensors).
 */
export function healthy(seed: number, t0 = T0, minutes = 60): Named[] {
  const rnd = random(seed);
  const out: Named[] = [];
  for (let t = t0, j = 0; t <= t0 + minutes * MIN; t += STEP, j++) {
    const peak = j % 30 < 2 ? (j % 60 < 2 ? -3 : 3) : 0; // a peak of 20 s every 5 minutes, braking every other
    const current = t < t0 + (minutes * MIN) / 2 ? (peak !== 0 ? peak * CAPACITY : -(0.3 + 0.7 * rnd()) * CAPACITY) : 0.3 * CAPACITY;
    const base = 30 + (0.2 * (t - t0)) / MIN;
    const temps: Record<string, number> = {};
    for (let k = 1; k <= 4; k++) temps[`cell_temperature_0${k}`] = Math.round((base + k * 0.7 + (rnd() * 2 - 1)) * 10) / 10;
    out.push(can(t, { soc: 70, current, battery_capacity: CAPACITY, bms_id: 4_102, no_of_temperature_sensors: 4, ...temps, cell_temperature_05: -40, cell_temperature_06: 95 }));
  }
  return out;
}

/** A healthy feed with sensor `sensor` from minute `from` on given by `temp(minutesSince)`. */
export function withSensor(feed: Named[], sensor: number, from: number, temp: (minutes: number) => number): Named[] {
  return feed.map((r) => {
    const m = (r.time - feed[0]!.time) / MIN;
    return m < from ? r : can(r.time, { ...r.fields, [`cell_temperature_0${sensor}`]: temp(m - from) });
  });
}

/** A healthy feed with the current at `amps` from minute `from` for `minutes`. */
export function withCurrent(feed: Named[], amps: number, from: number, minutes: number): Named[] {
  return feed.map((r) => {
    const m = (r.time - feed[0]!.time) / MIN;
    return m < from || m >= from + minutes ? r : can(r.time, { ...r.fields, current: amps });
  });
}

/**
 * The feed delivered out of order: batches of one to four consecutive records (each within the reorder
 * window of the next), shuffled within, every call's state read back from its bytes, then a flush.
 */
export function runShuffled(feed: readonly Named[], seed: number, opts: DeriveOptions = OPTS): Derived {
  const rnd = random(seed);
  let s = newState();
  const parts: Derived[] = [];
  let now = -Infinity;
  for (let i = 0; i < feed.length; ) {
    const n = 1 + Math.floor(rnd() * 3);
    const batch = feed.slice(i, i + n).sort(() => rnd() - 0.5);
    i += n;
    now = Math.max(now + 1, ...batch.map((r) => r.time));
    parts.push(ingest(V, s, batch, now, opts));
    s = roundTrip(s);
  }
  parts.push(flush(V, s, now + quiet(opts), opts));
  return collect(parts);
}
