/**
 * Fleet status on a real Redis and a real influxd, with a clock the test controls: last-seen times,
 * the silent list and counts, the status points, and the dashboard's silent-vehicles query on them.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { influxQL } from '../../devstack/influxd.js';
import type { WrittenRecord } from '../../telemetry/record.js';
import { InfluxSink } from '../write/influx.js';
import type { PointSink } from '../write/sink.js';
import { writeStatusChanges, type SilentAfter, type StatusEvent } from './changes.js';
import { FleetState } from './state.js';
import { fleetKeys } from '../queue/keys.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 25, 0, 0, 0);
const THRESHOLDS: SilentAfter[] = [
  { label: '15m', ms: 15 * 60_000 },
  { label: '1h', ms: HOUR },
];

const gps = (vehicleno: string, time: number, lat = 12.5, lng = 77.5): WrittenRecord => ({ vehicleno, type: 'gps', time, lat, lng });
const can = (vehicleno: string, time: number): WrittenRecord => ({ vehicleno, type: 'can', time });

let redis: Redis;
let db: string;
let sink: InfluxSink;
const query = (q: string) => influxQL<Record<string, unknown>>(inject('influxRawUrl'), db, q);

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'));
  db = `fleet_${randomBytes(4).toString('hex')}`;
  await influxQL(inject('influxRawUrl'), '', `CREATE DATABASE "${db}"`);
  sink = new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 });
});
afterAll(async () => {
  await sink?.close();
  redis?.disconnect();
});

/** A vehicle event's id (src/ingest/events): its vehicle, event and time. */
const eventId = (e: StatusEvent) => createHash('sha256').update(`${e.vehicleno}\n${e.event}\n${e.time}`).digest('hex').slice(0, 32);

const fresh = (partitions = 2) => new FleetState(redis, Array.from({ length: partitions }, () => fleetKeys(`fleet-test-${randomBytes(4).toString('hex')}{p}`)));

