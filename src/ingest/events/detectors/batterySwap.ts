import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';
import { detector } from './detector.js';

/**
 * A battery swapped (a swap station's work, a lease's): `battery_swapped` when a CAN record's pack
 * identity differs from the last one seen: its BMS's id (`bms_id`) or its first battery's (`bat_id_1`),
 * each compared only with the last value of the same field (a record carries a varying subset: one
 * without ids says nothing). Fields: the old and new ids of what changed, and the soc then, where known.
 */
export interface BatterySwapState {
  /** The last ids seen (NaN: none yet). */
  bmsId: number;
  batteryId: number;
}

export function batterySwapRecord(ctx: Context, s: BatterySwapState, r: StreamRecord, plan: StreamPlan): void {
  const bms = valueOf(r, plan.bmsIdAt);
  const battery = valueOf(r, plan.batteryIdAt);
  if (bms === undefined && battery === undefined) return;
  const fields: Record<string, number> = {};
  if (bms !== undefined && s.bmsId === s.bmsId && bms !== s.bmsId) Object.assign(fields, { bms_id_old: s.bmsId, bms_id_new: bms });
  if (battery !== undefined && s.batteryId === s.batteryId && battery !== s.batteryId) Object.assign(fields, { bat_id_old: s.batteryId, bat_id_new: battery });
  if (bms !== undefined) s.bmsId = bms;
  if (battery !== undefined) s.batteryId = battery;
  if (Object.keys(fields).length === 0) return;
  const soc = valueOf(r, plan.socAt);
  if (soc !== undefined) fields.soc = soc;
  emitEvent(ctx, 'battery_swapped', r.time, 1, fields);
}

export const BATTERY_SWAP_SLICE: Slice<BatterySwapState> = flatSlice(13, 'battery swap', ['bmsId', 'batteryId'], () => ({ bmsId: NaN, batteryId: NaN }));

/** The batterySwap detector, declared once (detector.ts); ../kinds.ts lists it. */
export const BATTERY_SWAP_DETECTOR = detector({
  key: 'batterySwap',
  slice: BATTERY_SWAP_SLICE,
  fields: ['bmsIdAt', 'batteryIdAt', 'socAt'],
  on: { battery: (ctx, s, r, plan) => batterySwapRecord(ctx, s.batterySwap, r, plan) },
  input: "CAN `bms_id`, `bat_id_1` (with the record's `soc`)",
  settings: [],
  derives: "`battery_swapped` (`bms_id_old` / `_new`, `bat_id_old` / `_new` of what changed, `soc`)",
  rules: "a record's pack id differing from the last seen of the same field (a record without ids says nothing; a vehicle's first ids are no swap)",
  outputs: [
    { events: ['battery_swapped'], shown: "`battery_swapped`", measurement: VEHICLE_EVENTS, fields: [{ name: 'bms_id_old', meaning: "the BMS id before (when it changed)" }, { name: 'bms_id_new', meaning: "the BMS id after" }, { name: 'bat_id_old', meaning: "the first battery’s id before (when it changed)" }, { name: 'bat_id_new', meaning: "the first battery’s id after" }, { name: 'soc', meaning: "the state of charge then" }], what: "a pack's `bms_id` or `bat_id_1` differing from the last seen" },
  ],
});
