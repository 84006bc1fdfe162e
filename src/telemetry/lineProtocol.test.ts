import { describe, expect, it } from 'vitest';
import { flattenRecord } from '../ingest/flatten/flatten.js';
import { formatLine, UnwritablePoint } from './lineProtocol.js';

describe('formatLine', () => {
  it('writes a point as the record path does: escaped tag, float fields, ms time', () => {
    const vehicleno = 'Flotte Nord, "Ünit"=7';
    const fields = { soc: 81, battery_voltage: 51.25, current: -0 };
    const viaRecord = flattenRecord({ vehicleno, type: 'can', time: 1_763_700_000_000, fields }, { temperatureSentinels: [] }).line;
    expect(formatLine('can', { vehicleno }, fields, 1_763_700_000_000)).toBe(viaRecord);
    expect(viaRecord).toBe('can,vehicleno=Flotte\\ Nord\\,\\ "Ünit"\\=7 soc=81,battery_voltage=51.25,current=0 1763700000000');
  });

  it('sorts tags by key', () => {
    expect(formatLine('fuel', { vehicleno: 'KA01', unit: 'litres' }, { value: 12.5 }, 1)).toBe('fuel,unit=litres,vehicleno=KA01 value=12.5 1');
  });

  it('refuses, naming it, every tag or field line protocol cannot carry as given: never writes it raw', () => {
    const refused = (tags: Record<string, string>, fields: Record<string, number> = { value: 1 }, time = 1) => {
      try {
        formatLine('vehicle_events', tags, fields, time);
      } catch (err) {
        expect(err).toBeInstanceOf(UnwritablePoint);
        return (err as Error).message;
      }
      return 'written';
    };
    expect(refused({ vehicleno: 'V', geofence: 'Depot North\ngps' })).toBe('vehicle_events tag "geofence"="Depot North\\ngps": must not contain control characters');
    expect(refused({ vehicleno: 'V', geofence: 'Depot\\' })).toBe('vehicle_events tag "geofence"="Depot\\\\": must not end with a backslash (InfluxDB line protocol cannot store it)');
    expect(refused({ vehicleno: 'a\\ b' })).toMatch(/backslash before a comma, space or equals sign/);
    expect(refused({ vehicleno: '' })).toMatch(/must not be empty/);
    expect(refused({ 'tag\u0085': 'x' })).toMatch(/control characters/);
    expect(refused({ vehicleno: 'V' }, { 'value\nx': 1 })).toMatch(/a field name is a letter/);
    expect(refused({ vehicleno: 'V' }, { value: Number.NaN })).toMatch(/not a finite number/);
    expect(refused({ vehicleno: 'V' }, {})).toMatch(/at least one field/);
    expect(refused({ vehicleno: 'V' }, { value: 1 }, 1.5)).toMatch(/whole number/);
    expect(refused({ vehicleno: 'Depot North, "Ünit"=7' })).toBe('written');
  });
});
