/**
 * Vehicle events through the real service, played as a fleet's data really arrives (issue #35): GPS
 * pushed record by record while CAN comes in bulks a minute behind; a vehicle parked with ignition on and
 * its GPS jittering; a cold start's outlier; regenerative braking; silences of hours; two CAN records of
 * one instant; a safety alarm that arrives too late for its window; a record stamped 10 minutes ahead.
 * What an analyst reads back from InfluxDB (`vehicle_events`, `trips`, `charging`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';

const S = 1000;
const HOUR = 3_600_000;
const NOW = Math.floor(Date.now() / 1000) * 1000;
const T0 = NOW - 14 * HOUR;
const north = (m: number) => m / 111_195.08;

type Rec = { vehicleno: string; type: 'gps' | 'can'; data: Record<string, number> };
const gps = (vehicleno: string, time: number, lat: number, lng: number, speed: number, ignstatus: number): Rec => ({ vehicleno, type: 'gps', data: { time, lat, lng, alti: 900, speed, ignstatus } });
const can = (vehicleno: string, time: number | undefined, fields: Record<string, number>): Rec => ({ vehicleno, type: 'can', data: time === undefined ? fields : { time, ...fields } });

let svc: TestService;
const q = (s: string) => `'${s}'`;
const push = async (records: Rec[]) => {
  for (let i = 0; i < records.length; i += 1_000) expect((await svc.post('/push/bulk', { bulkData: records.slice(i, i + 1_000) })).status).toBe(202);
};
const pushOne = async (r: Rec) => expect((await svc.post('/push/realtime', r)).status).toBe(202);

/** A 10-minute drive with GPS and CAN a second each: the pack over temperature 240–260 s, a thermal runaway 400–403 s. */
async function canInBulksBehindGps(v: string): Promise<void> {
  const bulks: Rec[][] = [];
  for (let m = 0; m < 10; m++) {
    const bulk: Rec[] = [];
    for (let j = m * 60; j < (m + 1) * 60 + (m === 9 ? 1 : 0); j++) {
      const t = T0 + j * S;
      await pushOne(gps(v, t, 12.97 + north(10 * j), 77.59, j === 0 || j === 600 ? 0 : 36, j === 600 ? 0 : 1));
      bulk.push(can(v, t + 300, { soc: 80 - Math.floor(j / 60), current: -25, battery_voltage: 51, alert_over_temp: j >= 240 && j < 280 ? 1 : 0, alert_thermal_runaway: j >= 400 && j < 403 ? 1 : 0 }));
    }
    // Each minute's CAN comes in one bulk, a minute behind the GPS.
    if (m > 0) await push(bulks[m - 1]!);
    bulks.push(bulk);
  }
  await push(bulks[9]!);
}

/** Ignition on, 30 minutes parked, 2 m of GPS jitter around the spot. */
function parkedWithJitter(v: string): Rec[] {
  return Array.from({ length: 1801 }, (_, j) => {
    const a = (j * 2.39996) % (2 * Math.PI);
    return gps(v, T0 + j * S, 12.97 + north(2 * Math.cos(a)), 77.59 + north(2 * Math.sin(a)) / Math.cos((12.97 * Math.PI) / 180), 0, j === 1800 ? 0 : 1);
  });
}

/** Parked 8 hours; ignition on with a first fix 2 km off; then 1.5 km north from the parking spot in 90 s. */
function coldStart(v: string): Rec[] {
  const start = T0 + 8 * HOUR;
  const out = [gps(v, T0, 12.97, 77.59, 0, 0), gps(v, start, 12.97 + north(2_000), 77.59, 0, 1)];
  for (let j = 1; j <= 90; j++) out.push(gps(v, start + j * S, 12.97 + north((1_500 * j) / 90), 77.59, 60, j === 90 ? 0 : 1));
  return out;
}

/** 10 minutes driving with +5 A regenerative bursts (no load_status), then parked and charged by current alone for 5 minutes. */
function regenThenCharge(v: string): Rec[] {
  const out: Rec[] = [];
  for (let j = 0; j <= 600; j++) {
    const t = T0 + j * S;
    out.push(gps(v, t, 12.97 + north(10 * j), 77.59, j === 600 ? 0 : 36, j === 600 ? 0 : 1));
    out.push(can(v, t + 500, { current: j % 25 < 4 ? 5 : -30, battery_voltage: 51, soc: 70 }));
  }
  for (let j = 601; j <= 1000; j++) {
    const t = T0 + j * S;
    if (j % 10 === 0) out.push(gps(v, t, 12.97 + north(6_000), 77.59, 0, 0));
    out.push(can(v, t + 500, { current: j >= 650 && j < 950 ? 20 : -0.4, battery_voltage: 52, soc: 60 }));
  }
  return out;
}

