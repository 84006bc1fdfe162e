import { describe, expect, it } from 'vitest';
import { cases } from '../../../../test/harness/short.js';
import { canRecordData } from '../../../upstream/emulator/can.js';
import { Fleet, HEAT_FAST_C_PER_MIN, OVER_TEMP_ALARM_C } from '../../../upstream/emulator/fleet.js';
import { hash32, Rng } from '../../../upstream/emulator/prng.js';
import { can, OPTS, runOrdered, T0, type Named } from '../events.testkit.js';
import { DAY, healthy, MIN, runShuffled, withSensor } from './pack.testkit.js';

/** A pack heating before the alarm: its hottest real sensor rising PACK_HEAT_RATE over PACK_HEAT_WINDOW, or one sensor PACK_SENSOR_APART from the others. */

const PACK_EVENTS = new Set(['pack_heating_fast', 'pack_sensor_apart']);
const told = (d: { events: ReadonlyArray<{ event: string; time: number; fields: Record<string, number>; tags?: Record<string, string> }> }) => d.events.filter((e) => PACK_EVENTS.has(e.event));

describe('a pack heating fast, or a sensor apart', () => {
  it('never for a healthy pack’s hour of load peaks, braking, charging and sensor noise, nor its unused sensors', () => {
    expect(OPTS).toMatchObject({ packHeatRate: 2, packHeatWindowMs: 5 * MIN, packSensorApartC: 10 });
    // Sensor 5 reads the sentinel -40 and sensor 6 (beyond no_of_temperature_sensors) 95: neither is the pack's.
    expect(OPTS.temperatureSentinels).toContain(-40);
    for (let seed = 1; seed <= 20; seed++) expect(told(runOrdered(healthy(seed)))).toEqual([]);
  });

  it('heating: told at the second record in a row that has risen at rate from the window’s low, once, with the evidence', () => {
    // Sensor 2 from minute 20 rising 3 °C a minute from 35 °C.
    const d = runOrdered(withSensor(healthy(7), 2, 20, (m) => 35 + 3 * m));
    const e = told(d);
    // Heating alone, the sensor also leaves the others: told apart once it stayed so for the window.
    expect(e.map((x) => x.event)).toEqual(['pack_heating_fast', 'pack_sensor_apart']);
    const [heat] = e;
    expect(heat!.tags).toEqual({ pack: '4102' });
    expect(heat!.fields).toMatchObject({ sensor: 2, window_s: 300 });
    // From the window's low (its reading before the rise, at most 35): 2 °C a minute on average over half the window or more, then confirmed.
    expect(heat!.fields.over_s!).toBeGreaterThanOrEqual(150);
    expect(heat!.fields.temperature! - heat!.fields.from_temperature!).toBeGreaterThanOrEqual((2 * heat!.fields.over_s!) / 60);
    expect(heat!.fields.rate_c_per_min!).toBeGreaterThanOrEqual(2);
    expect(heat!.time).toBeGreaterThan(T0 + 21 * MIN);
    expect(heat!.time).toBeLessThan(T0 + 25 * MIN);
  });

  it('a single reading off (a glitch) is no heating', () => {
    // Sensor 1 reads 70 °C on one record (minute 16.5), then about 33 again.
    const spiked = withSensor(healthy(3), 1, 16.5, (m) => (m < 0.1 ? 70 : 33));
    expect(told(runOrdered(spiked))).toEqual([]);
  });

  it('apart: a sensor 18 °C off the median for the window, stamped at its first record; not a shorter excursion', () => {
    // A failing sensor reading 15 °C among sensors at about 33.
    const d = runOrdered(withSensor(healthy(5), 3, 10, () => 15));
    const e = told(d);
    expect(e.map((x) => [x.event, x.time])).toEqual([['pack_sensor_apart', T0 + 10 * MIN]]);
    expect(e[0]!.fields).toMatchObject({ sensor: 3, over_s: 300, limit_c: 10 });
    expect(e[0]!.fields.deviation_c!).toBeLessThan(-10);
    // Four minutes apart, then back: nothing.
    expect(told(runOrdered(withSensor(healthy(5), 3, 10, (m) => (m < 4 ? 15 : 33))))).toEqual([]);
  });

  it('any delivery within the reorder window, the state read back from its bytes each call, tells the same', () => {
    for (const feed of [withSensor(healthy(7), 2, 20, (m) => 35 + 3 * m), withSensor(healthy(5), 3, 10, () => 15), healthy(9)]) {
      const inOrder = told(runOrdered(feed));
      for (let seed = 1; seed <= 5; seed++) expect(told(runShuffled(feed, seed))).toEqual(inOrder);
    }
  });
});

