/**
 * The benchmark's records: realistic gps and can push records from the emulator's fleet model
 * (src/upstream/emulator), reproducible from their index alone, so the load process and the orchestrator
 * produce the same records without passing them around.
 *
 * Record k belongs to vehicle k mod V and carries time T0 + 10·k ms: times are unique across a
 * phase, so a record is identified in InfluxDB by its timestamp (the latency probe relies on it),
 * and each vehicle reports every 10·V ms, as a fleet reporting every few seconds does.
 */
import { Fleet, type VehicleProfile } from '../../src/upstream/emulator/fleet.js';
import { canRecordData } from '../../src/upstream/emulator/can.js';
import { Rng, hash32, round } from '../../src/upstream/emulator/prng.js';
import { fieldNames } from '../../src/telemetry/fields.js';
const CAN_FIELDS = fieldNames('can');

/**
 * A week ago, on the day: recent enough for the receiver's TIME_MAX_AGE (a record older is refused as
 * a broken clock), far enough back that hours of records at STEP_MS stay behind the clock, and the same
 * in the orchestrator and the load processes (they could disagree only across a midnight).
 */
export const T0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 7 * 86_400_000;
export const STEP_MS = 10;
export const SEED = 20_261_121;

/**
 * How the values are written: `bms`, as the emulator's BMS does (a few decimals); `full`, every
 * fractional value as a float32 sensor reading widened to a double prints (16–17 significant digits,
 * 3.299999952316284 for 3.3), which costs the receiver more (the scanner copies only the text of values
 * of up to 15 digits). `BENCH_PRECISION`, set by `npm run bench -- --precision full`, so the load
 * process makes the same records.
 */
export type Precision = 'bms' | 'full';
export const PRECISION: Precision = process.env.BENCH_PRECISION === 'full' ? 'full' : 'bms';

/** Fractional values as float32 readings printed as doubles; integers (times, ids, counts) as they are. */
function widened(data: Record<string, number>): Record<string, number> {
  for (const k in data) {
    const x = data[k]!;
    if (!Number.isInteger(x)) data[k] = Math.fround(x);
  }
  return data;
}

export interface PushRecord {
  vehicleno: string;
  type: 'gps' | 'can';
  data: Record<string, number>;
}

export class BenchData {
  private readonly fleet: Fleet;
  /** The same vehicles with a fully fitted battery: 16 cells, 6 sensors, 16 battery ids (all 69 CAN fields). */
  private readonly full: VehicleProfile[];

  /** The fleet's depots, a vehicle each (the geofences the stages bench derives with). */
  depots(): Array<{ lat: number; lng: number }> {
    return this.fleet.vehicles.map((v) => v.depot);
  }

  constructor(
    readonly vehicles: number,
    readonly precision: Precision = PRECISION,
  ) {
    this.fleet = Fleet.create({ seed: SEED, size: vehicles });
    this.full = this.fleet.vehicles.map((v) => {
      const rng = Rng.seeded(hash32(SEED, v.index, 69));
      const b = v.battery;
      return {
        ...v,
        battery: {
          ...b,
          cells: 16,
          temperatureSensors: 6,
          batteryIds: Array.from({ length: 16 }, (_, i) => b.batteryIds[i] ?? rng.int(1_000_000, 9_999_999)),
          cellOffsets: Array.from({ length: 16 }, (_, i) => b.cellOffsets[i] ?? round(rng.range(-0.015, 0.015), 4)),
          sensorOffsets: Array.from({ length: 6 }, (_, i) => b.sensorOffsets[i] ?? round(rng.range(-1.5, 1.5), 2)),
        },
      };
    });
  }

  static timeOf(k: number): number {
    return T0 + STEP_MS * k;
  }

  static indexOf(time: number): number {
    return (time - T0) / STEP_MS;
  }

  /**
   * Mixed traffic: about half gps, half can; a can record carries the varying subset of its
   * parameters a BMS sends (the emulator's rule), always with `soc` so every can point is counted
   * by `count(soc)`.
   */
  mixed(k: number): PushRecord {
    const v = this.fleet.vehicles[k % this.vehicles]!;
    const t = BenchData.timeOf(k);
    if (hash32(SEED, k) % 2 === 0) return { vehicleno: v.vehicleno, type: 'gps', data: this.values({ ...this.fleet.gpsAt(v, t) }) };
    const state = this.fleet.canStateAt(v, t);
    const data: Record<string, number> = canRecordData(state, Rng.seeded(hash32(SEED, k, 1)));
    if (data.soc === undefined) data.soc = state.soc!;
    return { vehicleno: v.vehicleno, type: 'can', data: this.values(data) };
  }

  /** A can record with every one of the spec's 69 CAN fields (68 parameters and time). */
  fullCan(k: number): PushRecord {
    const v = this.full[k % this.vehicles]!;
    const state = this.fleet.canStateAt(v, BenchData.timeOf(k));
    const data: Record<string, number> = { time: state.time! };
    for (const f of CAN_FIELDS) {
      const x = state[f];
      if (x === undefined) throw new Error(`fleet state lacks ${f}`);
      data[f] = x;
    }
    return { vehicleno: v.vehicleno, type: 'can', data: this.values(data) };
  }

  private values(data: Record<string, number>): Record<string, number> {
    return this.precision === 'full' ? widened(data) : data;
  }

  record(kind: 'mixed' | 'fullCan', k: number): PushRecord {
    return kind === 'mixed' ? this.mixed(k) : this.fullCan(k);
  }
}
