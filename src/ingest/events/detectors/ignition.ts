import { SPEED, valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';

/**
 * Ignition (Traccar's IgnitionEventHandler): `ignition_on` / `ignition_off` when a record's ignition
 * flips; a vehicle's first record emits `ignition_on` if at 1, nothing if at 0. Fields: the record's
 * position and speed.
 */
export interface IgnitionState {
  /** 1 on, 0 off. */
  on: number;
}

export function ignitionRecord(ctx: Context, s: IgnitionState, r: StreamRecord, plan: StreamPlan): void {
  const ign = valueOf(r, plan.ignition);
  if ((ign !== 0 && ign !== 1) || ign === s.on) return;
  s.on = ign;
  const f: Record<string, number> = {};
  const lat = valueOf(r, plan.lat);
  const lng = valueOf(r, plan.lng);
  if (lat !== undefined && lng !== undefined && plan.latName !== undefined && plan.lngName !== undefined) {
    f[plan.latName] = lat;
    f[plan.lngName] = lng;
  }
  const speed = valueOf(r, plan.speed);
  if (speed !== undefined) f[SPEED] = speed;
  emitEvent(ctx, ign === 1 ? 'ignition_on' : 'ignition_off', r.time, ign, f);
}

export const IGNITION_SLICE: Slice<IgnitionState> = flatSlice(3, 'ignition', ['on'], () => ({ on: 0 }));
