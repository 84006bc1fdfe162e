import { describe, expect, it } from 'vitest';
import { budgetDay, callsPerDayAllowed, DAY_MS, dueTolerance, planRun, syncSpacingMs } from './plan.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);

describe('the fuel sync\'s plan', () => {
  it('spreads a vehicle\'s budget evenly: a sync costs a call a unit', () => {
    expect(syncSpacingMs(24, 1)).toBe(HOUR);
    expect(syncSpacingMs(24, 2)).toBe(2 * HOUR);
    expect(syncSpacingMs(25, 2)).toBe(2 * HOUR);
    expect(syncSpacingMs(0, 2)).toBe(0);
    expect(() => syncSpacingMs(1, 2)).toThrow(RangeError);
  });

  it('reads the due vehicles longest waiting first, and leaves those whose day is spent', () => {
    const spacingMs = HOUR;
    const vehicles = [
      { vehicleno: 'A', lastSynced: NOW - 30 * 60_000, callsToday: 5 }, // synced half an hour ago: not due
      { vehicleno: 'B', lastSynced: NOW - 3 * HOUR, callsToday: 5 },
      { vehicleno: 'C', lastSynced: NOW - HOUR + 30_000, callsToday: 5 }, // 30 s early: within the tolerance
      { vehicleno: 'D', lastSynced: NOW - 5 * HOUR, callsToday: 24 }, // due, but its day is spent
      { vehicleno: 'E', lastSynced: NOW - 2 * HOUR, callsToday: 23 },
    ];
    const plan = planRun(vehicles, NOW, { spacingMs, callsPerDay: 24, callsPerSync: 1 });
    expect(plan.due.map((v) => v.vehicleno)).toEqual(['B', 'E', 'C']);
    expect(plan.outOfBudget.map((v) => v.vehicleno)).toEqual(['D']);
    expect(dueTolerance(HOUR)).toBe(60_000);
    // Two units: E's last call of the day would not pay for both.
    expect(planRun(vehicles, NOW, { spacingMs: 2 * HOUR, callsPerDay: 24, callsPerSync: 2 }).outOfBudget.map((v) => v.vehicleno)).toEqual(['D', 'E']);
  });

  it('counts calls on UTC days, and says how many calls a day the pacing allows at most', () => {
    expect(budgetDay(Date.UTC(2026, 10, 27, 23, 59, 59))).toBe('2026-11-27');
    expect(budgetDay(Date.UTC(2026, 10, 28, 0, 0, 0))).toBe('2026-11-28');
    // 400 ms and the 5-ms margin a call: 213,333 a day; 3 a second alone would allow 257,910.
    expect(callsPerDayAllowed({ maxCallsPerSecond: 3, minGapMs: 400 })).toBe(Math.floor(DAY_MS / 405));
    expect(callsPerDayAllowed({ maxCallsPerSecond: 3, minGapMs: 0 })).toBe(Math.floor((DAY_MS / 1005) * 3));
  });
});
