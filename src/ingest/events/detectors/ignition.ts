import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { SPEED, valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, type Context, type Slice } from './context.js';
import { zeros } from '../pending.js';
import { detector } from './detector.js';

/**
 * Ignition (Traccar's IgnitionEventHandler): `ignition_on` / `ignition_off` when a record's ignition
 * flips; a vehicle's first record emits `ignition_on` if at 1, nothing if at 0. Fields: the record's
 * position and speed. Keeps the last FLIP_RING changes (the first value seen counts as one), so the CAN
 * stream can ask whether the ignition was off at a record's time (`ignitionAt`).
 */
export interface IgnitionState {
  /** 1 on, 0 off. */
  on: number;
  /** +t switched on at t, -t off at t (the first value seen too): flipN of them, the next at flipAt. */
  flips: number[];
  flipN: number;
  flipAt: number;
}

export const FLIP_RING = 8;

export function ignitionRecord(ctx: Context, s: IgnitionState, r: StreamRecord, plan: StreamPlan): void {
  const ign = valueOf(r, plan.ignitionAt);
  if (ign !== 0 && ign !== 1) return;
  const first = s.flipN === 0;
  if (ign === s.on && !first) return;
  s.flips[s.flipAt] = ign === 1 ? r.time : -r.time;
  s.flipAt = (s.flipAt + 1) % FLIP_RING;
  if (s.flipN < FLIP_RING) s.flipN++;
  if (ign === s.on) return; // a first record at 0: known off, nothing to tell
  s.on = ign;
  const f: Record<string, number> = {};
  const lat = valueOf(r, plan.latAt);
  const lng = valueOf(r, plan.lngAt);
  if (lat !== undefined && lng !== undefined && plan.latName !== undefined && plan.lngName !== undefined) {
    f[plan.latName] = lat;
    f[plan.lngName] = lng;
  }
  const speed = valueOf(r, plan.speedAt);
  if (speed !== undefined) f[SPEED] = speed;
  emitEvent(ctx, ign === 1 ? 'ignition_on' : 'ignition_off', r.time, ign, f);
}

/**
 * The ignition at `time` (1 on, 0 off; undefined: not known, no ignition seen by then): exact once the
 * GPS stream has committed a record past `time`, else its latest; before the changes remembered, the
 * state before the oldest.
 */
export function ignitionAt(s: IgnitionState, time: number): number | undefined {
  let oldest: number | undefined;
  for (let j = 1; j <= s.flipN; j++) {
    const x = s.flips[(s.flipAt - j + FLIP_RING) % FLIP_RING]!;
    if (Math.abs(x) <= time) return x > 0 ? 1 : 0;
    oldest = x;
  }
  return oldest === undefined || s.flipN < FLIP_RING ? undefined : oldest > 0 ? 0 : 1;
}

/** Whether the history of changes reaches back to `time`. */
export function ignitionCovers(s: IgnitionState, time: number): boolean {
  return s.flipN < FLIP_RING || Math.abs(s.flips[s.flipAt % FLIP_RING]!) <= time;
}

/** Whether the ignition changed after `from` up to `to` (by the history, which must cover `from`). */
export function ignitionChanged(s: IgnitionState, from: number, to: number): boolean {
  for (let j = 1; j <= s.flipN; j++) {
    const t = Math.abs(s.flips[(s.flipAt - j + FLIP_RING) % FLIP_RING]!);
    if (t <= from) return false;
    if (t <= to) return true;
  }
  return false;
}

export const IGNITION_SLICE: Slice<IgnitionState> = {
  id: 3,
  name: 'ignition',
  fresh: () => ({ on: 0, flips: zeros(FLIP_RING), flipN: 0, flipAt: 0 }),
  save(s, out, at) {
    out[at] = s.on;
    out[at + 1] = s.flipN;
    out[at + 2] = s.flipAt;
    for (let j = 0; j < FLIP_RING; j++) out[at + 3 + j] = s.flips[j]!;
    return at + 3 + FLIP_RING;
  },
  load(x) {
    const s = IGNITION_SLICE.fresh();
    s.on = x(0) === 1 ? 1 : 0;
    // Stored before the changes were kept: none known.
    const n = x(1);
    if (n === n) {
      s.flipN = n;
      s.flipAt = x(2);
      for (let j = 0; j < FLIP_RING; j++) s.flips[j] = x(3 + j);
    }
    return s;
  },
};

/** The ignition detector, declared once (detector.ts); ../kinds.ts lists it. */
export const IGNITION_DETECTOR = detector({
  key: 'ignition',
  slice: IGNITION_SLICE,
  fields: ['ignitionAt', 'latAt', 'lngAt', 'speedAt'],
  on: { position: (ctx, s, r, plan) => ignitionRecord(ctx, s.ignition, r, plan) },
  input: "GPS `ignstatus` (with the record's position and `speed`)",
  settings: [],
  derives: "`ignition_on` / `ignition_off` (with the fix's `lat`, `lng`, `speed`); its last 8 changes (`ignitionAt`, for the CAN stream)",
  rules: "a flip; a first record at 1 is `ignition_on`",
  outputs: [
    { events: ['ignition_on', 'ignition_off'], shown: "`ignition_on` / `ignition_off`", measurement: VEHICLE_EVENTS, fields: [{ name: 'lat', meaning: "the fix’s latitude" }, { name: 'lng', meaning: "the fix’s longitude" }, { name: 'speed', meaning: "the fix’s speed" }], what: "the gps `ignstatus` flipping" },
  ],
});
