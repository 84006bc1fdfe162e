import { CAN_ALERT_FLAGS, temperatureSensorNumber } from '../../telemetry/fields.js';

/**
 * Pack health, across the fields of one CAN record: what InfluxQL cannot compute from the `can`
 * point (max − min of sixteen cell voltages). Written as its own point, measurement `can_pack`, same
 * tag and timestamp, so `can` stays exactly what was sent. From the fields present only; a record
 * with none of the inputs gets no point.
 */
export const PACK_MEASUREMENT = 'can_pack';

/** The fields of a can_pack point, in the order they are written. */
export const PACK_NAMES = [
  'cell_voltage_min', 'cell_voltage_max', 'cell_voltage_mean', 'cell_voltage_spread', 'cells_reported',
  'cell_temperature_min', 'cell_temperature_max', 'cell_temperature_spread', 'temperature_sensors_reported',
  'alerts_raised',
] as const;

const ALERT_FLAGS: ReadonlySet<string> = new Set(CAN_ALERT_FLAGS);
const CELL_VOLTAGE = /^cell_voltage_(\d{2})$/;

/**
 * What a field name is to pack health, looked up once per name: a cell voltage (its cell number), a
 * temperature sensor (its sensor number, as a negative: -1 - n), an alert flag, or nothing.
 */
const ALERT = 0x4000_0000;
const OTHER = 0x4000_0001;
const kindOf = new Map<string, number>();
function kind(field: string): number {
  let k = kindOf.get(field);
  if (k === undefined) {
    const m = CELL_VOLTAGE.exec(field);
    const sensor = m ? undefined : temperatureSensorNumber(field);
    k = m ? Number(m[1]) : sensor !== undefined ? -1 - sensor : ALERT_FLAGS.has(field) ? ALERT : OTHER;
    if (kindOf.size < 10_000) kindOf.set(field, k);
  }
  return k;
}

/**
 * The record's pack-health fields, or undefined when it carries none of their inputs. Cells count
 * when numbered within `no_of_cells` (when sent); temperatures after the unused-sensor rule
 * (numbered within `no_of_temperature_sensors`, and not a sentinel value).
 */
export function packHealth(fields: Readonly<Record<string, number>>, temperatureSentinels: readonly number[]): Record<string, number> | undefined {
  const cellCount = fields.no_of_cells;
  const sensorCount = fields.no_of_temperature_sensors;
  // Plain accumulators, no object per value: this runs for every CAN record.
  let cells = 0, cellMin = 0, cellMax = 0, cellSum = 0;
  let temps = 0, tempMin = 0, tempMax = 0;
  let alertFlags = 0;
  let alertsRaised = 0;
  for (const key in fields) {
    const k = kind(key);
    if (k === OTHER) continue;
    const v = fields[key]!;
    if (k === ALERT) {
      alertFlags++;
      if (v !== 0) alertsRaised++;
    } else if (k >= 0) {
      if (cellCount !== undefined && k > cellCount) continue;
      cellMin = cells === 0 ? v : Math.min(cellMin, v);
      cellMax = cells === 0 ? v : Math.max(cellMax, v);
      cellSum += v;
      cells++;
    } else {
      const sensor = -1 - k;
      if ((sensorCount !== undefined && sensor > sensorCount) || temperatureSentinels.includes(v)) continue;
      tempMin = temps === 0 ? v : Math.min(tempMin, v);
      tempMax = temps === 0 ? v : Math.max(tempMax, v);
      temps++;
    }
  }
  if (cells === 0 && temps === 0 && alertFlags === 0) return undefined;
  const out: Record<string, number> = {};
  if (cells > 0) {
    out.cell_voltage_min = cellMin;
    out.cell_voltage_max = cellMax;
    out.cell_voltage_mean = cellSum / cells;
    out.cell_voltage_spread = cellMax - cellMin;
    out.cells_reported = cells;
  }
  if (temps > 0) {
    out.cell_temperature_min = tempMin;
    out.cell_temperature_max = tempMax;
    out.cell_temperature_spread = tempMax - tempMin;
    out.temperature_sensors_reported = temps;
  }
  if (alertFlags > 0) out.alerts_raised = alertsRaised;
  return out;
}
