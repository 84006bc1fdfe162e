import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';
import { chargingUnderWay, type ChargingState } from './charging.js';
import { ignitionAt, type IgnitionState } from './ignition.js';
import { movingAt, type TrackState } from './track.js';

/**
 * Charge draining while parked (a fault, or a theft of charge): the soc of CAN records falling by at
 * least SOC_DRAIN_MIN percentage points within SOC_DRAIN_WINDOW while the vehicle is parked, that is the
 * ignition off and standing at the record's time (`ignitionAt`, `movingAt`: read from the GPS stream,
 * exact once it has passed that time) and no charging session under way. `soc_drain_while_parked` once a
 * parked spell, at the record that reached the fall: `soc_from` (the highest soc within the window
 * before), `soc_to`, `over_s` (since the soc last read that highest). A spell ends when the vehicle is no longer parked; the next starts afresh.
 */
export interface DrainState {
  /** The spell's highest soc within the window and its time (NaN: not parked). */
  maxSoc: number;
  maxAt: number;
  /** 1 once told this spell. */
  told: number;
}

export function drainRecord(ctx: Context, s: DrainState, r: StreamRecord, plan: StreamPlan, ignition: IgnitionState, track: TrackState, charging: ChargingState): void {
  const soc = valueOf(r, plan.soc);
  if (soc === undefined) return;
  const parked = ignitionAt(ignition, r.time) === 0 && !movingAt(track, r.time) && !chargingUnderWay(charging);
  if (!parked) {
    s.maxSoc = s.maxAt = NaN;
    s.told = 0;
    return;
  }
  const o = ctx.opts;
  // A new spell, a higher soc, or the highest fallen out of the window: the fall is measured from here.
  if (s.maxSoc !== s.maxSoc || soc >= s.maxSoc || r.time - s.maxAt > o.socDrainWindowMs) {
    s.maxSoc = soc;
    s.maxAt = r.time;
    return;
  }
  if (s.told === 0 && s.maxSoc - soc >= o.socDrainMinPercent) {
    s.told = 1;
    emitEvent(ctx, 'soc_drain_while_parked', r.time, 1, { soc_from: s.maxSoc, soc_to: soc, over_s: (r.time - s.maxAt) / 1000 });
  }
}

export const DRAIN_SLICE: Slice<DrainState> = flatSlice(14, 'drain', ['maxSoc', 'maxAt', 'told'], () => ({ maxSoc: NaN, maxAt: NaN, told: 0 }));
