import { expect } from 'vitest';
import { mulberry32 } from '../../upstream/emulator/prng.js';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import { parseGeofences } from '../geofences/geofence.js';
import { GeofenceLookup } from '../geofences/lookup.js';
import { emptyDerived } from './detectors/context.js';
import { DEFAULT_DERIVE_OPTIONS, flush, ingest, inputOf, newState, pendingCount, type ChargingSession, type DeriveOptions, type Derived, type DerivedEvent, type EventInput, type PackLife, type Stop, type Trip, type VehicleState } from './derive.js';
import { STREAM_BY_ID } from './inputs.js';
import { heldSetId, restore, writeCommitted, writePending } from './wire.js';

/** The vehicle events' tests' shared script: a vehicle, a start time, records by name, and deliveries. */

export const V = 'KA01AB1234';
export const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);
export const OPTS = DEFAULT_DERIVE_OPTIONS;

/** An input, with the fields it was made from (for the tests' own look-ups). */
export type Named = EventInput & { fields: Record<string, number> };
export const named = (type: string, time: number, fields: Record<string, number>): Named => ({ ...inputOf(type, time, fields), fields });
export const gps = (time: number, lat: number, lng: number, speed: number, ignstatus: number): Named => named('gps', time, { lat, lng, alti: 900, speed, ignstatus });
export const can = (time: number, fields: Record<string, number>): Named => named('can', time, fields);

/** Metres north as degrees of latitude (on the mean sphere, as haversine measures). */
export const north = (m: number): number => m / 111_195.08;

/** A state as Redis keeps it, read back (store/). */
export function roundTrip(s: VehicleState): VehicleState {
  return restore(
    writeCommitted(s),
    s.streams.flatMap((st, streamId) =>
      st === undefined
        ? []
        : [
            { streamId, members: st.pending.records().map((r) => writePending(STREAM_BY_ID.get(streamId)!, r)) },
            { streamId: heldSetId(streamId), members: st.held.records().map((r) => writePending(STREAM_BY_ID.get(streamId)!, r)) },
          ],
    ),
  );
}

/** Wall time after a vehicle's last record by which everything waiting has gone: its streams' idle flush, and each stream's wait for the other. */
export const quiet = (opts: DeriveOptions): number => Math.max(opts.streamQuietMs, opts.maxSkewMs);

/** Everything a sequence of calls derived, in the order derived. */
export function collect(parts: readonly Derived[]): Derived & { events: DerivedEvent[]; trips: Trip[]; chargingSessions: ChargingSession[]; stops: Stop[]; packLife: PackLife[] } {
  const all = { ...emptyDerived(), events: [] as DerivedEvent[], trips: [] as Trip[], chargingSessions: [] as ChargingSession[], stops: [] as Stop[], packLife: [] as PackLife[] };
  for (const d of parts) {
    all.events.push(...d.events);
    all.trips.push(...d.trips);
    all.chargingSessions.push(...d.chargingSessions);
    all.stops.push(...d.stops);
    all.packLife.push(...d.packLife);
    all.late += d.late;
    all.tooLate += d.tooLate;
    all.duplicates += d.duplicates;
    all.forced += d.forced;
  }
  return all;
}

/**
 * Delivery in order, one record a call, each as it is sent (the wall clock at its record time, or later),
 * then a flush once idle; optionally a round trip through Redis's bytes after every call.
 */
export function runOrdered(records: readonly EventInput[], opts: DeriveOptions = OPTS, roundTripped = false): ReturnType<typeof collect> {
  let s: VehicleState = newState();
  const parts: Derived[] = [];
  let now = -Infinity;
  for (const r of records) {
    now = Math.max(now + 1, r.time);
    parts.push(ingest(V, s, [r], now, opts));
    if (roundTripped) s = roundTrip(s);
  }
  parts.push(flush(V, s, now + quiet(opts), opts));
  expect(pendingCount(s)).toBe(0);
  return collect(parts);
}

/** Deliveries at given wall times: each [wall time, records], then a flush once idle. */
export function runAt(deliveries: ReadonlyArray<readonly [number, readonly EventInput[]]>, opts: DeriveOptions = OPTS, s: VehicleState = newState()): ReturnType<typeof collect> {
  const parts: Derived[] = [];
  let now = -Infinity;
  for (const [at, records] of deliveries) {
    now = Math.max(now, at);
    parts.push(ingest(V, s, records, now, opts));
  }
  parts.push(flush(V, s, now + quiet(opts), opts));
  return collect(parts);
}

/** Sorted by time; at one instant, CAN before GPS (the order derivation commits them in). */
export const sorted = <T extends EventInput>(rs: T[]): T[] => rs.sort((a, b) => a.time - b.time || (a.type === b.type ? 0 : a.type === 'can' ? -1 : 1));

