import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { BATTERY_SWAP_SLICE, type BatterySwapState } from './batterySwap.js';
import { emitEvent, type Context, type Slice } from './context.js';
import { detector } from './detector.js';
import { packIdOf } from './pack.js';
import { lasted } from './spell.js';
import { WindowedExtreme } from './windowed.js';

/**
 * A pack heating before its BMS's thermal alarm, on its real sensors only (../packValues.ts: no
 * sentinel, no sensor beyond `no_of_temperature_sensors`):
 * - `pack_heating_fast`: the hottest sensor's reading risen by PACK_HEAT_RATE × PACK_HEAT_WINDOW from
 *   the lowest it read within the window (`windowed.ts`: an older low leaving never hides a rise from a
 *   later one), or at PACK_HEAT_RATE on average since the last reading before the window (within two
 *   windows; records without temperatures early in the window put its low late, and a pack heating 3 °C
 *   a minute would reach its alarm first), on two records in a row (one reading off is a glitch, not heat); told at the second,
 *   once an episode, which ends once the hottest sensor is back down to the low that rise was measured from;
 * - `pack_sensor_apart`: of three or more real sensors, the one furthest from their median more than
 *   PACK_SENSOR_APART from it on every record for PACK_HEAT_WINDOW (`lasted`), stamped at the first;
 *   once a spell, which a record within the spread (or a different sensor apart) ends.
 * Tagged with the pack (`pack.ts`).
 */
export interface PackHeatState {
  /** The hottest sensor's readings that may still be the lowest within the window: (time, °C). */
  lowest: WindowedExtreme;
  /** 1 when the record before reached the rise; the low the told rise was measured from (NaN: no episode). */
  rising: number;
  toldFrom: number;
  /** The sensor apart: since (NaN: none), its number, whether told. */
  apartSince: number;
  apartSensor: number;
  apartTold: number;
  /** The last reading before the window, within two windows: (time, °C; NaN: none). */
  edgeTime: number;
  edge: number;
}

/** Readings the window holds at most (a rise in finer steps is measured from a coarser low: told late, never wrongly). */
const HELD = 8;

/** The tag of the pack an event is of (none where the vehicle reported no id). A function of the module, not a closure made for every record. */
function packTag(swap: Readonly<BatterySwapState>): Record<string, string> | undefined {
  const id = packIdOf(swap.bmsId, swap.batteryId);
  return id === id ? { pack: String(id) } : undefined;
}

export function packHeatRecord(ctx: Context, s: PackHeatState, swap: Readonly<BatterySwapState>, r: StreamRecord, plan: StreamPlan): void {
  const hottest = valueOf(r, plan.hottestAt);
  if (hottest === undefined) return;
  const o = ctx.opts;
  const t = r.time;
  const window = o.packHeatWindowMs;
  // The newest of the readings leaving the window: the last before it, while the readings rise (each is then held).
  const held = s.lowest.held;
  while (held.length > 0 && held.at(0, 0) < t - window) {
    s.edgeTime = held.at(0, 0);
    s.edge = held.at(0, 1);
    held.dropOldest(1);
  }
  if (!(s.edgeTime >= t - 2 * window)) s.edgeTime = s.edge = NaN;
  s.lowest.push(t, hottest);
  let low = s.lowest.value!;
  let lowAt = s.lowest.time!;
  // Risen rate × window above the window's low; or risen at rate on average since the last reading before
  // the window (records without temperatures early in the window put its low late: each field has its own
  // staleness), over more than the window.
  let rising = hottest - low >= (o.packHeatRate * window) / 60_000;
  if (!rising && (hottest - s.edge) * 60_000 >= o.packHeatRate * (t - s.edgeTime)) {
    rising = true;
    low = s.edge;
    lowAt = s.edgeTime;
  }
  if (rising) {
    if (s.rising === 1 && s.toldFrom !== s.toldFrom) {
      s.toldFrom = low;
      const sensor = valueOf(r, plan.hottestSensorAt)!;
      emitEvent(ctx, 'pack_heating_fast', t, 1, { rate_c_per_min: ((hottest - low) * 60_000) / (t - lowAt), temperature: hottest, from_temperature: low, over_s: (t - lowAt) / 1000, sensor, window_s: window / 1000 }, packTag(swap));
    }
    s.rising = 1;
  } else {
    s.rising = 0;
  }
  if (hottest <= s.toldFrom) s.toldFrom = NaN;
  const deviation = valueOf(r, plan.apartAt);
  const sensor = valueOf(r, plan.apartSensorAt);
  if (deviation === undefined || sensor === undefined || Math.abs(deviation) <= o.packSensorApartC || (s.apartSince === s.apartSince && sensor !== s.apartSensor)) {
    s.apartSince = s.apartSensor = NaN;
    s.apartTold = 0;
    if (deviation === undefined || sensor === undefined || Math.abs(deviation) <= o.packSensorApartC) return;
  }
  if (s.apartSince !== s.apartSince) {
    s.apartSince = t;
    s.apartSensor = sensor;
    s.apartTold = 0;
  }
  if (s.apartTold === 0 && lasted(s.apartSince, t, o.packHeatWindowMs)) {
    s.apartTold = 1;
    emitEvent(ctx, 'pack_sensor_apart', s.apartSince, 1, { sensor, deviation_c: deviation, temperature: hottest, over_s: (t - s.apartSince) / 1000, limit_c: o.packSensorApartC }, packTag(swap));
  }
}

