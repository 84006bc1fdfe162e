/**
 * Fleet status on a real Redis and a real influxd, with a clock the test controls: last-seen times,
 * the silent list and counts, the status points, and the dashboard's silent-vehicles query on them.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { influxQL } from '../../devstack/influxd.js';
import type { Sighting } from '../../telemetry/record.js';
import { InfluxSink } from '../write/influx.js';
import { writeStatusChanges, type SilentAfter, type StatusEvent } from './changes.js';
import { FleetState, fleetKeys } from './state.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 25, 0, 0, 0);
const THRESHOLDS: SilentAfter[] = [
  { label: '15m', ms: 15 * 60_000 },
  { label: '1h', ms: HOUR },
];

const gps = (vehicleno: string, time: number, lat = 12.5, lng = 77.5): Sighting => ({ vehicleno, type: 'gps', time, lat, lng });
const can = (vehicleno: string, time: number): Sighting => ({ vehicleno, type: 'can', time });

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

  it('costs about 200 bytes of Redis per vehicle', async () => {
    const fleet = fresh(1);
    const k = fleet.partitions[0]!;
    const n = 2_000;
    const records = Array.from({ length: n }, (_, i) => gps(`KA01AB${String(i).padStart(4, '0')}`, T0 + i, 12.971234, 77.594567));
    await fleet.record(0, records);
    const bytes = Number(await redis.memory('USAGE', k.seen)) + Number(await redis.memory('USAGE', k.positions));
    const perVehicle = bytes / n;
    expect(perVehicle).toBeGreaterThan(100);
    expect(perVehicle).toBeLessThan(260);
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
