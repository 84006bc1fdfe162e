import { describe, expect, it } from 'vitest';
import { localDays, summarizeDays } from './days.js';

const H = 3_600_000;

describe('a vehicle’s local days', () => {
  it('are midnight to midnight in the fleet’s zone: 25 hours the day the clocks go back, 23 the day they go forward', () => {
    // Europe/Berlin: summer time ends 2026-10-25 03:00 CEST (01:00 UTC), begins 2026-03-29 02:00 CET (01:00 UTC).
    const autumn = localDays(Date.parse('2026-10-24T12:00:00Z'), Date.parse('2026-10-26T12:00:00Z'), 'Europe/Berlin');
    expect(autumn.map((d) => [d.day, new Date(d.start).toISOString(), (d.end - d.start) / H])).toEqual([
      ['2026-10-24', '2026-10-23T22:00:00.000Z', 24],
      ['2026-10-25', '2026-10-24T22:00:00.000Z', 25],
      ['2026-10-26', '2026-10-25T23:00:00.000Z', 24],
    ]);
    const spring = localDays(Date.parse('2026-03-29T00:30:00Z'), Date.parse('2026-03-29T00:30:00Z'), 'Europe/Berlin');
    expect(spring.map((d) => [d.day, new Date(d.start).toISOString(), (d.end - d.start) / H])).toEqual([['2026-03-29', '2026-03-28T23:00:00.000Z', 23]]);
    // Kolkata keeps no summer time: a day is 24 hours from 18:30 UTC.
    expect(localDays(Date.parse('2026-10-25T20:00:00Z'), Date.parse('2026-10-25T20:00:00Z'), 'Asia/Kolkata').map((d) => new Date(d.start).toISOString())).toEqual(['2026-10-25T18:30:00.000Z']);
  });

  it('count each trip, stop, session and event to the day its point is stamped in; a trip across midnight to the day it set off', () => {
    const days = localDays(Date.parse('2026-10-25T00:00:00Z'), Date.parse('2026-10-25T23:00:00Z'), 'Europe/Berlin');
    // 2026-10-25 local is 2026-10-24T22:00Z to 2026-10-25T23:00Z; 2026-10-26 from then.
    const t = (iso: string) => Date.parse(iso);
    const [d25, d26] = summarizeDays(days, {
      trips: [
        { time: t('2026-10-24T22:30:00Z'), duration_s: 1800, distance_m: 12_000, soc_start: 80, soc_end: 70, overspeed_s: 30 },
        // 23:40 local, ending after midnight: the 25th's.
        { time: t('2026-10-25T22:40:00Z'), duration_s: 3600, distance_m: 40_000, soc_start: 70, soc_end: 52, overspeed_s: null },
        { time: t('2026-10-25T23:10:00Z'), duration_s: 600, distance_m: 3_000, soc_start: null, soc_end: 50, overspeed_s: null },
      ],
      stops: [{ time: t('2026-10-25T10:00:00Z'), duration_s: 900 }],
      charging: [
        { time: t('2026-10-25T12:00:00Z'), energy_wh: 5_000 },
        { time: t('2026-10-25T13:00:00Z'), energy_wh: null },
      ],
      events: [
        { time: t('2026-10-25T09:00:00Z'), event: 'idle_ended', duration_s: 420 },
        { time: t('2026-10-25T09:30:00Z'), event: 'overspeed_started', duration_s: null },
        { time: t('2026-10-25T09:31:00Z'), event: 'alert_over_temp_raised', duration_s: null },
        { time: t('2026-10-25T11:00:00Z'), event: 'fuel_drop', duration_s: null },
        { time: t('2026-10-25T23:30:00Z'), event: 'fuel_refuel', duration_s: null },
      ],
      reports: new Map([['2026-10-25', { first: t('2026-10-24T22:01:00Z'), last: t('2026-10-25T22:59:00Z') }]]),
    });
    expect(d25).toMatchObject({ day: '2026-10-25', trips: 2, distance_m: 52_000, driving_s: 5400, overspeed_s: 30, soc_used: 28, stops: 1, charging_sessions: 2, energy_charged_wh: 5_000, idle_s: 420, overspeeds: 1, alarms: 1, fuel_drops: 1, refuels: 0 });
    expect(d25!.first_report).toBe(t('2026-10-24T22:01:00Z'));
    expect(d26).toMatchObject({ day: '2026-10-26', trips: 1, distance_m: 3_000, soc_used: 0, refuels: 1, first_report: null, last_report: null });
  });
});
