import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { recordsOfRows } from '../flatten/points.js';
import { plausibilityFor } from '../service/components.js';
import { checkUnsealed } from './unsealed.js';

const NOW = Date.UTC(2026, 10, 27, 12);
const checks = { plausibility: plausibilityFor(loadConfig({ PUSH_AUTH: 'none' })), flatten: { temperatureSentinels: [] }, quarantineRawLimit: 10_000 };
const job = { id: '7', timestamp: NOW };

describe('a job no receiver sealed', () => {
  it('writes what a receiver would have written, a record whose refused fields were left out included', () => {
    const records = [
      { vehicleno: 'U-1', type: 'gps', time: NOW - 60_000, fields: { lat: 12.97, lng: 77.59, alti: 900, speed: 30, ignstatus: 1 } },
      // A receiver refused its (0, 0) position: the job holds it without lat and lng.
      { vehicleno: 'U-1', type: 'gps', time: NOW - 50_000, fields: { alti: 900, speed: 0, ignstatus: 1 } },
      { vehicleno: 'U-1', type: 'can', time: NOW - 40_000, fields: { soc: 55, my_sensor: -3 } },
    ];
    const c = checkUnsealed(records, job, checks);
    expect(c.held).toEqual([]);
    expect(recordsOfRows(c.rows)).toEqual(records);
  });

  it('refuses what a push would be refused, says why, and keeps it for replay', () => {
    const records = [
      { vehicleno: 'U-2', type: 'can', time: NOW - 1_000, fields: { soc: 50 } },
      { vehicleno: 'U-2', type: 'can', time: Date.UTC(2100, 0, 1), fields: { soc: 50 } },
      { vehicleno: 'U-2\nvehicle_events', type: 'can', time: NOW - 1_000, fields: { soc: 50 } },
      { vehicleno: 'U-2', type: 'can', time: NOW - 1_000, fields: { soc: 250, current: -3 } },
      { vehicleno: 'U-2', type: 'gps', time: NOW - 1_000, fields: {} },
      null,
    ];
    const c = checkUnsealed(records, job, checks);
    expect(recordsOfRows(c.rows)).toEqual([records[0], { ...records[3], fields: { current: -3 } }]);
    expect(c.rejected).toBe(4);
    expect(c.held.map((e) => [e.index, e.stage, e.route, e.deliveryId])).toEqual([
      [1, 'write', 'queue', 'job:7'],
      [2, 'write', 'queue', 'job:7'],
      [3, 'write', 'queue', 'job:7'],
      [4, 'write', 'queue', 'job:7'],
      [5, 'write', 'queue', 'job:7'],
    ]);
    expect(c.held.map((e) => e.reason)).toEqual([
      expect.stringMatching(/^in a job no receiver sealed: data\.time: .*ahead/),
      'in a job no receiver sealed: vehicleno: must not contain control characters',
      expect.stringMatching(/^in a job no receiver sealed: implausible field\(s\) not stored: data\.soc: 250/),
      'in a job no receiver sealed: data: no field left to store',
      expect.stringMatching(/^in a job no receiver sealed: expected a push record/),
    ]);
  });
});
