import { describe, expect, it } from 'vitest';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { Plausibility, span } from './judge.js';
import type { RangeOverride } from '../../config/index.js';
import { RANGE_RULES, rangeRules, ruleFor } from './rules.js';
import { ExtraFieldNames } from './fieldNames.js';

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const MIN = 60_000;
const DAY = 86_400_000;

const judge = (overrides: RangeOverride[] = [], time: Partial<{ maxAheadMs: number; maxAgeMs: number }> = {}) => {
  const { rules, zeroPosition } = rangeRules(overrides);
  return new Plausibility({ maxAheadMs: 15 * MIN, maxAgeMs: 90 * DAY, rules, zeroPosition, ...time });
};
const gps = (fields: Record<string, number>, time = NOW - 1_000): TelemetryRecord => ({
  vehicleno: 'KA01',
  type: 'gps',
  time,
  fields: { lat: 12.97, lng: 77.59, alti: 920, speed: 40, ignstatus: 1, ...fields },
});
const can = (fields: Record<string, number>, time = NOW - 1_000): TelemetryRecord => ({ vehicleno: 'KA01', type: 'can', time, fields: { ...fields } });

describe('time rules refuse the record', () => {
  it('TIME_MAX_AHEAD: at the bound kept, a millisecond beyond refused; five minutes ahead (a wake-up stamp) lands', () => {
    const p = judge();
    expect(p.judge(gps({}, NOW + 5 * MIN), NOW)).toEqual({ ok: true, refused: [] });
    expect(p.judge(gps({}, NOW + 15 * MIN), NOW).ok).toBe(true);
    const r = p.judge(gps({}, NOW + 15 * MIN + 1), NOW);
    expect(r).toMatchObject({ ok: false, rule: 'time_future' });
    const years = p.judge(gps({}, NOW + 5 * 365.25 * DAY), NOW);
    expect(years).toMatchObject({ ok: false, rule: 'time_future' });
    expect(years.ok || years.error).toBe(
      "data.time: 2031-11-25T18:00:00.000Z is 5 years ahead of the receiver's clock, more than TIME_MAX_AHEAD (15 min); the device's clock is wrong",
    );
  });

  it('TIME_MAX_AGE: a buffer days late lands, 90 days is the bound, twenty years and a week-rollover date are refused', () => {
    const p = judge();
    expect(p.judge(can({ soc: 50 }, NOW - 3 * DAY), NOW).ok).toBe(true);
    expect(p.judge(can({ soc: 50 }, NOW - 90 * DAY), NOW).ok).toBe(true);
    expect(p.judge(can({ soc: 50 }, NOW - 90 * DAY - 1), NOW)).toMatchObject({ ok: false, rule: 'time_past' });
    const rollover = p.judge(gps({}, NOW - 1024 * 7 * DAY), NOW);
    expect(rollover.ok || rollover.error).toBe(
      "data.time: 2007-04-11T12:00:00.000Z is 19.6 years old, more than TIME_MAX_AGE (90 d) (a multiple of 1024 weeks: a GPS week-number rollover); the device's clock is wrong",
    );
    const twenty = p.judge(gps({}, NOW - 20 * 365.25 * DAY), NOW);
    expect(twenty).toMatchObject({ ok: false, rule: 'time_past' });
    expect(twenty.ok || twenty.error).not.toContain('rollover');
  });

  it('0 switches a time rule off', () => {
    const p = judge([], { maxAheadMs: 0, maxAgeMs: 0 });
    expect(p.judge(gps({}, NOW + 5 * 365 * DAY), NOW).ok).toBe(true);
    expect(p.judge(gps({}, NOW - 20 * 365 * DAY), NOW).ok).toBe(true);
  });
});

