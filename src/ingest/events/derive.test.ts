import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mulberry32 } from '../../upstream/emulator/prng.js';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import {
  DEFAULT_DERIVE_OPTIONS,
  DERIVE_FIELDS,
  inputOf,
  eventId,
  flush,
  ingest,
  newState,
  pendingCount,
  sessionId,
  tripId,
  type DeriveOptions,
  type Derived,
  type DerivedEvent,
  type Trip,
  type ChargingSession,
  type EventInput,
  type VehicleState,
} from './derive.js';
import { MEAN_EARTH_RADIUS_M, haversineM } from './geo.js';
import { restore, writeCommitted, writePending } from './wire.js';

/** A state as Redis keeps it, read back (store.ts). */
const roundTrip = (s: VehicleState): VehicleState => restore(writeCommitted(s), s.pending.map(writePending));

const V = 'KA01AB1234';
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);
const OPTS = DEFAULT_DERIVE_OPTIONS;

/** An input, with the fields it was made from (for the tests' own look-ups). */
type Named = EventInput & { fields: Record<string, number> };
const named = (type: string, time: number, fields: Record<string, number>): Named => ({ ...inputOf(type, time, fields), fields });
const gps = (time: number, lat: number, lng: number, speed: number, ignstatus: number): Named => named('gps', time, { lat, lng, alti: 900, speed, ignstatus });
const can = (time: number, fields: Record<string, number>): Named => named('can', time, fields);

/** Everything a sequence of calls derived, in the order derived. */
function collect(parts: readonly Derived[]): Derived {
  const all = { events: [] as DerivedEvent[], trips: [] as Trip[], sessions: [] as ChargingSession[], late: 0, duplicates: 0, forced: 0 };
  for (const d of parts) {
    all.events.push(...d.events);
    all.trips.push(...d.trips);
    all.sessions.push(...d.sessions);
    all.late += d.late;
    all.duplicates += d.duplicates;
    all.forced += d.forced;
  }
  return all;
}

/** Ordered delivery, one record a call, then a flush once idle; optionally a round trip through Redis's bytes after every call. */
function runOrdered(records: readonly EventInput[], opts: DeriveOptions = OPTS, roundTripped = false): Derived {
  let s: VehicleState = newState();
  const parts: Derived[] = [];
  let now = 0;
  for (const r of records) {
    parts.push(ingest(V, s, [r], (now += 1), opts));
    if (roundTripped) s = roundTrip(s);
  }
  parts.push(flush(V, s, now + opts.idleMs, opts));
  expect(pendingCount(s)).toBe(0);
  return collect(parts);
}

const sorted = <T extends EventInput>(rs: T[]): T[] => rs.sort((a, b) => a.time - b.time || (a.type === b.type ? 0 : a.type === 'can' ? -1 : 1));

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