/** A 10-minute drive, 9 h of silence (the ignition-off lost), a 10-minute drive; a charge at 1 kW, 3 h of silence, one more charging record. */
function silences(v: string): Rec[] {
  const out: Rec[] = [];
  const drive = (t0: number, lat0: number, last: boolean) => {
    for (let j = 0; j <= 600; j++) out.push(gps(v, t0 + j * S, lat0 + north(10 * j), 77.59, 36, last && j === 600 ? 0 : 1));
  };
  drive(T0, 12.97, false);
  drive(T0 + 600 * S + 9 * HOUR, 13.1, true);
  const c0 = T0 + 600 * S + 9 * HOUR + 700 * S;
  for (let j = 0; j <= 60; j++) out.push(can(v, c0 + j * 10 * S, { load_status: 2, battery_voltage: 50, current: 20, soc: 40 + j / 10 }));
  out.push(can(v, c0 + 600 * S + 3 * HOUR, { load_status: 2, battery_voltage: 50, current: 20, soc: 80 }));
  out.push(can(v, c0 + 660 * S + 3 * HOUR, { load_status: 0, soc: 80 }));
  return out;
}

beforeAll(async () => {
  svc = await startTestService({
    // A window shorter than the live vehicle's cadence below (1.5 s), so its stream falls idle between records.
    EVENTS_WINDOW: '1s',
    // Short trips count here (the ahead scenario's drive is seconds long); the filter's defaults are unit-tested.
    TRIP_MIN_DURATION: '5s',
    WORKER_CONCURRENCY: '1',
    ADMIN_AUTH: 'none',
  });
  await push(parkedWithJitter('CE-PARKED'));
  await push(coldStart('CE-COLD'));
  await push(regenThenCharge('CE-REGEN'));
  await push(silences('CE-GAP'));
  await canInBulksBehindGps('CE-BULKCAN');

  // Two CAN records of one vehicle without a time in one bulk: both stamped with the receive time. In
  // either order.
  for (const [v, flags] of [['CE-MERGE-10', [1, 0]], ['CE-MERGE-01', [0, 1]]] as const) {
    await push([can(v, T0, { soc: 50, alert_short_circuit: 0 })]);
    await push(flags.map((f, i) => can(v, undefined, { soc: 51 + i, alert_short_circuit: f })));
  }

  // A minute of CAN, then a record from its 20th second, too late for the window, with a thermal runaway.
  await push(Array.from({ length: 61 }, (_, j) => can('CE-LATE', T0 + j * S, { soc: 50, alert_thermal_runaway: 0 })));
  await waitUntil(async () => (await svc.query(`SELECT count(soc) FROM can WHERE vehicleno = 'CE-LATE'`)).length > 0, 15_000, 'the minute stored');
  await push([can('CE-LATE', T0 + 20_500, { alert_thermal_runaway: 1 })]);

  // Live: a record every 1.5 s (longer than the window: each is committed by the sweep before the next),
  // one parked record's clock 10 minutes ahead; parked, a 9-s drive, parked.
  const live = Date.now();
  const every = 1_500;
  for (let j = 0; j <= 12; j++) {
    const driving = j >= 3 && j < 9;
    const t = live + j * every;
    await pushOne(gps('CE-AHEAD', t, 12.97 + north(driving ? 20 * (j - 3) : j < 3 ? 0 : 120), 77.59, driving ? 48 : 0, driving ? 1 : 0));
    if (j === 1) await pushOne(gps('CE-AHEAD', t + 10 * 60_000, 12.97, 77.59, 0, 0));
    await new Promise((r) => setTimeout(r, Math.max(0, t + every - Date.now())));
  }
}, 180_000);

afterAll(async () => {
  await svc?.close();
});

