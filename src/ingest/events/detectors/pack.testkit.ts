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

// ---- a pack's cells, day after day (cellDrift.ts) ------------------------------------------------

export const DAY = 24 * 60 * MIN;

/** A pack's days for its cells (`cellDays`). */
export interface CellDays {
  days: number;
  seed: number;
  /** Its cells (cells 1 to `cells`); each day is one charge cycle. */
  cells: number;
  /** How much further (V) its last cell drifts each cycle, from day 0: below the others at rest and driving, above them while charging (0: none). */
  driftV?: number;
  /** Its first cell weak: it sags WEAK_SAG × (1 − soc / 100) below the others, charging or not. */
  weak?: boolean;
  /** Its pack's id on day `d` (a swap: another id). */
  bmsId?: (day: number) => number;
  /** Minutes between records (2). */
  every?: number;
}

/** How far a weak cell sags below the others at 0 % (the emulator's, src/upstream/emulator/fleet.ts). */
export const WEAK_SAG = 0.12;

/**
 * A CAN feed of a pack's cells, a record every `every` minutes, each day one charge cycle: parked from
 * midnight (at rest), driven 06:00–10:00 at 0.3–0.8 C, parked, driven 14:00–17:00, parked, charged
 * 20:00–23:00 at 0.3 C from about 25 % to the day's full (90–100 %), parked. A cell reads
 * 3.25 + 0.25 × soc / 100 V, 30 mV less while driven and 40 mV more while charging, plus its own fixed
 * offset (±15 mV) and ±4 mV of noise a reading, in whole mV; so a healthy pack's cells sit within
 * 3.25–3.54 V, in the band 3.0–3.65 V. Besides its cells it reports slot `cells + 1` at 0 V, an empty slot
 * its BMS counts (`no_of_cells` is `cells + 1`), and slot `cells + 2`, beyond `no_of_cells`, reading what
 * an unconnected input floats at: 3.6 V and up 5 mV a day (counted as a cell, it would drift). Returns the
 * records and the last cell's reading in each.
 */
export function cellDays(p: CellDays, t0 = T0): { records: Named[]; lastCell: number[] } {
  const rnd = random(p.seed);
  const offsets = Array.from({ length: p.cells }, () => Math.round((rnd() * 2 - 1) * 15) / 1000);
  const fulls = Array.from({ length: p.days }, () => 90 + 10 * rnd());
  const every = (p.every ?? 2) * MIN;
  const records: Named[] = [];
  const lastCell: number[] = [];
  const day0 = Math.floor(t0 / DAY) * DAY;
  for (let t = day0; t < day0 + p.days * DAY; t += every) {
    const d = Math.floor((t - day0) / DAY);
    const h = (t - day0 - d * DAY) / (60 * MIN);
    const fullBefore = d === 0 ? 95 : fulls[d - 1]!;
    // The soc along the day: full, 55 % after the morning's drive, 25 % after the afternoon's, the day's full after the charge.
    const along = (a: number, b: number, from: number, to: number) => a + ((b - a) * (h - from)) / (to - from);
    const soc = h < 6 ? fullBefore : h < 10 ? along(fullBefore, 55, 6, 10) : h < 14 ? 55 : h < 17 ? along(55, 25, 14, 17) : h < 20 ? 25 : h < 23 ? along(25, fulls[d]!, 20, 23) : fulls[d]!;
    const driving = (h >= 6 && h < 10) || (h >= 14 && h < 17);
    const charging = h >= 20 && h < 23;
    const current = driving ? -(0.3 + 0.5 * rnd()) * CAPACITY : charging ? 0.3 * CAPACITY : -0.2;
    const drift = (p.driftV ?? 0) * d;
    const fields: Record<string, number> = { soc: Math.round(soc), current: Math.round(current * 100) / 100, bms_id: p.bmsId?.(d) ?? 4_102, no_of_cells: p.cells + 1 };
    for (let k = 1; k <= p.cells; k++) {
      let v = 3.25 + (0.25 * soc) / 100 + (driving ? -0.03 : charging ? 0.04 : 0) + offsets[k - 1]! + (rnd() * 2 - 1) * 0.004;
      if (k === 1 && p.weak) v -= WEAK_SAG * (1 - soc / 100);
      if (k === p.cells) v += charging ? drift : -drift;
      fields[`cell_voltage_${String(k).padStart(2, '0')}`] = Math.round(v * 1000) / 1000;
    }
    fields[`cell_voltage_${String(p.cells + 1).padStart(2, '0')}`] = 0;
    fields[`cell_voltage_${String(p.cells + 2).padStart(2, '0')}`] = Math.round((3.6 + 0.005 * d) * 1000) / 1000;
    records.push(can(t, fields));
    lastCell.push(fields[`cell_voltage_${String(p.cells).padStart(2, '0')}`]!);
  }
  return { records, lastCell };
}