describe('a pack heating fast, against the emulator’s truth', () => {
  /**
   * The emulator's fleet (src/upstream/emulator/fleet.ts): one pack in two hundred heats HEAT_FAST_C_PER_MIN
   * a minute under load (driving, charging) on top of the others' warming, until its BMS raises
   * `alert_over_temp` at OVER_TEMP_ALARM_C. Each vehicle's CAN records as the emulator sends them (a varying
   * subset of its parameters, `canRecordData`), a record a minute, derived in order.
   */
  const SEED = 1;
  const fleet = Fleet.create({ seed: SEED, size: 2_000 });
  type Vehicle = (typeof fleet.vehicles)[number];
  const FROM = Date.UTC(2025, 5, 1);
  const DAYS = 2;
  /** The hottest real sensor of the pack's whole state (what its BMS's alarm is raised on). */
  const hottest = (s: Record<string, number | undefined>) => {
    let h = -Infinity;
    for (let i = 1; i <= (s.no_of_temperature_sensors ?? 6); i++) {
      const x = s[`cell_temperature_0${i}`];
      if (x !== undefined && !OPTS.temperatureSentinels.includes(x) && x > h) h = x;
    }
    return h;
  };
  function derived(v: Vehicle) {
    const rng = Rng.seeded(hash32(SEED, v.index, 9));
    const records: Named[] = [];
    // The pack's hottest real sensor (what its BMS raises the alarm on), and of those the record sent (what the service saw).
    const heat: Array<{ time: number; hottest: number; sent: number; since: number | undefined }> = [];
    for (let t = FROM; t < FROM + DAYS * DAY; t += MIN) {
      const state = fleet.canStateAt(v, t) as Record<string, number>;
      const { time, ...fields } = canRecordData(state, rng);
      records.push(can(time, fields as Record<string, number>));
      heat.push({ time: t, hottest: hottest(state), sent: hottest(fields as Record<string, number>), since: fleet.heatingFastSince(v, t) });
    }
    return { heat, events: runOrdered(records).events.filter((e) => PACK_EVENTS.has(e.event)) };
  }

  it('every heating that reaches the BMS’s thermal alarm is told before it (in that heating, or in one the pack never cooled from); never a healthy pack', () => {
    expect(HEAT_FAST_C_PER_MIN).toBeGreaterThan(OPTS.packHeatRate);
    const fast = fleet.vehicles.filter((v) => fleet.heatsFast(v));
    expect(fast.length).toBeGreaterThanOrEqual(5);
    let alarms = 0;
    for (const v of fast) {
      const { heat, events } = derived(v);
      expect(events.filter((e) => e.event !== 'pack_heating_fast'), `vehicle ${v.index}`).toEqual([]);
      const warnings = events.filter((e) => e.event === 'pack_heating_fast');
      // Each warning was told while the pack heats fast (under load), never parked.
      for (const w of warnings) expect(fleet.heatingFastSince(v, w.time), `vehicle ${v.index} at ${w.time}`).toBeDefined();
      for (let i = 1; i < heat.length; i++) {
        if (!(heat[i]!.hottest >= OVER_TEMP_ALARM_C && heat[i - 1]!.hottest < OVER_TEMP_ALARM_C) || heat[i]!.since === undefined) continue;
        alarms++;
        const at = heat[i]!.time;
        // The last warning before the alarm, and no reading sent since back down to the low it rose from: one episode.
        const w = warnings.filter((e) => e.time < at).at(-1);
        expect(w, `vehicle ${v.index}: the alarm at ${new Date(at).toISOString()} told before`).toBeDefined();
        expect(heat.some((h) => h.time > w!.time && h.time < at && h.sent > -Infinity && h.sent <= w!.fields.from_temperature!), `vehicle ${v.index}: cooled between the warning and the alarm at ${new Date(at).toISOString()}`).toBe(false);
      }
    }
    expect(alarms).toBeGreaterThan(0);
    for (const v of fleet.vehicles.filter((x) => !fleet.heatsFast(x)).slice(0, cases(12))) expect(derived(v).events, `vehicle ${v.index}`).toEqual([]);
  });
});