describe('trips', () => {
  it('measures a drive along a meridian: distance, duration, speed, ends, soc from interleaved CAN', () => {
    const { records, start, end } = meridianDrive();
    const d = runOrdered(records);
    expect(d.trips).toHaveLength(1);
    const trip = d.trips[0]!;
    const exact = (MEAN_EARTH_RADIUS_M * Math.PI) / 180; // 1° of a meridian on the sphere
    expect(Math.abs(trip.distanceM - exact) / exact).toBeLessThan(0.005);
    expect(trip.distanceM).toBeCloseTo(exact, 2); // in fact to the centimetre: haversine is exact along a meridian
    expect(trip).toMatchObject({ vehicleno: V, start, end, durationS: 5000, maxSpeedKmh: 97.5, startLat: 10, startLng: 77, endLng: 77, socStart: 91, socEnd: 79 });
    expect(trip.endLat).toBeCloseTo(11, 9);
    expect(d.events.map((e) => [e.event, e.time, e.value])).toEqual([
      ['ignition_on', start, 1],
      ['ignition_off', end, 0],
    ]);
    expect(d.events[0]!.fields).toEqual({ lat: 10, lng: 77, speed: 80, soc: 91 });
    expect(d.events[1]!.fields).toMatchObject({ lng: 77, speed: 80, soc: 79 });
    expect(d.late + d.duplicates + d.forced).toBe(0);
  });

  it('skips a GPS jump: not in the distance, the ends or the maximum speed, the next step from the last accepted fix', () => {
    const { records } = meridianDrive();
    const plain = runOrdered(records).trips[0]!;
    const at = records.findIndex((r) => r.type === 'gps' && r.fields.lat! > 10.5);
    const jump = gps(records[at]!.time - 300, 10.9, 77.3, 250, 1);
    const jumped = runOrdered(sorted([...records, jump])).trips[0]!;
    expect(jumped).toEqual(plain);
    // A jump just before ignition turns off.
    const last = records.findIndex((r) => r.fields.ignstatus === 0 && r.time > T0 + 20_000);
    const endJump = gps(records[last]!.time - 200, 40, 77, 0, 1);
    expect(runOrdered(sorted([...records, endJump])).trips[0]).toEqual(plain);
  });

  it('drops trips below the minimum duration or distance, and keeps the ignition events', () => {
    const short: EventInput[] = [];
    // 30 s at 60 km/h (500 m): too short in time.
    for (let j = 0; j <= 30; j++) short.push(gps(T0 + j * 1000, 10 + (j * 500) / 30 / 111_195, 77, 60, j === 30 ? 0 : 1));
    // 120 s creeping 50 m: too short in distance.
    for (let j = 0; j <= 120; j++) short.push(gps(T0 + 100_000 + j * 1000, 10.005 + (j * 50) / 120 / 111_195, 77, 2, j === 120 ? 0 : 1));
    // 90 s, 600 m: a trip.
    for (let j = 0; j <= 90; j++) short.push(gps(T0 + 300_000 + j * 1000, 10.006 + (j * 600) / 90 / 111_195, 77, 30, j === 90 ? 0 : 1));
    const d = runOrdered(short);
    expect(d.events.map((e) => e.event)).toEqual(['ignition_on', 'ignition_off', 'ignition_on', 'ignition_off', 'ignition_on', 'ignition_off']);
    expect(d.trips).toHaveLength(1);
    expect(d.trips[0]!.start).toBe(T0 + 300_000);
    expect(d.trips[0]!.distanceM).toBeCloseTo(600, 0);
    expect(d.trips[0]!.socStart).toBeUndefined();
    // Thresholds are options.
    expect(runOrdered(short, { ...OPTS, tripMinDurationMs: 10_000, tripMinDistanceM: 10 }).trips).toHaveLength(3);
  });

  it('a first gps record with ignition off emits nothing; with ignition on, ignition_on', () => {
    expect(runOrdered([gps(T0, 10, 77, 0, 0)]).events).toEqual([]);
    expect(runOrdered([gps(T0, 10, 77, 5, 1)]).events).toEqual([{ vehicleno: V, event: 'ignition_on', time: T0, value: 1, fields: { lat: 10, lng: 77, speed: 5 } }]);
  });

  it('soc at the start is the first within the trip when none came before', () => {
    const rs: EventInput[] = [];
    for (let j = 0; j <= 120; j++) rs.push(gps(T0 + j * 1000, 10 + j * 0.0001, 77, 40, j === 120 ? 0 : 1));
    rs.push(can(T0 + 30_500, { soc: 70 }), can(T0 + 60_500, { soc: 69 }));
    const trip = runOrdered(sorted(rs)).trips[0]!;
    expect(trip).toMatchObject({ socStart: 70, socEnd: 69 });
  });
});

// ---- alarms ------------------------------------------------------------------------------------

