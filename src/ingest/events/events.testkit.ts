import { expect } from 'vitest';
import { DEFAULT_DERIVE_OPTIONS, flush, ingest, inputOf, newState, pendingCount, type ChargingSession, type DeriveOptions, type Derived, type DerivedEvent, type EventInput, type Stop, type Trip, type VehicleState } from './derive.js';
import { STREAM_BY_ID } from './inputs.js';
import { restore, writeCommitted, writePending } from './wire.js';

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

/** A state as Redis keeps it, read back (store.ts). */
export function roundTrip(s: VehicleState): VehicleState {
  return restore(
    writeCommitted(s),
    s.streams.flatMap((st, streamId) => (st === undefined ? [] : [{ streamId, members: st.pending.records().map((r) => writePending(STREAM_BY_ID.get(streamId)!, r)) }])),
  );
}

/** Everything a sequence of calls derived, in the order derived. */
export function collect(parts: readonly Derived[]): Derived & { events: DerivedEvent[]; trips: Trip[]; sessions: ChargingSession[]; stops: Stop[] } {
  const all = { events: [] as DerivedEvent[], trips: [] as Trip[], sessions: [] as ChargingSession[], stops: [] as Stop[], late: 0, duplicates: 0, forced: 0 };
  for (const d of parts) {
    all.events.push(...d.events);
    all.trips.push(...d.trips);
    all.sessions.push(...d.sessions);
    all.stops.push(...d.stops);
    all.late += d.late;
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
  parts.push(flush(V, s, now + opts.idleMs, opts));
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
  parts.push(flush(V, s, now + opts.idleMs, opts));
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
