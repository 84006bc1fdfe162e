import { describe, expect, it } from 'vitest';
import { eventTimes, OPTS, route, runOrdered, T0 } from '../events.testkit.js';

/** Idling: the ignition on and standing still IDLE_MIN_DURATION (300 s) at least; a trip counts it. */

describe('idling', () => {
  it('is told from where it began to where the vehicle moves on, and its trip counts it', () => {
    // Drive 2 min, stand 7 min with the ignition on, drive 2 min, ignition off.
    const { fixes } = route(T0, 12.9, [
      { seconds: 120, kmh: 36, ign: 1 },
      { seconds: 420, kmh: 0, ign: 1 },
      { seconds: 120, kmh: 36, ign: 1 },
      { seconds: 5, kmh: 0, ign: 0 },
    ]);
    const d = runOrdered(fixes);
    const idle = d.events.filter((e) => e.event.startsWith('idle_'));
    expect(eventTimes({ ...d, events: idle })).toEqual([
      ['idle_started', T0 + 120_000],
      ['idle_ended', T0 + 540_000],
    ]);
    expect(idle[1]!.fields.duration_s).toBe(420);
    expect(d.trips).toHaveLength(1);
    expect(d.trips[0]).toMatchObject({ idleS: 420, overspeedS: 0 });
  });

  it('shorter than IDLE_MIN_DURATION is none; standing with the ignition off is none; the ignition going off ends it', () => {
    expect(OPTS.idleMinDurationMs).toBe(300_000);
    const short = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 240, kmh: 0, ign: 1 }, { seconds: 60, kmh: 36, ign: 1 }]);
    expect(runOrdered(short.fixes).events.filter((e) => e.event.startsWith('idle_'))).toEqual([]);
    const off = route(T0, 12.9, [{ seconds: 60, kmh: 36, ign: 1 }, { seconds: 900, kmh: 0, ign: 0 }]);
    expect(runOrdered(off.fixes).events.filter((e) => e.event.startsWith('idle_'))).toEqual([]);
    // Parked, the ignition on for 6 minutes (a rider waiting), then off.
    const waiting = route(T0, 12.9, [{ seconds: 60, kmh: 0, ign: 0 }, { seconds: 360, kmh: 0, ign: 1 }, { seconds: 60, kmh: 0, ign: 0 }]);
    const d = runOrdered(waiting.fixes);
    expect(eventTimes({ ...d, events: d.events.filter((e) => e.event.startsWith('idle_')) })).toEqual([
      ['idle_started', T0 + 60_000],
      ['idle_ended', T0 + 420_000],
    ]);
  });
});
