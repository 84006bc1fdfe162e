import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';
import { detector } from './detector.js';

/**
 * A battery running low, with hysteresis (not a flap at the threshold): `soc_low` at the first CAN
 * record whose soc is at or under SOC_LOW (20 %), `soc_recovered` at the first after it at or over
 * SOC_RECOVERED (30 %); a vehicle's first soc already under SOC_LOW is low. Fields: the soc, and the
 * record's pack voltage where it carried one. Records without a soc say nothing.
 */
export interface SocLowState {
  /** 1 while low (emitted), 0 not; NaN before any soc. */
  low: number;
}

export function socLowRecord(ctx: Context, s: SocLowState, r: StreamRecord, plan: StreamPlan): void {
  const soc = valueOf(r, plan.socAt);
  if (soc === undefined) return;
  const o = ctx.opts;
  const fields = (): Record<string, number> => {
    const f: Record<string, number> = { soc };
    const v = valueOf(r, plan.voltageAt);
    if (v !== undefined) f.battery_voltage = v;
    return f;
  };
  if (s.low !== 1 && soc <= o.socLowPercent) {
    s.low = 1;
    emitEvent(ctx, 'soc_low', r.time, 1, fields());
  } else if (s.low === 1 && soc >= o.socRecoveredPercent) {
    s.low = 0;
    emitEvent(ctx, 'soc_recovered', r.time, 0, fields());
  } else if (s.low !== s.low) s.low = 0;
}

export const SOC_LOW_SLICE: Slice<SocLowState> = flatSlice(12, 'soc low', ['low'], () => ({ low: NaN }));

/** The socLow detector, declared once (detector.ts); ../kinds.ts lists it. */
export const SOC_LOW_DETECTOR = detector({
  key: 'socLow',
  slice: SOC_LOW_SLICE,
  fields: ['socAt', 'voltageAt'],
  on: { soc: (ctx, s, r, plan) => socLowRecord(ctx, s.socLow, r, plan) },
  input: "CAN `soc`, `battery_voltage`",
  settings: ["SOC_LOW", "SOC_RECOVERED"],
  derives: "`soc_low` / `soc_recovered` (`soc`, `battery_voltage`)",
  rules: "low at the first record at or under `SOC_LOW` (20 %), recovered at the first after it at or over `SOC_RECOVERED` (30 %): the soc wandering between flips nothing; a first soc already low is low",
  outputs: [
    { events: ['soc_low', 'soc_recovered'], shown: "`soc_low` / `soc_recovered`", measurement: VEHICLE_EVENTS, fields: [{ name: 'soc', meaning: "the state of charge" }, { name: 'battery_voltage', meaning: "the record’s pack voltage" }], what: "the soc at or under `SOC_LOW`, and back at or over `SOC_RECOVERED` (hysteresis)" },
  ],
});
