import { ALARM_FIELDS } from '../../telemetry/fields.js';
import { CAN_PACK } from '../../telemetry/derivedMeasurements.js';

/**
 * Pack health, across the fields of one CAN record: what InfluxQL cannot compute from the `can`
 * point (max − min of sixteen cell voltages). Written as its own point, measurement `can_pack`, same
 * tag and timestamp, so `can` stays exactly what was sent. From the fields present only; a record
 * with none of the inputs gets no point.
 */
export const PACK_MEASUREMENT = CAN_PACK.name;

/**
 * The fields of a can_pack point, in the order they are written: job rows name them by their index here,
 * so the order is frozen (it is CAN_PACK's in src/telemetry/derivedMeasurements.ts, test/derived.test.ts).
 */
export const PACK_NAMES = [
  'cell_voltage_min', 'cell_voltage_max', 'cell_voltage_mean', 'cell_voltage_spread', 'cells_reported',
  'cell_temperature_min', 'cell_temperature_max', 'cell_temperature_spread', 'temperature_sensors_reported',
  'alerts_raised', 'cells_unused', 'temperature_sensors_unused',
] as const;

/**
 * How many of PACK_NAMES a `p` row names by its mask: the releases before the unused counts read no more
 * (a mask bit beyond their list is a malformed row to them), so the names from here on are written after
 * `;` by name, which every reader copies into the line as it is (points.ts, src/formats/README.md).
 */
export const PACK_NAMES_BY_MASK = 10;

/*
 * The battery rule computes from named fields (the schema's battery parameters, src/telemetry/vehicleData.ts):
 * numbered cell voltages and temperature sensors, the counts of each, and the alarm flags.
 */
export const NO_OF_CELLS = 'no_of_cells';
export const NO_OF_TEMPERATURE_SENSORS = 'no_of_temperature_sensors';
const CELL_VOLTAGE = /^cell_voltage_(\d{2})$/;
const CELL_TEMPERATURE = /^cell_temperature_(\d{2})$/;
const ALERT_FLAGS: ReadonlySet<string> = new Set(ALARM_FIELDS);

/** `cell_temperature_03` → 3; anything else → -1. */
export function sensorNumber(field: string): number {
  const m = CELL_TEMPERATURE.exec(field);
  return m ? Number(m[1]) : -1;
}

/**
 * What a field name is to pack health, looked up once per name: a cell voltage (its cell number), a
 * temperature sensor (its sensor number, as a negative: -1 - n), an alert flag, or nothing (PACK_OTHER).
 */
const ALERT = 0x4000_0000;
export const PACK_OTHER = 0x4000_0001;
const kindOf = new Map<string, number>();
export function packKind(field: string): number {
  let k = kindOf.get(field);
  if (k === undefined) {
    const m = CELL_VOLTAGE.exec(field);
    const sensor = m ? -1 : sensorNumber(field);
    k = m ? Number(m[1]) : sensor >= 0 ? -1 - sensor : ALERT_FLAGS.has(field) ? ALERT : PACK_OTHER;
    if (kindOf.size < 10_000) kindOf.set(field, k);
  }
  return k;
}

/**
 * One record's pack health, accumulated field by field in the record's order (`add`, with the name's
 * `packKind`): plain numbers, no object per value, since this runs for every CAN record. Slots a pack
 * does not use never enter it, and are counted instead: cells numbered beyond `no_of_cells` (when sent)
 * or reading exactly 0 V (an empty slot: no cell reads 0 V and still works); temperatures numbered beyond
 * `no_of_temperature_sensors` or equal to a sentinel (CAN_TEMP_SENTINELS: "no reading").
 */
export class PackHealth {
  private cells = 0; private cellMin = 0; private cellMax = 0; private cellSum = 0;
  private temps = 0; private tempMin = 0; private tempMax = 0;
  private alertFlags = 0; private alertsRaised = 0;
  private cellsUnused = 0; private tempsUnused = 0;
  private cellCount: number | undefined;
  private sensorCount: number | undefined;
  private sentinels: readonly number[] = [];