/**
 * Stored: the window's readings (`ring.ts`'s `'list'` layout), then rising, toldFrom, then the sensor apart's
 * three, then the last reading before the window (its time and °C, added after f7b4220), the trailing ones left out while they hold nothing (read back as absent: NaN, so fresh): a vehicle's
 * state is written on every commit (and into its checkpoints), and a pack is seldom heating fast or a sensor apart.
 * (Doubles a later release adds come after all of them, and are written with them.)
 */
export const PACK_HEAT_SLICE: Slice<PackHeatState> = {
  id: 19,
  name: 'pack heat',
  fresh: () => ({ lowest: new WindowedExtreme('lowest', HELD), rising: 0, toldFrom: NaN, apartSince: NaN, apartSensor: NaN, apartTold: 0, edgeTime: NaN, edge: NaN }),
  save(s, out, at) {
    const end = s.lowest.held.save(out, at);
    const edge = s.edgeTime === s.edgeTime;
    const apart = edge || s.apartSince === s.apartSince;
    if (!apart && s.rising === 0 && s.toldFrom !== s.toldFrom) return end;
    out[end] = s.rising;
    out[end + 1] = s.toldFrom;
    if (!apart) return end + 2;
    out[end + 2] = s.apartSince;
    out[end + 3] = s.apartSensor;
    out[end + 4] = s.apartTold;
    if (!edge) return end + 5;
    // (Added after f7b4220, which reads the five before and not these: a vehicle it commits loses the edge, and its heating is told as that release tells it.)
    out[end + 5] = s.edgeTime;
    out[end + 6] = s.edge;
    return end + 7;
  },
  load(x) {
    const s = PACK_HEAT_SLICE.fresh();
    const end = s.lowest.held.load(x, 0);
    s.rising = x(end) === 1 ? 1 : 0;
    s.toldFrom = x(end + 1);
    if (x(end + 2) === x(end + 2)) {
      s.apartSince = x(end + 2);
      s.apartSensor = x(end + 3);
      s.apartTold = x(end + 4) === 1 ? 1 : 0;
    }
    s.edgeTime = x(end + 5);
    s.edge = x(end + 6);
    return s;
  },
};

/** The packHeat detector, declared once (detector.ts); ../kinds.ts lists it. */
export const PACK_HEAT_DETECTOR = detector({
  key: 'packHeat',
  slice: PACK_HEAT_SLICE,
  fields: ['hottestAt', 'hottestSensorAt', 'apartAt', 'apartSensorAt'],
  reads: { batterySwap: BATTERY_SWAP_SLICE },
  on: { pack: (ctx, s, r, plan) => packHeatRecord(ctx, s.packHeat, s.batterySwap, r, plan) },
  input: "CAN `cell_temperature_*` (the real sensors: `no_of_temperature_sensors`, `CAN_TEMP_SENTINELS`); the pack's ids (`batterySwap`)",
  settings: ['PACK_HEAT_RATE', 'PACK_HEAT_WINDOW', 'PACK_SENSOR_APART', 'CAN_TEMP_SENTINELS'],
  derives: "`pack_heating_fast` (`rate_c_per_min`, `temperature`, `from_temperature`, `over_s`, `sensor`, `window_s`), `pack_sensor_apart` (`sensor`, `deviation_c`, `temperature`, `over_s`, `limit_c`); tag `pack`",
  rules: "heating: the hottest real sensor `PACK_HEAT_RATE` (2 °C/min) × `PACK_HEAT_WINDOW` (5 min) above the lowest it read within the window (`windowed.ts`), or risen at `PACK_HEAT_RATE` on average since the last reading before the window (within two windows: records without temperatures early in the window), on two records in a row (a glitch is one), once an episode (cooling back to the low it rose from ends it); apart: of three or more real sensors, the one furthest from their median more than `PACK_SENSOR_APART` (10 °C) from it for `PACK_HEAT_WINDOW` (`lasted`), stamped at the first, once a spell",
  outputs: [
    {
      events: ['pack_heating_fast'],
      shown: '`pack_heating_fast`',
      measurement: VEHICLE_EVENTS,
      fields: [
        { name: 'rate_c_per_min', meaning: 'the rise over the time since the low' },
        { name: 'temperature', meaning: 'the hottest real sensor’s reading' },
        { name: 'from_temperature', meaning: 'the lowest it read within `PACK_HEAT_WINDOW`' },
        { name: 'over_s', meaning: 'since that low' },
        { name: 'sensor', meaning: 'the hottest sensor’s number' },
        { name: 'window_s', meaning: '`PACK_HEAT_WINDOW`' },
        { name: 'pack', meaning: 'the pack’s id (tag): `bms_id`, else `bat_id_1`, where the vehicle reported one' },
      ],
      what: 'a pack’s hottest real sensor rising `PACK_HEAT_RATE` on average over `PACK_HEAT_WINDOW`',
    },
    {
      events: ['pack_sensor_apart'],
      shown: '`pack_sensor_apart`',
      measurement: VEHICLE_EVENTS,
      fields: [
        { name: 'sensor', meaning: 'the sensor apart' },
        { name: 'deviation_c', meaning: 'its reading less the median of the pack’s real sensors, when told' },
        { name: 'temperature', meaning: 'the hottest real sensor’s reading' },
        { name: 'over_s', meaning: 'how long it had been apart when told' },
        { name: 'limit_c', meaning: '`PACK_SENSOR_APART`' },
        { name: 'pack', meaning: 'the pack’s id (tag): `bms_id`, else `bat_id_1`, where the vehicle reported one' },
      ],
      what: 'one of a pack’s real sensors more than `PACK_SENSOR_APART` from their median for `PACK_HEAT_WINDOW`',
    },
  ],
});
