import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { emitEvent, type Context, type Slice } from './context.js';
import { CHARGING_SLICE, chargingUnderWayAt, type ChargingState } from './charging.js';
import { IGNITION_SLICE, ignitionAt, type IgnitionState } from './ignition.js';
import { movingAt, TRACK_SLICE, type TrackState } from './track.js';
import { WindowedExtreme } from './windowed.js';
import { Ring } from './ring.js';
import { detector } from './detector.js';

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
  /** 1 once emitted this spell. */
  told: number;
  /**
   * Readings (time, soc) waiting for the GPS track to pass their time (derive.ts, "Waits"), oldest first:
   * a drain is a matter of hours, so a few numbers a reading, kept in the state, and at most DRAIN_WAITING
   * of them (derive.ts takes the oldest, as the track is then, before one more would make it forgotten).
   */
  waiting: Ring;
}

/** Levels held at most: a 5-point fall in 0.1-point steps is 50. */
const HELD = 64;
/** Readings waiting for the track at most. */
export const DRAIN_WAITING = 48;

/** A soc reading of a CAN record at `time`, in order, once the track has passed it (derive.ts). */
export function drainReading(ctx: Context, s: DrainState, time: number, soc: number, ignition: IgnitionState, track: TrackState, charging: ChargingState): void {
  const parked = ignitionAt(ignition, time) === 0 && !movingAt(track, time) && !chargingUnderWayAt(charging, time);
  if (!parked) {
    s.highest.clear();
    s.told = 0;
    return;
  }
  const o = ctx.opts;
  s.highest.expire(time - o.socDrainWindowMs);
  const from = s.highest.value;
  if (from !== undefined && s.told === 0 && from - soc >= o.socDrainMinPercent) {
    s.told = 1;
    emitEvent(ctx, 'soc_drain_while_parked', time, 1, { soc_from: from, soc_to: soc, over_s: (time - s.highest.time!) / 1000 });
  }
  s.highest.push(time, soc);
}

/**
 * Stored as the releases before it stored one highest (`maxSoc`, `maxAt`, `told`: the queue's front), then
 * the readings held and the readings waiting, each a ring in the `'list'` layout (the count, then the
 * readings): a release that knew only the front reads its front.
 */
export const DRAIN_SLICE: Slice<DrainState> = {
  id: 14,
  name: 'drain',
  fresh: () => ({ highest: new WindowedExtreme('highest', HELD), told: 0, waiting: new Ring(DRAIN_WAITING, 2, 'list') }),
  save(s, out, at) {
    out[at] = s.highest.value ?? NaN;
    out[at + 1] = s.highest.time ?? NaN;
    out[at + 2] = s.told;
    return s.waiting.save(out, s.highest.held.save(out, at + 3));
  },
  load(x) {
    const s = DRAIN_SLICE.fresh();
    s.told = x(2) === 1 ? 1 : 0;
    const w = s.highest.held.load(x, 3);
    // Stored by a release that kept one highest: it is the queue.
    if (x(3) !== x(3) && x(0) === x(0)) s.highest.push(x(1), x(0));
    s.waiting.load(x, w);
    return s;
  },
};

/** The drain detector, declared once (detector.ts); ../kinds.ts lists it. */
export const DRAIN_DETECTOR = detector({
  key: 'drain',
  slice: DRAIN_SLICE,
  fields: ['socAt'],
  // Taken by derive.ts's waits once the track has passed a record's time, not by a phase (no `on`).
  reads: { ignition: IGNITION_SLICE, track: TRACK_SLICE, charging: CHARGING_SLICE },
  input: "CAN `soc`; the ignition's and the track's history, charging's",
  settings: ["SOC_DRAIN_MIN", "SOC_DRAIN_WINDOW"],
  derives: "`soc_drain_while_parked` (`soc_from`, `soc_to`, `over_s`)",
  rules: "parked (the ignition off and standing at the record's time, read from the GPS stream's history once it passed that time: its records wait for it, \"Waits\" below; no charging session under way then, `chargingUnderWayAt`), the soc falling `SOC_DRAIN_MIN` (5) points from the highest within `SOC_DRAIN_WINDOW` (6 h), `windowed.ts`: an older high never hides a fall from a lower one; once a parked spell",
  outputs: [
    { events: ['soc_drain_while_parked'], shown: "`soc_drain_while_parked`", measurement: VEHICLE_EVENTS, fields: [{ name: 'soc_from', meaning: "the highest soc within `SOC_DRAIN_WINDOW` before" }, { name: 'soc_to', meaning: "the soc that reached the fall" }, { name: 'over_s', meaning: "since the soc last read `soc_from`" }], what: "parked (ignition off, standing, not charging), the soc falling `SOC_DRAIN_MIN` points within `SOC_DRAIN_WINDOW`" },
  ],
});