describe('alarms', () => {
  it('raises what a first record has at 1, then each flip exactly once', () => {
    const rs = [
      can(T0, { alert_over_temp: 1, alert_short_circuit: 0, soc: 50 }),
      can(T0 + 1000, { alert_over_temp: 1 }),
      can(T0 + 2000, { soc: 49 }), // carries no flag: flips nothing (absent is not 0)
      can(T0 + 3000, { alert_over_temp: 0, alert_short_circuit: 1, battery_voltage: 51.5, current: -3 }),
      can(T0 + 4000, { alert_short_circuit: 0 }),
      can(T0 + 5000, { alert_short_circuit: 1, alert_under_temp: 0 }),
    ];
    const d = runOrdered(rs);
    expect(d.events).toEqual([
      { vehicleno: V, event: 'alert_over_temp_raised', time: T0, value: 1, fields: { soc: 50 } },
      { vehicleno: V, event: 'alert_over_temp_cleared', time: T0 + 3000, value: 0, fields: { battery_voltage: 51.5, current: -3 } },
      { vehicleno: V, event: 'alert_short_circuit_raised', time: T0 + 3000, value: 1, fields: { battery_voltage: 51.5, current: -3 } },
      { vehicleno: V, event: 'alert_short_circuit_cleared', time: T0 + 4000, value: 0, fields: {} },
      { vehicleno: V, event: 'alert_short_circuit_raised', time: T0 + 5000, value: 1, fields: {} },
    ]);
  });

  it('knows all fifteen flags of the schema', () => {
    expect(ALARM_FIELDS).toHaveLength(15);
    const all = Object.fromEntries(ALARM_FIELDS.map((a) => [a, 1]));
    const d = runOrdered([can(T0, all), can(T0 + 1000, Object.fromEntries(ALARM_FIELDS.map((a) => [a, 0])))]);
    expect(d.events.map((e) => e.event)).toEqual([...ALARM_FIELDS.map((a) => `${a}_raised`), ...ALARM_FIELDS.map((a) => `${a}_cleared`)]);
    for (const a of ALARM_FIELDS) expect(DERIVE_FIELDS).toContain(a);
  });
});

// ---- charging ----------------------------------------------------------------------------------

/** Idle at 40 %, then 600 s of charging at 50 V with the current rising 20 → 40 A (1000 → 2000 W), then idle. */
function charge(extra: Partial<{ sign: number; withLoad: boolean }> = {}): EventInput[] {
  const sign = extra.sign ?? 1;
  const withLoad = extra.withLoad ?? true;
  const rs: EventInput[] = [can(T0, { soc: 40, current: -0.4 * sign, ...(withLoad ? { load_status: 0 } : {}) })];
  for (let j = 0; j <= 60; j++) {
    const t = T0 + 10_000 + j * 10_000;
    const f: Record<string, number> = { soc: 40 + Math.floor(j / 3), battery_voltage: 50, current: sign * (20 + j / 3) };
    if (withLoad) f.load_status = 2;
    if (j === 31) delete f.battery_voltage; // a record without voltage: the trapezoid spans it
    rs.push(can(t, f));
  }
  rs.push(can(T0 + 620_000, { soc: 61, current: -0.4 * sign, battery_voltage: 50, ...(withLoad ? { load_status: 0 } : {}) }));
  return rs;
}