describe('value rules refuse only the field', () => {
  it('(0, 0) drops the position and keeps the rest of the record', () => {
    const r = gps({ lat: 0, lng: 0, speed: 0 });
    const v = judge().judge(r, NOW);
    expect(v.ok).toBe(true);
    expect(v.refused.map((f) => [f.field, f.rule])).toEqual([
      ['lat', 'zero_position'],
      ['lng', 'zero_position'],
    ]);
    expect(r.fields).toEqual({ alti: 920, speed: 0, ignstatus: 1 });
    // One coordinate at 0 is a real place (the equator, the prime meridian).
    expect(judge().judge(gps({ lat: 0, lng: 32.5 }), NOW).refused).toEqual([]);
    expect(judge().judge(gps({ lat: 51.48, lng: 0 }), NOW).refused).toEqual([]);
    const off = gps({ lat: 0, lng: 0 });
    expect(judge([{ name: 'zero_position', off: true }]).judge(off, NOW).refused).toEqual([]);
    expect(off.fields.lat).toBe(0);
  });

  it.each([
    ['ignstatus', 'gps', [0, 1], [7, -1, 0.5], 'flag'],
    ['allow_charging', 'can', [0, 1], [2], 'flag'],
    ['alert_short_circuit', 'can', [0, 1], [3], 'flag'],
    ['soc', 'can', [0, 100, 55.5], [-0.1, 100.01, 250], 'percent'],
    ['soh', 'can', [0, 100], [101], 'percent'],
    ['cell_voltage_07', 'can', [0, 3.3, 5], [-0.01, -3.2, 5.01], 'cell_voltage'],
    ['cell_temperature_03', 'can', [-55, 25, 150], [-55.1, 150.1, 600], 'cell_temperature'],
    ['battery_voltage', 'can', [0, 51.2, 1000], [-1, 1000.5], 'battery_voltage'],
    ['speed', 'gps', [0, 300], [-0.1, 300.1, 4000], 'speed'],
    ['alti', 'gps', [-500, 0, 9000], [-501, 9001], 'altitude'],
  ] as const)('%s: kept at %j, refused at %j by rule %s', (field, type, good, bad, rule) => {
    const p = judge();
    const make = (v: number) => (type === 'gps' ? gps({ [field]: v }) : can({ [field]: v, current: -3 }));
    for (const v of good) {
      const r = make(v);
      expect(p.judge(r, NOW), `${field}=${v}`).toEqual({ ok: true, refused: [] });
      expect(r.fields[field]).toBe(v);
    }
    for (const v of bad) {
      const r = make(v);
      const verdict = p.judge(r, NOW);
      expect(verdict.ok, `${field}=${v}`).toBe(true);
      expect(verdict.refused).toEqual([{ field, value: v, rule, error: expect.stringContaining(`${v} `) as string }]);
      expect(Object.hasOwn(r.fields, field)).toBe(false);
    }
  });

  it('words the refusal with the value, the bound, the unit and the reason', () => {
    const r = can({ soc: 250, current: 1 });
    expect(judge().judge(r, NOW).refused[0]!.error).toBe('250 is outside 0 to 100 % (percent: spec shape: state of charge and of health are percentages); not stored');
    expect(judge().judge(gps({ ignstatus: 7 }), NOW).refused[0]!.error).toBe(
      '7 is not 0 or 1 (flag: spec shape: ignition is on (1) or off (0); a boolean is read as 1/0); not stored',
    );
  });

  it('leaves unknown CAN parameters and other types unchecked', () => {
    const r = can({ my_custom_sensor: -99999, power: 1e9, cell_voltage_1: -5 });
    expect(judge().judge(r, NOW)).toEqual({ ok: true, refused: [] });
    // `speed` is a GPS rule; a CAN parameter of that name is another parameter.
    expect(judge().judge(can({ speed: 9999 }), NOW)).toEqual({ ok: true, refused: [] });
  });

  it('refuses the record when no field is left', () => {
    const r = can({ soc: 250, cell_voltage_01: -1 });
    const v = judge().judge(r, NOW);
    expect(v).toMatchObject({ ok: false, rule: 'percent' });
    expect(v.refused.map((f) => f.field)).toEqual(['soc', 'cell_voltage_01']);
    expect(v.ok || v.error).toContain('no field left to store: data.soc: 250 is outside 0 to 100 %');
  });
});

