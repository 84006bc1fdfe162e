import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mulberry32 } from '../../upstream/emulator/prng.js';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import { DERIVE_FIELDS, eventId, flush, ingest, newState, pendingCount, chargingSessionId, tripId, type DeriveOptions, type Derived, type DerivedEvent, type EventInput, type Trip } from './derive.js';
import { MEAN_EARTH_RADIUS_M, haversineM } from '../../telemetry/geo.js';
import { STREAMS } from './inputs.js';
import { writeCommitted, writePending } from './wire.js';
import { parseGeofences } from '../geofences/geofence.js';
import { GeofenceLookup } from '../geofences/lookup.js';
import { cases } from '../../../test/harness/short.js';
import { can, collect, gps, history, HISTORY_OPTS, named, OPTS, quiet, roundTrip, runOrdered, sorted, T0, V, type Named } from './events.testkit.js';

/**
 * The derivation as a whole: the detectors fed in order from per-type streams, exactly once whatever
 * the delivery. Each detector's own rules are tested beside it (detectors/*.test.ts), the streams' in
 * streams.test.ts, a fleet's cadences through the whole service in test/e2e/events-cadence.test.ts.
 */

// ---- a scripted drive --------------------------------------------------------------------------

/** Parked 10 s, then 5000 s north along the meridian 77° E at 0.0002° a second (80 km/h), 10° N to 11° N, with CAN at every half second. */
function meridianDrive(): { records: Named[]; start: number; end: number } {
  const records: Named[] = [];
  const lng = 77;
  for (let j = 0; j <= 10; j++) records.push(gps(T0 + j * 1000, 10, lng, 0, 0));
  records.push(can(T0 + 5_000, { soc: 92 }), can(T0 + 9_500, { soc: 91, battery_voltage: 52.1, current: -0.4 }));
  const start = T0 + 11_000;
  for (let j = 0; j <= 5000; j++) {
    const t = start + j * 1000;
    const speed = j === 2500 ? 97.5 : 80;
    records.push(gps(t, 10 + j * 0.0002, lng, speed, j === 5000 ? 0 : 1));
    if (j < 5000) records.push(can(t + 500, { soc: 90 - Math.floor(j / 500), current: -40, load_status: 1 }));
  }
  const end = start + 5_000_000;
  records.push(can(end, { soc: 79 })); // at the very instant ignition turns off: "at or before" the end
  return { records: sorted(records), start, end };
}

describe('a drive', () => {
  it('measures distance, duration, speed, ends, soc from interleaved CAN', () => {
    const { records, start, end } = meridianDrive();
    const d = runOrdered(records);
    expect(d.trips).toHaveLength(1);
    const trip = d.trips[0]!;
    const exact = (MEAN_EARTH_RADIUS_M * Math.PI) / 180; // 1° of a meridian on the sphere
    expect(trip.distanceM).toBeCloseTo(exact, 2); // to the centimetre: haversine is exact along a meridian
    expect(trip).toMatchObject({ vehicleno: V, start, end, durationS: 5000, maxSpeedKmh: 97.5, startLat: 10, startLng: 77, endLng: 77, socStart: 91, socEnd: 79 });
    expect(trip.endLat).toBeCloseTo(11, 9);
    expect(d.events.map((e) => [e.event, e.time, e.value])).toEqual([
      ['ignition_on', start, 1],
      ['ignition_off', end, 0],
    ]);
    expect(d.events[0]!.fields).toEqual({ lat: 10, lng: 77, speed: 80 });
    expect(d.late + d.duplicates + d.forced).toBe(0);
  });

  it('a first gps record with ignition off emits nothing; with ignition on, ignition_on', () => {
    expect(runOrdered([gps(T0, 10, 77, 0, 0)]).events).toEqual([]);
    expect(runOrdered([gps(T0, 10, 77, 5, 1)]).events).toEqual([{ vehicleno: V, event: 'ignition_on', time: T0, value: 1, fields: { lat: 10, lng: 77, speed: 5 } }]);
  });

  it('ignores records of unknown types and records carrying nothing it reads', () => {
    const s = newState();
    const d = ingest(V, s, [named('fuel', T0, {}), can(T0, { cell_voltage_01: 3.3 }), can(T0 + 0.5, { soc: 5 })], T0);
    expect(d).toMatchObject({ late: 0, duplicates: 0 });
    expect(pendingCount(s)).toBe(0);
  });
});