describe('last seen', () => {
  it('keeps the newest time and the newest position whatever order jobs are written in', async () => {
    const fleet = fresh(1);
    await fleet.record(0, [gps('A', T0 + 3_000, 10, 20), can('A', T0 + 5_000), gps('B', T0 + 1_000)]);
    // An older job arriving later (a retried one, a buffer) moves nothing back.
    await fleet.record(0, [gps('A', T0 + 2_000, 11, 21), can('A', T0 + 4_000)]);
    expect(await fleet.vehicle(0, 'A')).toEqual({ vehicleno: 'A', lastSeen: T0 + 5_000, position: { time: T0 + 3_000, lat: 10, lng: 20 } });
    await fleet.record(0, [gps('A', T0 + 9_000, 12, 22)]);
    expect(await fleet.vehicle(0, 'A')).toEqual({ vehicleno: 'A', lastSeen: T0 + 9_000, position: { time: T0 + 9_000, lat: 12, lng: 22 } });
    // A vehicle that sent only CAN has a last-seen time and no position; one never seen is unknown.
    await fleet.record(0, [can('C', T0)]);
    expect(await fleet.vehicle(0, 'C')).toEqual({ vehicleno: 'C', lastSeen: T0 });
    expect(await fleet.vehicle(0, 'nobody')).toBeUndefined();
  });

  it('counts and lists the silent vehicles of every partition, longest silent first', async () => {
    const fleet = fresh(2);
    await fleet.record(0, [gps('P0-old', T0 - 5 * HOUR), gps('P0-new', T0 - 60_000)]);
    await fleet.record(1, [can('P1-old', T0 - 2 * HOUR), gps('P1-edge', T0 - HOUR)]);
    expect(await fleet.counts(T0, [15 * 60_000, HOUR, 3 * HOUR])).toEqual({ known: 4, silent: [3, 2, 1] });
    // Exactly an hour ago is not yet silent for an hour.
    expect((await fleet.silent(T0, HOUR, 100)).map((v) => [v.vehicleno, v.lastSeen])).toEqual([
      ['P0-old', T0 - 5 * HOUR],
      ['P1-old', T0 - 2 * HOUR],
    ]);
    expect((await fleet.silent(T0, HOUR, 1)).map((v) => v.vehicleno)).toEqual(['P0-old']);
  });

  it('costs about 200 bytes of Redis per vehicle, 260 with the return from its latest silence', async () => {
    const fleet = fresh(1);
    const k = fleet.partitions[0]!;
    const n = 2_000;
    const plate = (i: number) => `KA01AB${String(i).padStart(4, '0')}`;
    await fleet.record(0, Array.from({ length: n }, (_, i) => gps(plate(i), T0 + i, 12.971234, 77.594567)), T0 + n);
    const usage = async (keys: string[]) => (await Promise.all(keys.map((key) => redis.memory('USAGE', key)))).reduce((s: number, b) => s + Number(b), 0);
    const perVehicle = (await usage([k.seen, k.positions])) / n;
    expect(perVehicle).toBeGreaterThan(100);
    expect(perVehicle).toBeLessThan(260);
    // Every vehicle back from an hour's silence, twice: one `resumed` field each, whatever the number of silences.
    for (const h of [2, 4]) await fleet.record(0, Array.from({ length: n }, (_, i) => gps(plate(i), T0 + h * HOUR + i, 12.971234, 77.594567)), T0 + h * HOUR + n);
    expect(await redis.hlen(k.resumed)).toBe(n);
    const withReturns = (await usage([k.seen, k.positions, k.resumed])) / n;
    expect(withReturns).toBeLessThan(300);
  });

  it('never holds a vehicle’s last-seen ahead of the clock, so a record stamped ahead does not delay its silence', async () => {
    const fleet = fresh(1);
    const at = (min: number) => T0 + min * 60_000;
    // Recorded at minute 0, a record stamped ten minutes ahead (plausibility admits up to 15): seen at minute 0.
    await fleet.record(0, [gps('F', at(10), 10, 20), can('G', at(0))], at(0));
    expect(await fleet.vehicle(0, 'F')).toEqual({ vehicleno: 'F', lastSeen: at(0), position: { time: at(0), lat: 10, lng: 20 } });
    // Silent for 15 minutes at minute 16, with G, which really last reported at minute 0: not only at minute 26.
    expect((await fleet.silent(at(16), 15 * 60_000, 100)).map((v) => [v.vehicleno, v.lastSeen])).toEqual([
      ['F', at(0)],
      ['G', at(0)],
    ]);
    // (Its points go nowhere: the dashboard test below lists every silent vehicle of the database.)
    const nowhere: PointSink = { write: async () => {}, ready: async () => true, close: async () => {} };
    const told: StatusEvent[] = [];
    await writeStatusChanges(fleet, nowhere, THRESHOLDS, at(16), async (e) => void told.push(...e));
    expect(told.map((e) => [e.vehicleno, e.event, e.time])).toEqual([
      ['F', 'silent', at(15)],
      ['G', 'silent', at(15)],
    ]);
    // A record recorded later moves it on as any would, to its own time once that is behind the clock.
    await fleet.record(0, [gps('F', at(20), 11, 21)], at(21));
    expect(await fleet.vehicle(0, 'F')).toEqual({ vehicleno: 'F', lastSeen: at(20), position: { time: at(20), lat: 11, lng: 21 } });
  });
});

