import { CAN_ALERT_FLAGS, temperatureSensorNumber } from '../../telemetry/fields.js';

/**
 * Pack health, across the fields of one CAN record: what InfluxQL cannot compute from the `can`
 * point (max − min of sixteen cell voltages). Written as its own point, measurement `can_pack`, same
 * tag and timestamp, so `can` stays exactly what was sent. From the fields present only; a record
 * with none of the inputs gets no point.
 */
export const PACK_MEASUREMENT = 'can_pack';

const ALERT_FLAGS: ReadonlySet<string> = new Set(CAN_ALERT_FLAGS);
const CELL_VOLTAGE = /^cell_voltage_(\d{2})$/;

/** Cell numbers by field name, looked up once per name. */
const cellOf = new Map<string, number>();
function cellNumber(field: string): number | undefined {
  let n = cellOf.get(field);
  if (n === undefined) {
    const m = CELL_VOLTAGE.exec(field);
    n = m ? Number(m[1]) : -1;
    if (cellOf.size < 10_000) cellOf.set(field, n);
  }
  return n < 0 ? undefined : n;
}

interface Range {
  n: number;
  min: number;
  max: number;
  sum: number;
}
const add = (r: Range | undefined, v: number): Range =>
  r ? { n: r.n + 1, min: Math.min(r.min, v), max: Math.max(r.max, v), sum: r.sum + v } : { n: 1, min: v, max: v, sum: v };

/**
 * The record's pack-health fields, or undefined when it carries none of their inputs. Cells count
 * when numbered within `no_of_cells` (when sent); temperatures after the unused-sensor rule
 * (numbered within `no_of_temperature_sensors`, and not a sentinel value).
 */
export function packHealth(fields: Readonly<Record<string, number>>, temperatureSentinels: readonly number[]): Record<string, number> | undefined {
  const cellCount = fields.no_of_cells;
  const sensorCount = fields.no_of_temperature_sensors;
  let cells: Range | undefined;
  let temps: Range | undefined;
  let alertFlags = 0;
  let alertsRaised = 0;
  for (const key in fields) {
    const v = fields[key]!;
    const cell = cellNumber(key);
    if (cell !== undefined) {
      if (cellCount === undefined || cell <= cellCount) cells = add(cells, v);
      continue;
    }
    const sensor = temperatureSensorNumber(key);
    if (sensor !== undefined) {
      if ((sensorCount === undefined || sensor <= sensorCount) && !temperatureSentinels.includes(v)) temps = add(temps, v);
      continue;
    }
    if (ALERT_FLAGS.has(key)) {
      alertFlags++;
      if (v !== 0) alertsRaised++;
    }
  }
  if (!cells && !temps && alertFlags === 0) return undefined;
  const out: Record<string, number> = {};
  if (cells) {
    out.cell_voltage_min = cells.min;
    out.cell_voltage_max = cells.max;
    out.cell_voltage_mean = cells.sum / cells.n;
    out.cell_voltage_spread = cells.max - cells.min;
    out.cells_reported = cells.n;
  }
  if (temps) {
    out.cell_temperature_min = temps.min;
    out.cell_temperature_max = temps.max;
    out.cell_temperature_spread = temps.max - temps.min;
    out.temperature_sensors_reported = temps.n;
  }
  if (alertFlags > 0) out.alerts_raised = alertsRaised;
  return out;
}