// ---- exactly once, whatever order --------------------------------------------------------------

interface Delivery {
  derived: Derived & { trips: Trip[] };
  copies: number;
}

/**
 * A delivery of `records`: GPS records each delayed by less than W of record time; CAN records either
 * the same way or, with `canBulkMs`, pushed in bulks (every record of each `canBulkMs` of record time,
 * in order, sent at its end plus up to W): a CAN stream up to minutes behind the GPS stream. Some
 * records twice; cut into batches; the wall clock at each batch's arrival; states serialised and
 * parsed now and then.
 */
function deliver(records: readonly EventInput[], seed: number, opts: DeriveOptions, canBulkMs = 0): Delivery {
  const rnd = mulberry32(seed ^ 0x5bd1e995);
  const arrivals: Array<{ at: number; tie: number; r: EventInput }> = [];
  let copies = 0;
  const arrival = (r: EventInput): { at: number; tie: number } => {
    if (canBulkMs > 0 && r.type === 'can') {
      const bulkEnd = (Math.floor((r.time - T0) / canBulkMs) + 1) * canBulkMs + T0;
      // One bulk arrives together, its records in order (a tie by time).
      return { at: bulkEnd + (hashOf(bulkEnd) % (opts.windowMs - 1)), tie: r.time / 1e13 };
    }
    return { at: r.time + Math.floor(rnd() * (opts.windowMs - 1)), tie: rnd() };
  };
  for (const r of records) {
    arrivals.push({ ...arrival(r), r });
    if (rnd() < 0.05) {
      copies++;
      arrivals.push({ ...arrival(r), r });
    }
  }
  arrivals.sort((a, b) => a.at - b.at || a.tie - b.tie);
  let s = newState();
  const parts: Derived[] = [];
  let now = -Infinity;
  for (let j = 0; j < arrivals.length; ) {
    const n = 1 + Math.floor(rnd() * 25);
    const batch = arrivals.slice(j, j + n);
    j += n;
    now = Math.max(now, batch.at(-1)!.at);
    parts.push(ingest(V, s, batch.map((a) => a.r), now, opts));
    // Round trips through the bytes the store keeps (store/: the committed part and each pending record).
    if (rnd() < 0.1) s = roundTrip(s);
  }
  parts.push(flush(V, s, now + quiet(opts), opts));
  expect(pendingCount(s)).toBe(0);
  return { derived: collect(parts), copies };
}

const hashOf = (x: number): number => Math.abs(Math.imul(x ^ 0x9e3779b9, 0x85ebca6b) >>> 0);

/**
 * Events in a canonical order: by time, then name. Each stream's events come in its own order, but how
 * two streams' interleave depends on when each commits (an outbox entry's order carries no meaning: an
 * event is known by its id).
 */
const canonical = (events: readonly DerivedEvent[]): DerivedEvent[] => {
  // Every event at a time: one without (NaN) would also leave this order undefined.
  for (const e of events) expect(Number.isSafeInteger(e.time), `${e.event} at ${e.time}`).toBe(true);
  return [...events].sort((a, b) => a.time - b.time || (a.event < b.event ? -1 : a.event > b.event ? 1 : 0));
};