describe('status points in InfluxDB', () => {
  it('writes each crossing once, and the dashboard lists exactly the silent vehicles', async () => {
    const fleet = fresh(2);
    const at = (h: number) => T0 + h * HOUR;
    // A reports until hour 1, then falls silent for hours; B reports throughout; C falls silent and comes back.
    await fleet.record(0, [gps('A', at(1), 10, 20)]);
    await fleet.record(1, [gps('B', at(1)), gps('C', at(1))]);

    const first = await writeStatusChanges(fleet, sink, THRESHOLDS, at(1.5));
    expect(first).toEqual({ wentSilent: { '15m': 3, '1h': 0 }, cameBack: { '15m': 0, '1h': 0 }, known: 3, silent: { '15m': 3, '1h': 0 } });
    // Nothing changed: nothing new is written for the vehicles.
    expect((await writeStatusChanges(fleet, sink, THRESHOLDS, at(1.6))).wentSilent).toEqual({ '15m': 0, '1h': 0 });

    await fleet.record(1, [gps('B', at(2.9)), can('C', at(2.95))]);
    const third = await writeStatusChanges(fleet, sink, THRESHOLDS, at(3));
    expect(third).toEqual({ wentSilent: { '15m': 0, '1h': 1 }, cameBack: { '15m': 2, '1h': 0 }, known: 3, silent: { '15m': 1, '1h': 1 } });

    const status = await query(`SELECT "silent", "last_seen" FROM "fleet_status" WHERE "vehicleno" = 'A' GROUP BY "after"`);
    expect(status.map((r) => [r.after, r.time, r.silent, r.last_seen])).toEqual([
      ['15m', at(1.5), 1, at(1)],
      ['1h', at(3), 1, at(1)],
    ]);

    const fleetDash = JSON.parse(readFileSync('deploy/grafana/dashboards/fleet.json', 'utf8')) as { panels: Array<{ title: string; targets: Array<{ query: string }> }> };
    const panel = fleetDash.panels.find((p) => p.title.startsWith('Vehicles silent'))!;
    const q = panel.targets[0]!.query.replaceAll('$vehicle', '.*');
    const listed = await query(q);
    expect(listed.map((r) => [r.vehicleno, r.last_seen])).toEqual([['A', at(1)]]);
    const q15 = q.replace(`"after" = '1h'`, `"after" = '15m'`);
    expect((await query(q15)).map((r) => r.vehicleno)).toEqual(['A']);

    const counts = await query(`SELECT last("vehicles") AS "vehicles", last("silent") AS "silent", last("reporting") AS "reporting" FROM "fleet" GROUP BY "after"`);
    expect(counts.map((r) => [r.after, r.vehicles, r.silent, r.reporting])).toEqual([
      ['15m', 3, 1, 2],
      ['1h', 3, 1, 2],
    ]);
  });

  it('writes a silent vehicle again when late records move its last seen, telling no event: the panel shows its true last seen', async () => {
    const fleet = fresh(1);
    const at = (h: number) => T0 + h * HOUR;
    await fleet.record(0, [gps('S', at(1))], at(1));
    const told: StatusEvent[] = [];
    const events = async (e: StatusEvent[]) => void told.push(...e);
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(2.5), events);
    // A buffer uploaded late: records up to 1.25 h, still more than an hour before the clock.
    await fleet.record(0, [gps('S', at(1.25))], at(2.6));
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(2.7), events);
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(2.8), events);
    expect(told.map((e) => [e.event, e.fields.last_seen])).toEqual([
      ['silent', at(1)],
      ['silent', at(1)],
    ]);
    const status = await query(`SELECT "silent", "last_seen" FROM "fleet_status" WHERE "vehicleno" = 'S' AND "after" = '1h'`);
    expect(status.map((r) => [r.time, r.silent, r.last_seen])).toEqual([
      [at(2.5), 1, at(1)],
      [at(2.7), 1, at(1.25)],
    ]);
    const fleetDash = JSON.parse(readFileSync('deploy/grafana/dashboards/fleet.json', 'utf8')) as { panels: Array<{ title: string; targets: Array<{ query: string }> }> };
    const panel = fleetDash.panels.find((p) => p.title.startsWith('Vehicles silent'))!;
    const listed = await query(panel.targets[0]!.query.replaceAll('$vehicle', '^S$'));
    expect(listed.map((r) => [r.vehicleno, r.last_seen])).toEqual([['S', at(1.25)]]);
  });

  it('tells each crossing as a silent event at the instant it happened, and a return as one back event, for the longest silence it ended', async () => {
    const fleet = fresh(1);
    const at = (h: number) => T0 + h * HOUR;
    await fleet.record(0, [gps('E', at(1))]);
    const told: StatusEvent[] = [];
    const events = async (e: StatusEvent[]) => void told.push(...e);
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(1.5), events);
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(2.5), events);
    await fleet.record(0, [gps('E', at(2.75))]);
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(3), events);
    expect(told.map((e) => [e.event, e.time, e.fields.after_s])).toEqual([
      ['silent', at(1) + 15 * 60_000, 900],
      ['silent', at(2), 3600],
      ['back', at(2.75), 3600],
    ]);
  });

  it('tells a return at the record that ended the silence, with the same time and id however often the run is done again', async () => {
    const fleet = fresh(1);
    const at = (h: number) => T0 + h * HOUR;
    await fleet.record(0, [gps('R', at(1))], at(1));
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(1.5));
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(2.5));
    // R reports again at 2.7 h: one job of three records, a minute apart, then more jobs before the run.
    await fleet.record(0, [gps('R', at(2.7)), gps('R', at(2.7) + 60_000), can('R', at(2.7) + 120_000)], at(2.7) + 120_000);
    await fleet.record(0, [gps('R', at(2.9))], at(2.9));
    // The run posts its events, then fails (as a crash before it remembered them would); it is done again later.
    const told: StatusEvent[] = [];
    const failing = async (e: StatusEvent[]) => {
      told.push(...e);
      throw new Error('gone before remembering');
    };
    await expect(writeStatusChanges(fleet, sink, THRESHOLDS, at(3), failing)).rejects.toThrow('gone before remembering');
    await fleet.record(0, [gps('R', at(3.05))], at(3.05));
    const again = await writeStatusChanges(fleet, sink, THRESHOLDS, at(3.1), async (e) => void told.push(...e));
    expect(again.cameBack).toEqual({ '15m': 1, '1h': 1 });
    const back: StatusEvent = { vehicleno: 'R', event: 'back', time: at(2.7), value: 0, fields: { after_s: 3600, last_seen: at(2.7) } };
    expect(told).toEqual([back, back]);
    expect(new Set(told.map(eventId))).toEqual(new Set([eventId(back)]));
    // Both runs wrote the return with that time; only the second remembered it, so a third tells nothing.
    const status = await query(`SELECT "silent", "last_seen" FROM "fleet_status" WHERE "vehicleno" = 'R' AND "after" = '1h'`);
    expect(status.map((r) => [r.time, r.silent, r.last_seen])).toEqual([
      [at(2.5), 1, at(1)],
      [at(3), 0, at(2.7)],
      [at(3.1), 0, at(2.7)],
    ]);
    expect((await writeStatusChanges(fleet, sink, THRESHOLDS, at(3.2))).cameBack).toEqual({ '15m': 0, '1h': 0 });
  });

  it('tells a later return at its own time, and one whose records came late at the first run that saw it, the same when done again', async () => {
    const fleet = fresh(1);
    const at = (h: number) => T0 + h * HOUR;
    const told: StatusEvent[] = [];
    const events = async (e: StatusEvent[]) => void told.push(...e);
    await fleet.record(0, [gps('L', at(1))], at(1));
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(1.5), events);
    await fleet.record(0, [gps('L', at(2))], at(2));
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(2.1), events);
    // Silent again from 2 h; at 4.5 h its records of every five minutes since arrive at once (a device's
    // buffer, a queue behind): no record came after a silence, so none ended one, and the first return's
    // record (2 h) is not this one's.
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(3.5), events);
    const buffered = Array.from({ length: 30 }, (_, i) => can('L', at(2) + (i + 1) * 5 * 60_000));
    await fleet.record(0, buffered, at(4.5));
    await expect(writeStatusChanges(fleet, sink, THRESHOLDS, at(4.55), async () => Promise.reject(new Error('webhook down')))).rejects.toThrow('webhook down');
    await fleet.record(0, [can('L', at(4.6))], at(4.6));
    await writeStatusChanges(fleet, sink, THRESHOLDS, at(4.65), events);
    expect(told.map((e) => [e.event, e.time, e.fields.after_s])).toEqual([
      ['silent', at(1) + 15 * 60_000, 900],
      ['back', at(2), 900],
      ['silent', at(2) + 15 * 60_000, 900],
      ['silent', at(3), 3600],
      ['back', at(4.5), 3600],
    ]);
  });

  it('writes nothing new when InfluxDB refused the run, and the next run writes it all', async () => {
    const fleet = fresh(1);
    await fleet.record(0, [gps('D', T0)]);
    const down = new InfluxSink({ url: 'http://127.0.0.1:9', token: '', org: '', bucket: db, timeoutMs: 500 });
    await expect(writeStatusChanges(fleet, down, THRESHOLDS, T0 + 2 * HOUR)).rejects.toThrow();
    await down.close();
    expect(await redis.smembers(fleet.partitions[0]!.silent('1h'))).toEqual([]);
    expect((await writeStatusChanges(fleet, sink, THRESHOLDS, T0 + 2 * HOUR)).wentSilent).toEqual({ '15m': 1, '1h': 1 });
    expect(await redis.smembers(fleet.partitions[0]!.silent('1h'))).toEqual(['D']);
  });
});
