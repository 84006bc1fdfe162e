import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, type Context, type Slice } from './context.js';
import { chargingUnderWayAt, type ChargingState } from './charging.js';
import { ignitionAt, type IgnitionState } from './ignition.js';
import { movingAt, type TrackState } from './track.js';
import { WindowedExtreme } from './windowed.js';

/**
 * Charge draining while parked (a fault, or a theft of charge): the soc of CAN records falling by at
 * least SOC_DRAIN_MIN percentage points within SOC_DRAIN_WINDOW while the vehicle is parked, that is the
 * ignition off and standing at the record's time (`ignitionAt`, `movingAt`: read from the GPS stream once
 * it has passed that time, derive.ts) and no charging session under way then (`chargingUnderWayAt`).
 * `soc_drain_while_parked` once a
 * parked spell, at the record that reached the fall: `soc_from` (the highest soc within the window
 * before, `windowed.ts`: an older high never hides a fall from a lower one), `soc_to`, `over_s` (since
 * the soc last read that highest). A spell ends when the vehicle is no longer parked; the next starts afresh.
 */
export interface DrainState {
  /** The spell's readings that can still be its highest within the window (empty: not parked). */
  highest: WindowedExtreme;
  /** 1 once told this spell. */
  told: number;
}

/** Levels held at most: a 5-point fall in 0.1-point steps is 50. */
const HELD = 64;

export function drainRecord(ctx: Context, s: DrainState, r: StreamRecord, plan: StreamPlan, ignition: IgnitionState, track: TrackState, charging: ChargingState): void {
  const soc = valueOf(r, plan.soc);
  if (soc === undefined) return;
  const parked = ignitionAt(ignition, r.time) === 0 && !movingAt(track, r.time) && !chargingUnderWayAt(charging, r.time);
  if (!parked) {
    s.highest.clear();
    s.told = 0;
    return;
  }
  const o = ctx.opts;
  s.highest.expire(r.time - o.socDrainWindowMs);
  const from = s.highest.value;
  if (from !== undefined && s.told === 0 && from - soc >= o.socDrainMinPercent) {
    s.told = 1;
    emitEvent(ctx, 'soc_drain_while_parked', r.time, 1, { soc_from: from, soc_to: soc, over_s: (r.time - s.highest.time!) / 1000 });
  }
  s.highest.push(r.time, soc);
}

/**
 * Stored as the releases before it stored one highest (`maxSoc`, `maxAt`, `told`: the queue's front), then
 * the count and the readings held: a release that knew only the front reads its front.
 */
export const DRAIN_SLICE: Slice<DrainState> = {
  id: 14,
  name: 'drain',
  fresh: () => ({ highest: new WindowedExtreme('highest', HELD), told: 0 }),
  save(s, out, at) {
    out[at] = s.highest.value ?? NaN;
    out[at + 1] = s.highest.time ?? NaN;
    out[at + 2] = s.told;
    const n = s.highest.length;
    out[at + 3] = n;
    for (let i = 0; i < n; i++) {
      out[at + 4 + 2 * i] = s.highest.times[i]!;
      out[at + 5 + 2 * i] = s.highest.values[i]!;
    }
    return at + 4 + 2 * n;
  },
  load(x) {
    const s = DRAIN_SLICE.fresh();
    s.told = x(2) === 1 ? 1 : 0;
    const n = x(3);
    if (n === n) for (let i = 0; i < n; i++) s.highest.push(x(4 + 2 * i), x(5 + 2 * i));
    // Stored by a release that kept one highest: it is the queue.
    else if (x(0) === x(0)) s.highest.push(x(1), x(0));
    return s;
  },
};
