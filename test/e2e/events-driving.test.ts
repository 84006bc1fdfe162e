/**
 * Where and how vehicles drive, through the real service (issue #38): a stop, idling, a spell over the
 * speed limit and a vehicle towed with its ignition off, each pushed in bulks shuffled within the reorder
 * window with some records twice. What an analyst reads back from InfluxDB (`vehicle_events`, `trips`,
 * `stops`) and what an operator's alert counts (`telematics_vehicle_events_total`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../harness/service.js';
import { disordered } from '../harness/disorder.js';

const S = 1000;
const HOUR = 3_600_000;
const T0 = Math.floor(Date.now() / 1000) * 1000 - 14 * HOUR;
const north = (m: number) => m / 111_195.08;

type Rec = { vehicleno: string; type: 'gps'; data: Record<string, number> };
interface Leg {
  seconds: number;
  kmh: number;
  ign: number;
}

/** A fix a second north from 12.9° at each leg's speed, ignition as the leg says. */
function route(v: string, legs: readonly Leg[]): Rec[] {
  const out: Rec[] = [];
  let t = T0;
  let lat = 12.9;
  for (const leg of legs) {
    for (let j = 0; j < leg.seconds; j++, t += S) {
      out.push({ vehicleno: v, type: 'gps', data: { time: t, lat, lng: 77.59, alti: 900, speed: leg.kmh, ignstatus: leg.ign } });
      lat += north(leg.kmh / 3.6);
    }
  }
  return out;
}

let svc: TestService;
const push = async (records: Rec[]) => {
  for (let i = 0; i < records.length; i += 1_000) expect((await svc.post('/push/bulk', { bulkData: records.slice(i, i + 1_000) })).status).toBe(202);
};

