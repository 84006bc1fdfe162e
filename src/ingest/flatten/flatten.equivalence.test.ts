import { describe, expect, it } from 'vitest';
import { flattenRecord, flattenRecords } from './flatten.js';
import { escapeTag, formatFloat } from '../../telemetry/lineProtocol.js';
import { fieldNames } from '../../telemetry/fields.js';
import { sensorNumber } from './packHealth.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { mulberry32 } from '../../upstream/emulator/prng.js';
const CAN_FIELDS = fieldNames('can');
const GPS_FIELDS = fieldNames('gps');
const temperatureSensorNumber = (f: string): number | undefined => (sensorNumber(f) >= 0 ? sensorNumber(f) : undefined);

/*
 * flatten.ts was reworked for speed (sensor numbers and escaped tags looked up once per name,
 * fewer intermediate strings). This holds it to the implementation it replaced, kept here
 * verbatim, on random records with unused sensors, sentinels and objects with or without a
 * prototype (validateRecord and decodeJob make them without).
 */
function referenceFlattenRecord(record: TelemetryRecord, opts: { temperatureSentinels: readonly number[] }) {
  function isUnusedSensor(field: string, value: number): boolean {
    const n = temperatureSensorNumber(field);
    if (n === undefined) return false;
    const count = record.fields.no_of_temperature_sensors;
    if (count !== undefined && n > count) return true;
    return opts.temperatureSentinels.includes(value);
  }
  let fields = '';
  const dropped: string[] = [];
  for (const key in record.fields) {
    const value = record.fields[key]!;
    if (record.type === 'can' && isUnusedSensor(key, value)) {
      dropped.push(key);
      continue;
    }
    fields += `${fields ? ',' : ''}${key}=${formatFloat(value)}`;
  }
  if (!fields) return { line: undefined, dropped };
  return { line: `${record.type},vehicleno=${escapeTag(record.vehicleno)} ${fields} ${record.time}`, dropped };
}

const NAMES = [...GPS_FIELDS, ...CAN_FIELDS, 'cell_temperature_00', 'cell_temperature_07', 'cell_temperature_99', 'cell_temperature_1', 'x_cell_temperature_01', 'new_param'];
const PLATES = ['KA01AB1234', 'a b,c=d"e\\f', 'Ünïcødé 😀', 'x=y', ' lead', 'trail '];

describe('flatten, reworked for speed', () => {
  it('writes exactly the lines, and drops exactly the fields, of the implementation it replaced', () => {
    const rnd = mulberry32(424242);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    for (let i = 0; i < 20_000; i++) {
      const fields: Record<string, number> = rnd() < 0.5 ? {} : (Object.create(null) as Record<string, number>);
      const n = Math.floor(rnd() * 30);
      for (let k = 0; k < n; k++) {
        fields[pick(NAMES)] = pick([-40, -40.5, 0, -0, 1, 2, 3, 6, 7, 25.5, 1e21, 5e-324, Math.round(rnd() * 1e5) / 100]);
      }
      if (rnd() < 0.3) fields.no_of_temperature_sensors = Math.floor(rnd() * 8);
      const record: TelemetryRecord = { vehicleno: pick(PLATES), type: rnd() < 0.8 ? 'can' : 'gps', time: 1_700_000_000_000 + i, fields };
      const opts = { temperatureSentinels: pick([[-40], [], [-40, 0], [25.5]]) };
      expect(flattenRecord(record, opts)).toEqual(referenceFlattenRecord(record, opts));
    }
  });

  it('batches keep each line with the index of its record', () => {
    const records = [0, 1, 2, 3].map(
      (i): TelemetryRecord => ({ vehicleno: 'V', type: 'can', time: i, fields: i % 2 ? { soc: i } : { cell_temperature_01: -40 } }),
    );
    const b = flattenRecords(records, { temperatureSentinels: [-40] });
    expect(b.lines).toEqual(['can,vehicleno=V soc=1 1', 'can,vehicleno=V soc=3 3']);
    expect(b.sources).toEqual([1, 3]);
    expect(b.droppedFields).toBe(2);
    expect(b.emptyRecords).toBe(2);
  });
});