/** The events of a run as [event, time] pairs. */
export const eventTimes = (d: Derived): Array<[string, number]> => d.events.map((e) => [e.event, e.time]);

/** A leg of a scripted route: `seconds` of fixes a second northward at `kmh`, ignition `ign`; `jitterM`: a parked device's wander. */
export interface Leg {
  seconds: number;
  kmh: number;
  ign: number;
  jitterM?: number;
}

/**
 * A route of legs from `t0` at (lat0, 77°): a fix a second (the speed each reports is its leg's), the
 * position moving on by each leg's speed; returns the fixes and the time and latitude after the last.
 */
export function route(t0: number, lat0: number, legs: readonly Leg[]): { fixes: Named[]; end: number; lat: number } {
  const fixes: Named[] = [];
  let t = t0;
  let lat = lat0;
  for (const leg of legs) {
    for (let j = 0; j < leg.seconds; j++, t += 1000) {
      const wander = leg.jitterM ? north(leg.jitterM * Math.sin(j * 1.7)) : 0;
      fixes.push(gps(t, lat + wander, 77, leg.kmh, leg.ign));
      lat += north(leg.kmh / 3.6);
    }
  }
  return { fixes, end: t, lat };
}

// ---- a vehicle's day in miniature ---------------------------------------------------------------

/**
 * A vehicle's day in miniature from a seed: parked, drives (with jumps and ignition flickers, some over
 * the speed limit of `HISTORY_OPTS`), idling (standing with the ignition on), towed (moving with it
 * off), charges (each after a parked spell, as a vehicle stops before it is plugged in), alarm flaps; gps
 * and CAN about 1/s each.
 */
export function history(seed: number): EventInput[] {
  const rnd = mulberry32(seed);
  const out: EventInput[] = [];
  let lat = 12.97;
  let lng = 77.59;
  let soc = 30 + Math.floor(rnd() * 50);
  const flags = ALARM_FIELDS.map(() => 0);
  let base = T0 + Math.floor(rnd() * 1000);
  const segments = 6 + Math.floor(rnd() * 8);
  const kinds: Array<'parked' | 'drive' | 'charge' | 'idle' | 'towed'> = [];
  for (let g = 0; g < segments; g++) {
    const kind = (['parked', 'drive', 'drive', 'charge', 'parked', 'drive', 'drive', 'charge', 'idle', 'towed'] as const)[Math.floor(rnd() * 10)]!;
    if (kind === 'charge' && kinds.at(-1) !== 'parked') kinds.push('parked');
    kinds.push(kind);
  }
  for (const kind of kinds) {
    const seconds = kind === 'parked' ? 40 + Math.floor(rnd() * 230) : 20 + Math.floor(rnd() * 250);
    const bearing = rnd() * 2 * Math.PI;
    const speed = 10 + rnd() * 80;
    for (let j = 0; j < seconds; j++, base += 1000) {
      const tg = base + Math.floor(rnd() * 1000);
      const tc = rnd() < 0.1 ? tg : base + Math.floor(rnd() * 1000); // sometimes at the same instant
      if (kind === 'drive' || kind === 'towed') {
        const km = speed / 3600;
        lat += (km * Math.cos(bearing)) / 111.32;
        lng += (km * Math.sin(bearing)) / (111.32 * Math.cos((lat * Math.PI) / 180));
      }
      const ign = (kind === 'drive' && !(rnd() < 0.01)) || kind === 'idle' ? 1 : 0;
      const moving = kind === 'drive' || kind === 'towed';
      if (rnd() < 0.01) out.push(gps(tg, lat + 0.5, lng, 0, ign)); // a jump
      else if (rnd() < 0.97) out.push(gps(tg, Math.round(lat * 1e6) / 1e6, Math.round(lng * 1e6) / 1e6, moving ? Math.round(speed * 10) / 10 : 0, ign));
      if (kind === 'charge' && rnd() < 0.1) soc = Math.min(100, soc + 1);
      if (kind === 'drive' && rnd() < 0.05) soc = Math.max(0, soc - 1);
      if (rnd() < 0.03) {
        const i = Math.floor(rnd() * flags.length);
        flags[i] = 1 - flags[i]!;
      }
      const f: Record<string, number> = {};
      if (rnd() < 0.8) f.soc = soc;
      if (rnd() < 0.8) f.battery_voltage = Math.round((48 + soc / 10 + rnd()) * 100) / 100;
      if (rnd() < 0.8) f.current = Math.round((kind === 'charge' ? 30 + rnd() * 5 : kind === 'drive' ? -20 - rnd() * 20 : -0.4) * 100) / 100;
      if (rnd() < 0.7) f.load_status = kind === 'charge' ? 2 : kind === 'drive' ? 1 : 0;
      ALARM_FIELDS.forEach((a, i) => {
        if (flags[i] === 1 || rnd() < 0.2) f[a] = flags[i]!;
      });
      if (rnd() < 0.05) f.cell_voltage_01 = 3.3; // a field derivation does not read
      if (f.soc === undefined && f.current === undefined && f.load_status === undefined) f.soc = soc; // as the emulator: never a record of nothing
      if (rnd() < 0.95) out.push(can(tc, f));
    }
  }
  return sorted(out);
}

