import { describe, expect, it } from 'vitest';
import { OPTS, runOrdered, T0 } from '../events.testkit.js';
import { healthy, MIN, runShuffled, withSensor } from './pack.testkit.js';

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

  it('heating: told at the second record in a row that has risen rate × window from the window’s low, once, with the evidence', () => {
    // Sensor 2 from minute 20 rising 3 °C a minute from 35 °C.
    const d = runOrdered(withSensor(healthy(7), 2, 20, (m) => 35 + 3 * m));
    const e = told(d);
    // Heating alone, the sensor also leaves the others: told apart once it stayed so for the window.
    expect(e.map((x) => x.event)).toEqual(['pack_heating_fast', 'pack_sensor_apart']);
    const [heat] = e;
    expect(heat!.tags).toEqual({ pack: '4102' });
    expect(heat!.fields).toMatchObject({ sensor: 2, window_s: 300 });
    // Over the window's low (its reading before the rise, at most 35), 10 °C first reached about minute 23–24, then confirmed.
    expect(heat!.fields.temperature! - heat!.fields.from_temperature!).toBeGreaterThanOrEqual(10);
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