beforeAll(async () => {
  svc = await startTestService({ SPEED_LIMIT: '60', WORKER_CONCURRENCY: '1', ADMIN_AUTH: 'none' });
  // Drive 2 min, stand 10 min (the ignition on for 3 of them), drive 2 min.
  await push(disordered(route('CW-STOP', [{ seconds: 120, kmh: 36, ign: 1 }, { seconds: 180, kmh: 0, ign: 1 }, { seconds: 420, kmh: 0, ign: 0 }, { seconds: 121, kmh: 36, ign: 1 }])));
  // Drive 2 min, idle 7 min, drive 2 min, ignition off.
  await push(disordered(route('CW-IDLE', [{ seconds: 120, kmh: 36, ign: 1 }, { seconds: 420, kmh: 0, ign: 1 }, { seconds: 120, kmh: 36, ign: 1 }, { seconds: 5, kmh: 0, ign: 0 }])));
  // 5 min at 50 km/h, 30 s at 80 under a 60 km/h limit, 5 min at 50, ignition off.
  await push(disordered(route('CW-FAST', [{ seconds: 300, kmh: 50, ign: 1 }, { seconds: 30, kmh: 80, ign: 1 }, { seconds: 300, kmh: 50, ign: 1 }, { seconds: 5, kmh: 0, ign: 0 }])));
  // Drive 1 min, park with the ignition off for 10 min, towed at 20 km/h for 3 min with it still off.
  await push(disordered(route('CW-TOWED', [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 600, kmh: 0, ign: 0 }, { seconds: 180, kmh: 20, ign: 0 }])));
  // A pack run down from 26 % to 16 % a point a minute, wandering 19–21 at the threshold, then charged to 36 %.
  // Parked with the ignition off for 3 hours, a fix a minute; its pack losing a point every 20 minutes (the CAN in one bulk).
  await push(Array.from({ length: 181 }, (_, j) => ({ vehicleno: 'CW-DRAIN', type: 'gps', data: { time: T0 + j * 60 * S, lat: 12.95, lng: 77.59, alti: 900, speed: 0, ignstatus: 0 } })));
  await push(Array.from({ length: 181 }, (_, j) => ({ vehicleno: 'CW-DRAIN', type: 'can', data: { time: T0 + j * 60 * S + 500, soc: 70 - Math.floor(j / 20) } }) as unknown as Rec));
  // At 16 % its pack is swapped for a full one at a station (the BMS id changes).
  const socs = [26, 24, 22, 21, 20, 21, 19, 21, 20, 18, 16, 20, 25, 29, 30, 33, 36];
  await push(socs.map((soc, j) => ({ vehicleno: 'CW-LOW', type: 'can', data: { time: T0 + j * 60 * S, soc, battery_voltage: 48 + soc / 10, bms_id: j < 11 ? 410_233 : 733_019 } }) as unknown as Rec));
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

const events = (v: string, n: number) => svc.waitForRows(`SELECT * FROM vehicle_events WHERE vehicleno = '${v}' AND event !~ /^ignition/`, n, 60_000);

describe('where and how vehicles drive, shuffled and duplicated', () => {
  it('a 10-minute stand between drives is one stop: where, how long, how long with the ignition on', async () => {
    const stops = await svc.waitForRows(`SELECT * FROM stops WHERE vehicleno = 'CW-STOP'`, 1, 60_000);
    expect(stops).toEqual([{ time: T0 + 120 * S, vehicleno: 'CW-STOP', end: T0 + 720 * S, duration_s: 600, lat: expect.closeTo(12.9 + north(1_200), 9), lng: 77.59, ignition_on_s: 180 }]);
    // Three minutes with the ignition on is no idle (IDLE_MIN_DURATION, 5 min).
    expect(await events('CW-STOP', 0)).toEqual([]);
  });

  it('seven minutes standing with the ignition on is idling, and the trip counts it', async () => {
    const rows = await events('CW-IDLE', 2);
    expect(rows.map((r) => [r.time, r.event, r.duration_s ?? null])).toEqual([
      [T0 + 120 * S, 'idle_started', null],
      [T0 + 540 * S, 'idle_ended', 420],
    ]);
    const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CW-IDLE'`, 1, 60_000);
    expect(trip).toMatchObject({ time: T0, idle_s: 420, overspeed_s: 0 });
  });

  it('30 s over SPEED_LIMIT: overspeed from the first fix over to the first under, with the top speed and distance; the trip counts it', async () => {
    const rows = await events('CW-FAST', 2);
    expect(rows.map((r) => [r.time, r.event, r.limit])).toEqual([
      [T0 + 300 * S, 'overspeed_started', 60],
      [T0 + 330 * S, 'overspeed_ended', 60],
    ]);
    expect(rows[1]).toMatchObject({ max_speed: 80, duration_s: 30 });
    // The steps between the fixes over the limit: 29 of a second at 80 km/h.
    expect(rows[1]!.distance_m).toBeCloseTo((80 / 3.6) * 29, 0);
    const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CW-FAST'`, 1, 60_000);
    expect(trip).toMatchObject({ overspeed_s: 30, idle_s: 0 });
  });

  it('a pack run low and swapped: soc_low once at SOC_LOW however it wanders there, battery_swapped with both ids, soc_recovered at SOC_RECOVERED', async () => {
    const rows = await events('CW-LOW', 3);
    expect(rows.map((r) => [r.time, r.event, r.soc])).toEqual([
      [T0 + 4 * 60 * S, 'soc_low', 20],
      [T0 + 11 * 60 * S, 'battery_swapped', 20],
      [T0 + 14 * 60 * S, 'soc_recovered', 30],
    ]);
    expect(rows[1]).toMatchObject({ bms_id_old: 410_233, bms_id_new: 733_019 });
  });

  it('parked with the ignition off, its charge falling 5 points: soc_drain_while_parked once', async () => {
    const rows = await events('CW-DRAIN', 1);
    expect(rows.map((r) => [r.time, r.event, r.soc_from, r.soc_to])).toEqual([[T0 + 100 * 60 * S + 500, 'soc_drain_while_parked', 70, 65]]);
  });

  it('towed with the ignition off: moved_while_off once, 300 m from where it parked, counted for the alert', async () => {
    const rows = await events('CW-TOWED', 1);
    expect(rows).toHaveLength(1);
    // 300 m at 20 km/h: the 54th second of the tow.
    expect(rows[0]).toMatchObject({ time: T0 + (660 + 54) * S, event: 'moved_while_off', value: 1, parked_lat: expect.closeTo(12.9 + north(600), 9) });
    expect(rows[0]!.distance_m).toBeGreaterThanOrEqual(300);
    const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    expect(text).toMatch(/^telematics_vehicle_events_total\{event="moved_while_off"\} 1$/m);
    expect(Number(/^telematics_vehicle_events_total\{event="stop"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
  });
});