describe('vehicle events on a real fleet’s cadence', () => {
  it('CAN in bulks a minute behind realtime GPS: every alarm told at its record time, nothing late', async () => {
    const rows = await svc.waitForRows(`SELECT value, event FROM vehicle_events WHERE vehicleno = 'CE-BULKCAN' AND event =~ /^alert_/`, 4, 60_000);
    expect(rows.map((r) => [r.time, r.event])).toEqual([
      // Raised at 240.3 s, no safety alarm: told once it held ALARM_MIN_DURATION (30 s). The runaway at once.
      [T0 + 270_300, 'alert_over_temp_raised'],
      [T0 + 280_300, 'alert_over_temp_cleared'],
      [T0 + 400_300, 'alert_thermal_runaway_raised'],
      [T0 + 403_300, 'alert_thermal_runaway_cleared'],
    ]);
    const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CE-BULKCAN'`, 1, 30_000);
    expect(trip).toMatchObject({ time: T0, end: T0 + 600 * S, soc_start: 80, soc_end: 71 });
    expect(trip!.distance_m).toBeCloseTo(6_000, 0);
  });

  it('parked 30 min with ignition on and 2 m of jitter: a trip of no distance', async () => {
    const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CE-PARKED'`, 1, 30_000);
    expect(trip).toMatchObject({ time: T0, end: T0 + 1800 * S, distance_m: 0 });
  });

  it('a cold start’s outlier 2 km off: the trip is the 1.5 km driven, from where the vehicle stood', async () => {
    const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CE-COLD'`, 1, 30_000);
    expect(trip!.time).toBe(T0 + 8 * HOUR);
    expect(trip!.distance_m).toBeCloseTo(1_500 - 1_500 / 90, 0);
    expect(trip!.start_lat).toBeCloseTo(12.97 + north(1_500 / 90), 9);
  });

  it('regenerative braking while driving is not charging; standing, charging by current alone is one session from its first record', async () => {
    const rows = await svc.waitForRows(`SELECT value, event FROM vehicle_events WHERE vehicleno = 'CE-REGEN' AND event =~ /^charging/`, 2, 60_000);
    expect(rows.map((r) => [r.time, r.event])).toEqual([
      [T0 + 650_500, 'charging_started'],
      [T0 + 950_500, 'charging_stopped'],
    ]);
    const sessions = await svc.waitForRows(`SELECT * FROM charging WHERE vehicleno = 'CE-REGEN'`, 1, 30_000);
    expect(sessions).toHaveLength(1);
  });

  it('silences of hours are not bridged: two trips, the first ended at its last fix; no energy across the gap', async () => {
    const trips = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CE-GAP'`, 2, 30_000);
    expect(trips.map((t) => [t.time, t.end, t.gap_ended ?? null])).toEqual([
      [T0, T0 + 600 * S, 1],
      [T0 + 600 * S + 9 * HOUR, T0 + 1_200 * S + 9 * HOUR, null],
    ]);
    const sessions = await svc.waitForRows(`SELECT * FROM charging WHERE vehicleno = 'CE-GAP'`, 2, 30_000);
    expect(sessions[0]!.energy_wh).toBeCloseTo(1_000 / 6, 6);
    expect(sessions[0]!.end).toBe(T0 + 600 * S + 9 * HOUR + 1_300 * S);
    expect(sessions[1]!.energy_wh ?? null).toBeNull();
  });

  it('two CAN records of one instant are merged: the alarm in either is seen, in either order', async () => {
    for (const v of ['CE-MERGE-10', 'CE-MERGE-01']) {
      const rows = await svc.waitForRows(`SELECT value, event FROM vehicle_events WHERE vehicleno = ${q(v)}`, 1, 30_000);
      expect(rows.map((r) => r.event)).toEqual(['alert_short_circuit_raised']);
    }
  });

  it('a safety alarm too late for its window is told all the same, at its time, marked late', async () => {
    const rows = await svc.waitForRows(`SELECT value, late FROM vehicle_events WHERE vehicleno = 'CE-LATE' AND event = 'alert_thermal_runaway_raised'`, 1, 30_000);
    expect(rows).toEqual([{ time: T0 + 20_500, value: 1, late: 1 }]);
    const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    expect(Number(/^telematics_vehicle_events_late_total (\d+)/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
  });

  it('a record stamped 10 minutes ahead makes nothing after it late: the drive and its ignition events are all there', async () => {
    const rows = await svc.waitForRows(`SELECT value, event FROM vehicle_events WHERE vehicleno = 'CE-AHEAD'`, 2, 30_000);
    expect(rows.map((r) => r.event)).toEqual(['ignition_on', 'ignition_off']);
    const [trip] = await svc.waitForRows(`SELECT * FROM trips WHERE vehicleno = 'CE-AHEAD'`, 1, 30_000);
    expect(trip!.duration_s).toBe(9);
    expect(trip!.distance_m).toBeCloseTo(120, 0);
  });
});