  /** No point: `values` gives none until `start`. */
  clear(): void {
    this.cells = this.temps = this.alertFlags = this.cellsUnused = this.tempsUnused = 0;
  }

  start(cellCount: number | undefined, sensorCount: number | undefined, sentinels: readonly number[]): this {
    this.cells = this.cellMin = this.cellMax = this.cellSum = 0;
    this.temps = this.tempMin = this.tempMax = 0;
    this.alertFlags = this.alertsRaised = 0;
    this.cellsUnused = this.tempsUnused = 0;
    this.cellCount = cellCount;
    this.sensorCount = sensorCount;
    this.sentinels = sentinels;
    return this;
  }

  add(k: number, v: number): void {
    if (k === PACK_OTHER) return;
    if (k === ALERT) {
      this.alertFlags++;
      if (v !== 0) this.alertsRaised++;
    } else if (k >= 0) {
      if ((this.cellCount !== undefined && k > this.cellCount) || v === 0) {
        this.cellsUnused++;
        return;
      }
      this.cellMin = this.cells === 0 ? v : Math.min(this.cellMin, v);
      this.cellMax = this.cells === 0 ? v : Math.max(this.cellMax, v);
      this.cellSum += v;
      this.cells++;
    } else {
      const sensor = -1 - k;
      if ((this.sensorCount !== undefined && sensor > this.sensorCount) || this.sentinels.includes(v)) {
        this.tempsUnused++;
        return;
      }
      this.tempMin = this.temps === 0 ? v : Math.min(this.tempMin, v);
      this.tempMax = this.temps === 0 ? v : Math.max(this.tempMax, v);
      this.temps++;
    }
  }

  /**
   * The point's fields: `out[i]` is the value of PACK_NAMES[i]; returns the bit mask of those it has
   * (0: the record carried none of the inputs, and gets no point). A record whose every slot was unused
   * has a point of its counts alone.
   */
  values(out: Float64Array): number {
    let mask = 0;
    if (this.cells > 0) {
      out[0] = this.cellMin;
      out[1] = this.cellMax;
      out[2] = this.cellSum / this.cells;
      out[3] = this.cellMax - this.cellMin;
      out[4] = this.cells;
      mask |= 0b11111;
    }
    if (this.temps > 0) {
      out[5] = this.tempMin;
      out[6] = this.tempMax;
      out[7] = this.tempMax - this.tempMin;
      out[8] = this.temps;
      mask |= 0b1_1110_0000;
    }
    if (this.alertFlags > 0) {
      out[9] = this.alertsRaised;
      mask |= 1 << 9;
    }
    // The unused counts only where there were some: most packs use every slot they report, and these go by name.
    if (this.cellsUnused > 0) {
      out[10] = this.cellsUnused;
      mask |= 1 << 10;
    }
    if (this.tempsUnused > 0) {
      out[11] = this.tempsUnused;
      mask |= 1 << 11;
    }
    return mask;
  }
}

const acc = new PackHealth();
const got = new Float64Array(PACK_NAMES.length);

/** The record's pack-health fields, or undefined when it carries none of their inputs. */
export function packHealth(fields: Readonly<Record<string, number>>, temperatureSentinels: readonly number[]): Record<string, number> | undefined {
  acc.start(fields[NO_OF_CELLS], fields[NO_OF_TEMPERATURE_SENSORS], temperatureSentinels);
  for (const key in fields) acc.add(packKind(key), fields[key]!);
  const mask = acc.values(got);
  if (mask === 0) return undefined;
  const out: Record<string, number> = {};
  for (let i = 0; i < PACK_NAMES.length; i++) if (mask & (1 << i)) out[PACK_NAMES[i]!] = got[i]!;
  return out;
}