describe('charging', () => {
  it('a session: ends, soc at each, energy as by hand', () => {
    const d = runOrdered(charge());
    // Power rises linearly 1000 → 2000 W over the 600 s from the first charging record to the last: the
    // trapezoids are exact, 1500 W × 600 s = 900 kJ = 250 Wh.
    expect(d.sessions).toHaveLength(1);
    const s = d.sessions[0]!;
    expect(s).toMatchObject({ vehicleno: V, start: T0 + 10_000, end: T0 + 620_000, durationS: 610, socStart: 40, socEnd: 61 });
    expect(s.energyWh).toBeCloseTo(250, 9);
    expect(d.events.map((e) => [e.event, e.time])).toEqual([
      ['charging_started', T0 + 10_000],
      ['charging_stopped', T0 + 620_000],
    ]);
    expect(d.events[0]!.fields).toEqual({ soc: 40, battery_voltage: 50, current: 20 });
    expect(d.events[1]!.fields.durationS).toBe(610);
    expect(d.events[1]!.fields.energyWh).toBeCloseTo(250, 9);
  });

  it('without load_status, the current decides: the emulator charges positive (the default)', () => {
    expect(runOrdered(charge({ withLoad: false })).sessions[0]!.energyWh).toBeCloseTo(250, 9);
    expect(runOrdered(charge({ withLoad: false, sign: -1 })).sessions).toEqual([]);
    const negative = { ...OPTS, chargingCurrentSign: 'negative' as const };
    expect(runOrdered(charge({ withLoad: false }), negative).sessions).toEqual([]);
    expect(runOrdered(charge({ withLoad: false, sign: -1 }), negative).sessions[0]!.energyWh).toBeCloseTo(250, 9);
    // load_status wins over the current's sign.
    expect(runOrdered(charge({ sign: -1 })).sessions).toHaveLength(1);
    // Below the minimum current: idle, not charging.
    const trickle = [can(T0, { current: 0.3 }), can(T0 + 100_000, { current: 0.4 }), can(T0 + 200_000, { current: -1 })];
    expect(runOrdered(trickle).events).toEqual([]);
  });

  it('drops a session shorter than the minimum, keeps its events; no energy without two powers', () => {
    const d = runOrdered([can(T0, { load_status: 2, soc: 50 }), can(T0 + 30_000, { load_status: 2 }), can(T0 + 50_000, { load_status: 0 })]);
    expect(d.sessions).toEqual([]);
    expect(d.events.map((e) => e.event)).toEqual(['charging_started', 'charging_stopped']);
    const long = runOrdered([can(T0, { load_status: 2, soc: 50 }), can(T0 + 90_000, { load_status: 0 })]);
    expect(long.sessions).toEqual([{ vehicleno: V, start: T0, end: T0 + 90_000, durationS: 90, socStart: 50, socEnd: 50 }]);
  });
});

// ---- exactly once, whatever order --------------------------------------------------------------