describe('exactly once, whatever order', () => {
  it('any delivery within the window, batched, duplicated, round-tripped, derives what ordered delivery does', () => {
    const seen = { trips: 0, chargingSessions: 0, alarms: 0, ignitions: 0, stops: 0, idle: 0, overspeed: 0, towed: 0, geofences: 0 };
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.constantFrom(5_000, 30_000), (seed, windowMs) => {
        const opts = { ...HISTORY_OPTS, windowMs, streamQuietMs: windowMs };
        const records = history(seed);
        const ordered = runOrdered(records, opts);
        const { derived, copies } = deliver(records, seed, opts);
        expect(canonical(derived.events)).toEqual(canonical(ordered.events));
        expect(derived.trips).toEqual(ordered.trips);
        expect(derived.chargingSessions).toEqual(ordered.chargingSessions);
        expect(derived.stops).toEqual(ordered.stops);
        expect(derived.late).toBe(0);
        expect(derived.duplicates).toBe(copies);
        expect(derived.forced).toBe(0);
        seen.stops += ordered.stops.length;
        seen.idle += ordered.events.filter((e) => e.event === 'idle_ended').length;
        seen.overspeed += ordered.events.filter((e) => e.event === 'overspeed_ended').length;
        seen.towed += ordered.events.filter((e) => e.event === 'moved_while_off').length;
        seen.geofences += ordered.events.filter((e) => e.event === 'geofence_entered').length;
        seen.trips += ordered.trips.length;
        seen.chargingSessions += ordered.chargingSessions.length;
        seen.alarms += ordered.events.filter((e) => e.event.startsWith('alert_')).length;
        seen.ignitions += ordered.events.filter((e) => e.event.startsWith('ignition_')).length;
      }),
      { numRuns: cases(40) },
    );
    // The histories exercised every kind of output.
    expect(seen.trips).toBeGreaterThan(cases(20));
    expect(seen.chargingSessions).toBeGreaterThan(cases(10));
    expect(seen.alarms).toBeGreaterThan(cases(100));
    expect(seen.ignitions).toBeGreaterThan(cases(100));
    expect(seen.stops).toBeGreaterThan(cases(10));
    expect(seen.idle).toBeGreaterThan(cases(5));
    expect(seen.overspeed).toBeGreaterThan(cases(10));
    expect(seen.towed).toBeGreaterThan(cases(5));
    expect(seen.geofences).toBeGreaterThan(cases(20));
  });

  it('a CAN stream pushed in 60-s or 5-min bulks behind a realtime GPS stream derives what it would in step', () => {
    let sessions = 0;
    let alarms = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.constantFrom(60_000, 300_000), (seed, canBulkMs) => {
        const opts = HISTORY_OPTS;
        const records = history(seed);
        const ordered = runOrdered(records, opts);
        const { derived, copies } = deliver(records, seed, opts, canBulkMs);
        expect(derived.stops).toEqual(ordered.stops);
        expect(derived.late).toBe(0);
        expect(canonical(derived.events)).toEqual(canonical(ordered.events));
        expect(derived.trips).toEqual(ordered.trips);
        expect(derived.chargingSessions).toEqual(ordered.chargingSessions);
        expect(derived.duplicates).toBe(copies);
        sessions += ordered.chargingSessions.length;
        alarms += ordered.events.filter((e) => e.event.startsWith('alert_')).length;
      }),
      { numRuns: cases(30) },
    );
    expect(sessions).toBeGreaterThan(cases(5));
    expect(alarms).toBeGreaterThan(cases(100));
  });

  it('a committed record delivered again is a duplicate while among its stream’s last 32 committed, then late', () => {
    const rs = Array.from({ length: 200 }, (_, j) => can(T0 + j * 1000, { soc: 50 + (j % 2) }));
    const s = newState();
    ingest(V, s, rs, T0 + 200_000);
    // Committed: T0 … T0 + 169 s; the ring holds the last 32 of them.
    expect(ingest(V, s, [rs[169]!, rs[138]!], T0 + 200_001)).toMatchObject({ duplicates: 2, late: 0 });
    expect(ingest(V, s, [rs[137]!], T0 + 200_002)).toMatchObject({ duplicates: 0, late: 1 });
    // And pending ones are duplicates too, within a batch or across.
    expect(ingest(V, s, [rs[199]!, rs[180]!, rs[180]!], T0 + 200_003)).toMatchObject({ duplicates: 3, late: 0 });
  });

  it('flush commits a stream only once nothing was added to it for streamQuietMs of wall time', () => {
    const s = newState();
    const at = T0 + 70_000;
    ingest(V, s, [can(T0, { load_status: 2, soc: 10 }), can(T0 + 70_000, { load_status: 0, soc: 12 })], at);
    expect(pendingCount(s)).toBe(1);
    expect(flush(V, s, at + OPTS.streamQuietMs - 1).events).toEqual([]);
    expect(pendingCount(s)).toBe(1);
    const d = flush(V, s, at + OPTS.streamQuietMs);
    expect(d.chargingSessions).toEqual([{ vehicleno: V, start: T0, end: T0 + 70_000, durationS: 70, socStart: 10, socEnd: 12 }]);
    expect(pendingCount(s)).toBe(0);
  });
});

