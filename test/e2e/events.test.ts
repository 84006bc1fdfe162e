/**
 * Vehicle events through the real service (issue #28): a scripted drive, alarm flaps and a charge
 * pushed as a sender would, in order for one vehicle and shuffled across pushes (within the window)
 * with every record sent twice for another; what lands in InfluxDB (`vehicle_events`, `trips`,
 * `charging`), what the webhook receives (signed, once per event id, through a receiver that was down),
 * and what /metrics counts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mulberry32 } from '../../src/upstream/emulator/prng.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';

const SECRET = `whsec_${Buffer.from('events-test-secret-0123456789').toString('base64')}`;
const NOW = Math.floor(Date.now() / 1000) * 1000;
const T0 = NOW - 20 * 60_000;
const S = 1000;

/** The test's own great-circle distance (the service's is src/ingest/events/geo.ts). */
function haversine(lat1: number, lng1: number, lat2: number, lng2: number): number {
  const R = 6_371_008.8;
  const rad = Math.PI / 180;
  const a = Math.sin(((lat2 - lat1) * rad) / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(((lng2 - lng1) * rad) / 2) ** 2;
  return 2 * R * Math.asin(Math.sqrt(a));
}

type Rec = { vehicleno: string; type: 'gps' | 'can'; data: Record<string, number> };

/**
 * Parked at t0, ignition on at +10 s, north along a meridian at ~40 km/h to +300 s (ignition off), an
 * over-temperature alarm raised at +105 s and cleared at +155 s, then a charge at 52 V, 30 A from +325 s
 * to +505 s (stopped by the record at +515 s), the GPS reporting on while the vehicle stands.
 */
function history(vehicleno: string): Rec[] {
  const out: Rec[] = [];
  for (let s = 0; s <= 300; s += 10) {
    const ign = s === 0 || s === 300 ? 0 : 1;
    out.push({ vehicleno, type: 'gps', data: { lat: 12 + (s / 10) * 0.001, lng: 77, alti: 900, speed: ign ? 40 : 0, ignstatus: ign, time: T0 + s * S } });
    out.push({ vehicleno, type: 'can', data: { time: T0 + (s + 5) * S, soc: 80 - s / 100, current: -20, battery_voltage: 51, load_status: 1, alert_over_temp: s + 5 >= 105 && s + 5 < 155 ? 1 : 0 } });
  }
  for (let s = 310; s <= 520; s += 10) out.push({ vehicleno, type: 'gps', data: { lat: 12.03, lng: 77, alti: 900, speed: 0, ignstatus: 0, time: T0 + s * S } });
  for (let s = 325; s <= 515; s += 10) {
    const charging = s <= 505;
    out.push({ vehicleno, type: 'can', data: { time: T0 + s * S, soc: 70 + (s - 325) / 10, current: charging ? 30 : 0, battery_voltage: 52, load_status: charging ? 2 : 0 } });
  }
  return out;
}

let svc: TestService;
let hook: Server;
const received = new Map<string, { type: string; data: Record<string, unknown> }>();
let deliveries = 0;
let downUntil = 0;

beforeAll(async () => {
  const wh = new Webhook(SECRET);
  hook = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries++;
      if (Date.now() < downUntil) {
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const payload = wh.verify(body, req.headers as Record<string, string>) as { type: string; data: Record<string, unknown> };
      received.set(String(req.headers['webhook-id']), payload);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  // The receiver is down for the first seconds: deliveries are retried until it answers.
  downUntil = Date.now() + 4_000;
  svc = await startTestService({
    // Wider than the shuffle below (20 s of record time); a vehicle's last records are committed once it is 22 s quiet.
    EVENTS_WINDOW: '22s',
    // One job at a time: the shuffle across pushes is the disorder under test (a worker's concurrency adds its own, test/faults/worker-kill.test.ts).
    WORKER_CONCURRENCY: '1',
    EVENTS_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks`,
    EVENTS_WEBHOOK_SECRET: SECRET,
    RETRY_BASE_DELAY: '200ms',
    RETRY_MAX_DELAY: '1s',
    ADMIN_AUTH: 'none',
  });
  const ordered = history('EV-ORDERED');
  for (let i = 0; i < ordered.length; i += 25) expect((await svc.post('/push/bulk', { bulkData: ordered.slice(i, i + 25) })).status).toBe(202);
  // The same history for another vehicle: shuffled within 20 s of record time, every record twice, in pushes of random size.
  const rnd = mulberry32(7);
  const keyed = [...history('EV-SHUFFLED'), ...history('EV-SHUFFLED')].map((r) => ({ r, key: r.data.time! + rnd() * 20_000 }));
  keyed.sort((a, b) => a.key - b.key);
  const shuffled = keyed.map((k) => k.r);
  for (let i = 0; i < shuffled.length; ) {
    const n = 1 + Math.floor(rnd() * 30);
    expect((await svc.post('/push/bulk', { bulkData: shuffled.slice(i, i + n) })).status).toBe(202);
    i += n;
  }
}, 120_000);

afterAll(async () => {
  await svc?.close();
  await new Promise((r) => hook?.close(r));
});

const q = (s: string) => `'${s}'`;

describe('derived from a scripted drive, alarm flaps and a charge', () => {
  const expectedDistance = (() => {
    let d = 0;
    for (let s = 20; s <= 300; s += 10) d += haversine(12 + (s / 10 - 1) * 0.001, 77, 12 + (s / 10) * 0.001, 77);
    return d;
  })();

  for (const v of ['EV-ORDERED', 'EV-SHUFFLED']) {
    it(`${v}: the events, in InfluxDB, each once`, async () => {
      const rows = await svc.waitForRows(`SELECT value, event, since FROM vehicle_events WHERE vehicleno = ${q(v)}`, 6, 60_000);
      expect(rows.map((r) => [r.time, r.event, r.value])).toEqual([
        [T0 + 10 * S, 'ignition_on', 1],
        // Raised at 105 s; no safety alarm, so told once it held ALARM_MIN_DURATION (30 s), since its raise.
        [T0 + 135 * S, 'alert_over_temp_raised', 1],
        [T0 + 155 * S, 'alert_over_temp_cleared', 0],
        [T0 + 300 * S, 'ignition_off', 0],
        [T0 + 325 * S, 'charging_started', 1],
        [T0 + 515 * S, 'charging_stopped', 0],
      ]);
      expect(rows.find((r) => r.event === 'alert_over_temp_raised')!.since).toBe(T0 + 105 * S);
    });

    it(`${v}: one trip, its distance within 0.5 % of the path's`, async () => {
      const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = ${q(v)}`, 1, 60_000);
      expect(trip).toMatchObject({ time: T0 + 10 * S, end: T0 + 300 * S, duration_s: 290, max_speed_kmh: 40, start_lng: 77, end_lng: 77, soc_start: 80, soc_end: 77.1 });
      expect(trip!.start_lat).toBeCloseTo(12.001, 9);
      expect(trip!.end_lat).toBeCloseTo(12.03, 9);
      expect(Math.abs(Number(trip!.distance_m) / expectedDistance - 1)).toBeLessThan(0.005);
    });

    it(`${v}: one charging session, with the energy taken`, async () => {
      const [session] = await svc.waitForRows(`SELECT * FROM charging WHERE vehicleno = ${q(v)}`, 1, 60_000);
      // 52 V × 30 A for the 180 s between the first and the last charging record.
      expect(session).toMatchObject({ time: T0 + 325 * S, end: T0 + 515 * S, duration_s: 190, soc_start: 70, soc_end: 89 });
      expect(session!.energy_wh).toBeCloseTo(78, 9);
    });
  }

  it('posts each event, trip and session to the webhook once, signed, after the receiver came back', async () => {
    // 6 events, a trip and a session per vehicle.
    await waitUntil(async () => received.size >= 16, 30_000, 'webhook deliveries');
    const types = [...received.values()].map((p) => p.type).sort();
    expect(types.filter((t) => t === 'vehicle.trip')).toHaveLength(2);
    expect(types.filter((t) => t === 'vehicle.charging')).toHaveLength(2);
    expect(types.filter((t) => t === 'vehicle.alert_over_temp_raised')).toHaveLength(2);
    expect(received.size).toBe(16);
    // The receiver refused some while down: those were retried, not lost.
    expect(deliveries).toBeGreaterThan(16);
  });

  it('counts each event once, and every duplicate record', async () => {
    const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    const value = (series: string) => Number(text.split('\n').find((l) => l.startsWith(series))?.split(' ').pop() ?? 0);
    expect(value('telematics_vehicle_events_total{event="ignition_on"}')).toBe(2);
    expect(value('telematics_vehicle_events_total{event="trip"}')).toBe(2);
    expect(value('telematics_vehicle_events_total{event="charging_session"}')).toBe(2);
    expect(value('telematics_vehicle_events_duplicate_total')).toBe(history('X').length);
    expect(value('telematics_vehicle_events_late_total')).toBe(0);
  });
});

describe('an event point InfluxDB refuses for good', () => {
  it('does not stall the outbox: it is logged and counted, the rest stored and posted', async () => {
    const other = await startTestService({ EVENTS_WINDOW: '1s', ADMIN_AUTH: 'none' });
    try {
      // Someone else's writer made `value` a string in vehicle_events: every float `value` now conflicts.
      const conflict = await fetch(`${inject('influxRawUrl')}/write?db=${encodeURIComponent(other.cfg.INFLUX_BUCKET)}&precision=ms`, {
        method: 'POST',
        body: `vehicle_events,vehicleno=SOMEONE,event=x value="text" ${T0}`,
      });
      expect(conflict.status).toBe(204);
      const drive = history('EV-REFUSED').filter((r) => r.data.time! <= T0 + 300 * S);
      expect((await other.post('/push/bulk', { bulkData: drive })).status).toBe(202);
      // The trip is a point of its own measurement: stored although the events beside it were refused.
      await other.waitForRows(`SELECT distance_m FROM trips WHERE vehicleno = 'EV-REFUSED'`, 1, 30_000);
      const metrics = async () => (await fetch(`${other.adminUrl}/metrics`)).text();
      await waitUntil(async () => /^telematics_vehicle_events_outbox 0$/m.test(await metrics()), 15_000, 'the outbox drained');
      expect(Number(/^telematics_points_refused_total (\d+)/m.exec(await metrics())?.[1])).toBeGreaterThanOrEqual(4);
    } finally {
      await other.close();
    }
  });
});