/** The histories' settings: their segments last minutes, so the detectors' minimums are scaled to them. */
const HISTORY_GEOFENCES = parseGeofences({
  type: 'FeatureCollection',
  features: [
    // Where every history starts, a small one beside it, and a ring of zones around (some crossed between fixes).
    { type: 'Feature', properties: { name: 'home', kind: 'depot', radius_m: 1_500 }, geometry: { type: 'Point', coordinates: [77.59, 12.97] } },
    { type: 'Feature', properties: { name: 'kiosk', kind: 'charging', radius_m: 60 }, geometry: { type: 'Point', coordinates: [77.6, 12.975] } },
    ...Array.from({ length: 12 }, (_, k) => ({
      type: 'Feature',
      properties: { name: `zone ${k}`, kind: 'customer', radius_m: 150 + 50 * (k % 4), ...(k % 3 === 0 ? { speed_limit: 40 } : {}) },
      geometry: { type: 'Point', coordinates: [77.59 + 0.03 * Math.sin(k), 12.97 + 0.03 * Math.cos(k)] },
    })),
  ],
}).map((g, i) => ({ ...g, id: i + 1, from: 0 }));
export const HISTORY_OPTS = {
  ...OPTS,
  tripMinDurationMs: 60_000,
  tripMinDistanceM: 100,
  stopMinDurationMs: 60_000,
  idleMinDurationMs: 30_000,
  speedLimitKmh: 60,
  overspeedMinDurationMs: 5_000,
  towMinDistanceM: 300,
  geofenceMinDwellMs: 20_000,
  geofences: { current: new GeofenceLookup(HISTORY_GEOFENCES) },
};


// ---- a pack's charges ---------------------------------------------------------------------------

/** A pack driven down and charged back, cycle after cycle (`packCycles`). */
export interface PackCycles {
  cycles: number;
  /** Its true capacity (Ah) and what its BMS says (soh %), at each cycle (0 first). */
  capacityAh: (cycle: number) => number;
  soh: (cycle: number) => number;
  ratedAh: number;
  bmsId: number;
  /** Driven down to `low` % and charged to `high` % (the true soc; reported as a whole percent). */
  low: number;
  high: number;
}

/**
 * A CAN feed of a pack's cycles, the way a BMS reports them: driven down at 0.5 C (a record a minute,
 * `load_status` 1), idle 10 minutes, charged (a record each 30 s, `load_status` 2) at a current tapering
 * from 0.5 C to 0.2 C as it fills, idle again. The true soc is integrated a second at a time from the
 * true current; each record reports it rounded to a whole percent, with the pack's `bms_id`, `soh` and
 * `battery_capacity`. Returns the records and each charge's span.
 */
export function packCycles(p: PackCycles, t0 = T0): { records: Named[]; charges: Array<{ start: number; end: number }> } {
  const records: Named[] = [];
  const charges: Array<{ start: number; end: number }> = [];
  let t = t0;
  let soc = p.high;
  for (let c = 0; c < p.cycles; c++) {
    const cap = p.capacityAh(c);
    const bms = { bms_id: p.bmsId, soh: p.soh(c), battery_capacity: p.ratedAh };
    const report = (load: number, current: number) => records.push(can(t, { ...bms, soc: Math.round(soc), battery_voltage: 48 + soc / 10, current: Math.round(current * 100) / 100, load_status: load }));
    const run = (load: number, everyS: number, amps: () => number, done: () => boolean) => {
      for (let j = 0; !done(); j++, t += 1000) {
        const a = amps();
        if (j % everyS === 0) report(load, a);
        soc += (a / 3600 / cap) * 100;
      }
    };
    run(1, 60, () => -0.5 * cap, () => soc <= p.low);
    run(0, 60, () => -0.3, (() => { const end = t + 600_000; return () => t >= end; })());
    const start = t;
    run(2, 30, () => cap * (0.5 - (0.3 * (soc - p.low)) / (p.high - p.low)), () => soc >= p.high);
    charges.push({ start, end: t });
    run(0, 60, () => -0.3, (() => { const end = t + 600_000; return () => t >= end; })());
  }
  return { records, charges };
}