// ---- serialisation and bounds ------------------------------------------------------------------

describe('state', () => {
  it('a round trip through its bytes after every record changes nothing', () => {
    const { records } = meridianDrive();
    const charge: EventInput[] = [];
    for (let j = 0; j <= 60; j++) charge.push(can(T0 + 6_000_000 + j * 10_000, { soc: 40 + j / 3, battery_voltage: 50, current: 25, load_status: 2 }));
    charge.push(can(T0 + 6_700_000, { load_status: 0 }));
    const rs = sorted([...records, ...charge, can(T0 + 7_000, { alert_thermal_runaway: 1 })]);
    const plain = runOrdered(rs);
    expect(plain.trips).toHaveLength(1);
    expect(plain.chargingSessions).toHaveLength(1);
    expect(runOrdered(rs, OPTS, true)).toEqual(plain);
  });

  it('is bounded: about 30 s pending at 1 gps + 1 CAN a second stays under 8 KB; each stream’s buffer is capped', () => {
    const s = newState();
    let most = 0;
    let longest = 0;
    const gpsPlan = STREAMS.get('gps')!;
    const canPlan = STREAMS.get('can')!;
    for (let j = 0; j < 600; j++) {
      const t = T0 + j * 1000;
      const c: Record<string, number> = { soc: 80, battery_voltage: 52.37, current: -31.52, load_status: 1, power: -1650, soh: 97, cell_voltage_01: 3.312 };
      for (const a of ALARM_FIELDS) c[a] = 0;
      ingest(V, s, [gps(t, 12.971234 + j * 0.0002, 77.594321, 71.3, 1), can(t + 400, c)], t + 500);
      const pendingBytes = s.streams[gpsPlan.streamId]!.pending.records().reduce((n, r) => n + writePending(gpsPlan, r).length, 0) + s.streams[canPlan.streamId]!.pending.records().reduce((n, r) => n + writePending(canPlan, r).length, 0);
      most = Math.max(most, writeCommitted(s).length + pendingBytes);
      longest = Math.max(longest, pendingCount(s));
    }
    expect(longest).toBeLessThanOrEqual(62);
    expect(most).toBeLessThan(8192);

    const capped = newState();
    const opts = { ...OPTS, windowMs: 1e9, maxPending: 100 };
    const d = ingest(V, capped, Array.from({ length: 500 }, (_, j) => can(T0 + j, { soc: j % 100 })), T0 + 500, opts);
    expect(d.forced).toBe(400);
    expect(pendingCount(capped)).toBe(100);
  });

  it('reads every field of the schema the detectors name', () => {
    for (const a of ALARM_FIELDS) expect(DERIVE_FIELDS).toContain(a);
    for (const f of ['ignstatus', 'speed', 'soc', 'battery_voltage', 'current', 'load_status', 'lat', 'lng']) expect(DERIVE_FIELDS).toContain(f);
  });
});

describe('ids', () => {
  it('are the first 32 hex digits of sha256 over vehicle, kind and time', () => {
    const sha = (t: string) => createHash('sha256').update(t).digest('hex').slice(0, 32);
    expect(eventId({ vehicleno: V, event: 'ignition_on', time: T0 })).toBe(sha(`${V}\nignition_on\n${T0}`));
    expect(tripId({ vehicleno: V, start: T0 })).toBe(sha(`${V}\ntrip\n${T0}`));
    expect(chargingSessionId({ vehicleno: V, start: T0 })).toBe(sha(`${V}\ncharging\n${T0}`));
    expect(eventId({ vehicleno: V, event: 'ignition_on', time: T0 })).toMatch(/^[0-9a-f]{32}$/);
  });

  it('geo: haversine along a meridian is R·Δφ', () => {
    expect(haversineM(10, 77, 11, 77)).toBeCloseTo((MEAN_EARTH_RADIUS_M * Math.PI) / 180, 6);
    expect(haversineM(0, 0, 0, 180)).toBeCloseTo(MEAN_EARTH_RADIUS_M * Math.PI, 3);
  });
});

