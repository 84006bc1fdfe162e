import { describe, expect, it } from 'vitest';
import { flattenRecord } from '../ingest/flatten/flatten.js';
import { formatLine } from './lineProtocol.js';

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
});