/** A vehicle's day in miniature from a seed: parked, drives (with jumps and ignition flickers), charges, alarm flaps; gps and CAN about 1/s each. */
function history(seed: number): EventInput[] {
  const rnd = mulberry32(seed);
  const out: EventInput[] = [];
  let lat = 12.97;
  let lng = 77.59;
  let soc = 30 + Math.floor(rnd() * 50);
  const flags = ALARM_FIELDS.map(() => 0);
  let base = T0 + Math.floor(rnd() * 1000);
  const segments = 6 + Math.floor(rnd() * 8);
  for (let g = 0; g < segments; g++) {
    const kind = (['parked', 'drive', 'drive', 'charge'] as const)[Math.floor(rnd() * 4)]!;
    const seconds = 20 + Math.floor(rnd() * 250);
    const bearing = rnd() * 2 * Math.PI;
    const speed = 10 + rnd() * 80;
    for (let j = 0; j < seconds; j++, base += 1000) {
      const tg = base + Math.floor(rnd() * 1000);
      const tc = rnd() < 0.1 ? tg : base + Math.floor(rnd() * 1000); // sometimes at the same instant
      if (kind === 'drive') {
        const km = speed / 3600;
        lat += (km * Math.cos(bearing)) / 111.32;
        lng += (km * Math.sin(bearing)) / (111.32 * Math.cos((lat * Math.PI) / 180));
      }
      const ign = kind === 'drive' && !(rnd() < 0.01) ? 1 : 0;
      if (rnd() < 0.01) out.push(gps(tg, lat + 0.5, lng, 0, ign)); // a jump
      else if (rnd() < 0.97) out.push(gps(tg, Math.round(lat * 1e6) / 1e6, Math.round(lng * 1e6) / 1e6, kind === 'drive' ? Math.round(speed * 10) / 10 : 0, ign));
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

/** A delivery of `records`: each delayed by less than W of record time, some twice, cut into batches; serialised and parsed now and then. */
function deliver(records: readonly EventInput[], seed: number, opts: DeriveOptions): { derived: Derived; copies: number } {
  const rnd = mulberry32(seed ^ 0x5bd1e995);
  const arrivals: Array<{ at: number; tie: number; r: EventInput }> = [];
  let copies = 0;
  for (const r of records) {
    arrivals.push({ at: r.time + Math.floor(rnd() * (opts.windowMs - 1)), tie: rnd(), r });
    if (rnd() < 0.05) {
      copies++;
      arrivals.push({ at: r.time + Math.floor(rnd() * (opts.windowMs - 1)), tie: rnd(), r });
    }
  }
  arrivals.sort((a, b) => a.at - b.at || a.tie - b.tie);
  let s = newState();
  const parts: Derived[] = [];
  let now = 0;
  for (let j = 0; j < arrivals.length; ) {
    const n = 1 + Math.floor(rnd() * 25);
    const batch = arrivals.slice(j, j + n).map((a) => a.r);
    j += n;
    parts.push(ingest(V, s, batch, (now += 10), opts));
    // Round trips through the bytes store.ts keeps (the committed part and each pending record).
    if (rnd() < 0.1) s = roundTrip(s);
  }
  parts.push(flush(V, s, now + opts.idleMs, opts));
  return { derived: collect(parts), copies };
}

describe('exactly once, whatever order', () => {
  it('any delivery within the window, batched, duplicated, round-tripped, derives what ordered delivery does', () => {
    const seen = { trips: 0, sessions: 0, alarms: 0, ignitions: 0 };
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.constantFrom(5_000, 30_000), (seed, windowMs) => {
        const opts = { ...OPTS, windowMs, idleMs: windowMs };
        const records = history(seed);
        const ordered = runOrdered(records, opts);
        const { derived, copies } = deliver(records, seed, opts);
        expect(derived.events).toEqual(ordered.events);
        expect(derived.trips).toEqual(ordered.trips);
        expect(derived.sessions).toEqual(ordered.sessions);
        expect(derived.late).toBe(0);
        expect(derived.duplicates).toBe(copies);
        expect(derived.forced).toBe(0);
        seen.trips += ordered.trips.length;
        seen.sessions += ordered.sessions.length;
        seen.alarms += ordered.events.filter((e) => e.event.startsWith('alert_')).length;
        seen.ignitions += ordered.events.filter((e) => e.event.startsWith('ignition_')).length;
      }),
      { numRuns: 40 },
    );
    // The histories exercised every kind of output.
    expect(seen.trips).toBeGreaterThan(20);
    expect(seen.sessions).toBeGreaterThan(10);
    expect(seen.alarms).toBeGreaterThan(100);
    expect(seen.ignitions).toBeGreaterThan(100);
  });

  it('a record older than the window is late: counted, flips nothing', () => {
    const rs = [can(T0, { alert_over_temp: 0, soc: 50 }), ...Array.from({ length: 60 }, (_, j) => can(T0 + 1000 + j * 1000, { soc: 50 }))];
    const s = newState();
    const first = ingest(V, s, rs, 1);
    expect(first.events).toEqual([]);
    // 61 s of records, W = 30 s: T0 + 30 s is committed; a record at T0 + 20.5 s arrives now.
    const late = ingest(V, s, [can(T0 + 20_500, { alert_over_temp: 1, load_status: 2 })], 2);
    expect(late).toMatchObject({ late: 1, duplicates: 0, events: [] });
    const rest = flush(V, s, 2 + OPTS.idleMs);
    expect(rest.events).toEqual([]);
    expect(pendingCount(s)).toBe(0);
  });

  it('a committed record delivered again is a duplicate while it is among the last 64 committed, then late', () => {
    const rs = Array.from({ length: 200 }, (_, j) => can(T0 + j * 1000, { soc: 50 + (j % 2) }));
    const s = newState();
    ingest(V, s, rs, 1);
    // Committed: T0 … T0 + 169 s; the ring holds the last 64 of them.
    expect(ingest(V, s, [rs[169]!, rs[106]!], 2)).toMatchObject({ duplicates: 2, late: 0 });
    expect(ingest(V, s, [rs[105]!], 3)).toMatchObject({ duplicates: 0, late: 1 });
    // And pending ones are duplicates too, within a batch or across.
    expect(ingest(V, s, [rs[199]!, rs[180]!, rs[180]!], 4)).toMatchObject({ duplicates: 3, late: 0 });
  });

  it('flush commits only once the vehicle has been idle for idleMs of wall time', () => {
    const s = newState();
    ingest(V, s, [can(T0, { load_status: 2, soc: 10 }), can(T0 + 70_000, { load_status: 0, soc: 12 })], 1_000);
    expect(pendingCount(s)).toBe(1);
    expect(flush(V, s, 1_000 + OPTS.idleMs - 1).events).toEqual([]);
    expect(pendingCount(s)).toBe(1);
    const d = flush(V, s, 1_000 + OPTS.idleMs);
    expect(d.sessions).toEqual([{ vehicleno: V, start: T0, end: T0 + 70_000, durationS: 70, socStart: 10, socEnd: 12 }]);
    expect(pendingCount(s)).toBe(0);
  });

  it('ignores records of unknown types and records carrying nothing it reads', () => {
    const s = newState();
    const d = ingest(V, s, [named('fuel', T0, {}), can(T0, { cell_voltage_01: 3.3 }), can(T0 + 0.5, { soc: 5 })], 1);
    expect(d).toMatchObject({ late: 0, duplicates: 0 });
    expect(pendingCount(s)).toBe(0);
  });
});

// ---- serialisation and bounds ------------------------------------------------------------------

describe('state', () => {
  it('a round trip through its bytes mid-stream changes nothing', () => {
    const { records } = meridianDrive();
    const rs = sorted([...records, ...charge().map((r) => ({ ...r, time: r.time + 6_000_000 })), can(T0 + 7_000, { alert_thermal_runaway: 1 })]);
    const plain = runOrdered(rs);
    expect(plain.trips).toHaveLength(1);
    expect(plain.sessions).toHaveLength(1);
    expect(runOrdered(rs, OPTS, true)).toEqual(plain);
  });

  it('is bounded: about 30 s pending at 1 gps + 1 CAN a second stays under 4 KB; the buffer is capped', () => {
    const s = newState();
    let most = 0;
    let longest = 0;
    for (let j = 0; j < 600; j++) {
      const t = T0 + j * 1000;
      const c: Record<string, number> = { soc: 80, battery_voltage: 52.37, current: -31.52, load_status: 1, power: -1650, soh: 97, cell_voltage_01: 3.312 };
      for (const a of ALARM_FIELDS) c[a] = 0;
      ingest(V, s, [gps(t, 12.971234 + j * 0.0002, 77.594321, 71.3, 1), can(t + 400, c)], t);
      most = Math.max(most, writeCommitted(s).length + s.pending.reduce((n, r) => n + writePending(r).length, 0));
      longest = Math.max(longest, pendingCount(s));
    }
    expect(longest).toBeLessThanOrEqual(62);
    expect(most).toBeLessThan(4096);

    const capped = newState();
    const opts = { ...OPTS, windowMs: 1e9, maxPending: 100 };
    const d = ingest(V, capped, Array.from({ length: 500 }, (_, j) => can(T0 + j, { soc: j % 100 })), 1, opts);
    expect(d.forced).toBe(400);
    expect(pendingCount(capped)).toBe(100);
  });
});

describe('ids', () => {
  it('are the first 32 hex digits of sha256 over vehicle, kind and time', () => {
    const sha = (t: string) => createHash('sha256').update(t).digest('hex').slice(0, 32);
    expect(eventId({ vehicleno: V, event: 'ignition_on', time: T0 })).toBe(sha(`${V}\nignition_on\n${T0}`));
    expect(tripId({ vehicleno: V, start: T0 })).toBe(sha(`${V}\ntrip\n${T0}`));
    expect(sessionId({ vehicleno: V, start: T0 })).toBe(sha(`${V}\ncharging\n${T0}`));
    expect(eventId({ vehicleno: V, event: 'ignition_on', time: T0 })).toMatch(/^[0-9a-f]{32}$/);
  });

  it('geo: haversine along a meridian is R·Δφ', () => {
    expect(haversineM(10, 77, 11, 77)).toBeCloseTo((MEAN_EARTH_RADIUS_M * Math.PI) / 180, 6);
    expect(haversineM(0, 0, 0, 180)).toBeCloseTo(MEAN_EARTH_RADIUS_M * Math.PI, 3);
  });
});