describe('PLAUSIBLE_RANGES overrides', () => {
  it('a rule name sets its bounds, off removes it, another name bounds that field', () => {
    const p = judge([
      { name: 'battery_voltage', min: 40, max: 60 },
      { name: 'speed', off: true },
      { name: 'power', min: -5_000, max: 5_000 },
    ]);
    const r = can({ battery_voltage: 600, power: 9_000, current: 2 });
    expect(p.judge(r, NOW).refused.map((f) => [f.field, f.rule])).toEqual([
      ['battery_voltage', 'battery_voltage'],
      ['power', 'power'],
    ]);
    expect(p.judge(gps({ speed: 4_000 }), NOW).refused).toEqual([]);
    expect(judge([{ name: 'flag', off: true }]).judge(gps({ ignstatus: 7 }), NOW).refused).toEqual([]);
  });

  it('every default row has a unit and a reason, and the patterns match the spec names', () => {
    for (const r of RANGE_RULES) {
      expect(r.unit, r.rule).not.toBe('');
      expect(r.why, r.rule).toMatch(/^(spec shape|physics|a peer)/);
    }
    expect(ruleFor(RANGE_RULES, 'can', 'cell_voltage_16')?.rule).toBe('cell_voltage');
    expect(ruleFor(RANGE_RULES, 'can', 'alert_thermal_runaway')?.rule).toBe('flag');
  });
});

it('says spans as people do', () => {
  expect([span(90_000), span(6 * MIN), span(3.5 * 3_600_000), span(12 * DAY), span(19.6 * 365.25 * DAY)]).toEqual(['90 s', '6 min', '3.5 h', '12 d', '19.6 years']);
});

describe('names outside the schema (EXTRA_FIELDS_MAX) and names of tags', () => {
  const bounded = (max: number) => {
    const { rules, zeroPosition } = rangeRules([]);
    return new Plausibility({ maxAheadMs: 15 * MIN, maxAgeMs: 90 * DAY, rules, zeroPosition, extraFields: new ExtraFieldNames(max) });
  };

  it('admits names beyond the schema up to the bound, a measurement at a time, then refuses new ones as fields', () => {
    const p = bounded(2);
    const first = can({ soc: 50, motor_temp: 61.5, fan_rpm: 900, pump_rpm: 12 });
    const r = p.judge(first, NOW);
    expect(r.ok).toBe(true);
    expect(r.refused).toEqual([{ field: 'pump_rpm', value: 12, rule: 'extra_fields', error: expect.stringMatching(/can already has EXTRA_FIELDS_MAX \(2\) field names beyond the schema/) }]);
    expect(first.fields).toEqual({ soc: 50, motor_temp: 61.5, fan_rpm: 900 });
    // The names admitted stay admitted; the schema's own names and its numbered series are never counted.
    expect(p.judge(can({ motor_temp: 60, cell_voltage_23: 3.3, alert: 0 }), NOW).refused).toEqual([]);
    // Another measurement has its own names.
    expect(p.judge(gps({ hdop: 0.9, sats: 11 }), NOW).refused).toEqual([]);
    expect(p.judge(gps({ pdop: 1.2 }), NOW).refused.map((f) => f.rule)).toEqual(['extra_fields']);
  });

  it('refuses a field named as a tag, whatever its value and with no bound', () => {
    const p = bounded(0);
    const r = p.judge(can({ soc: 50, vehicleno: 7 }), NOW);
    expect(r.refused).toEqual([{ field: 'vehicleno', value: 7, rule: 'tag_name', error: expect.stringMatching(/vehicleno is a tag of every point/) }]);
    expect(p.judge(can({ motor_temp: 1, a: 1, b: 2, c: 3 }), NOW).refused).toEqual([]);
  });
});
