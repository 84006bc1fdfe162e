import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import type { Slice } from './context.js';
import { Ring } from './ring.js';
import { detector } from './detector.js';

/**
 * The state of charge as the CAN stream commits it, for the trips, which read it across streams (the
 * detectors of the CAN stream read a record's own soc). The latest value, the time it is known through
 * (the last CAN record committed), and the last SOC_RING times it changed, so a trip can ask the soc at
 * its start and end (`socAt`): exact once the CAN stream has passed that time (trips.ts waits for it).
 */
export interface SocState {
  /** NaN before any. */
  latest: number;
  /** The time of the last CAN record committed (-Infinity before any): the soc is known through it. */
  through: number;
  /** (time, soc) of the last SOC_RING changes. */
  changes: Ring;
}

export const SOC_RING = 8;

/** A committed CAN record, and its soc if it carries one. */
export function noteSoc(s: SocState, r: StreamRecord, plan: StreamPlan): void {
  s.through = r.time;
  const soc = valueOf(r, plan.socAt);
  if (soc === undefined || Object.is(soc, s.latest)) return;
  s.latest = soc;
  s.changes.push(r.time, soc);
}

/**
 * The last soc at or before `time`; undefined when none. When the CAN stream has run more than SOC_RING
 * changes past `time` (its records far ahead of the GPS stream's), the oldest soc remembered: the
 * nearest known, no longer exact.
 */
export function socAtOrBefore(s: SocState, time: number): number | undefined {
  const c = s.changes;
  for (let j = 0; j < c.length; j++) if (c.newest(j, 0) <= time) return c.newest(j, 1);
  return c.full ? c.at(0, 1) : undefined;
}

/** Whether the changes remembered reach back to `time` (`socAtOrBefore` is exact there). */
export function socCovers(s: SocState, time: number): boolean {
  return !s.changes.full || s.changes.at(0, 0) <= time;
}

/** Whether the soc changed after `after` up to `to` (by the changes remembered, which must reach back to `after`). */
export function socChanged(s: SocState, after: number, to: number): boolean {
  for (let j = 0; j < s.changes.length; j++) {
    const t = s.changes.newest(j, 0);
    if (t <= after) return false;
    if (t <= to) return true;
  }
  return false;
}

/** The first soc after `after` and at or before `until`; undefined when none is remembered. */
export function socFirstAfter(s: SocState, after: number, until: number): number | undefined {
  let first: number | undefined;
  for (let j = 0; j < s.changes.length; j++) {
    const t = s.changes.newest(j, 0);
    if (t <= after) break;
    if (t <= until) first = s.changes.newest(j, 1);
  }
  return first;
}

export const SOC_SLICE: Slice<SocState> = {
  id: 1,
  name: 'soc',
  fresh: () => ({ latest: NaN, through: -Infinity, changes: new Ring(SOC_RING, 2, 'ring') }),
  save(s, out, at) {
    out[at] = s.latest;
    at = s.changes.save(out, at + 1);
    out[at] = s.through;
    return at + 1;
  },
  load(x) {
    const s = SOC_SLICE.fresh();
    s.latest = x(0);
    const through = x(s.changes.load(x, 1));
    if (through === through) s.through = through;
    return s;
  },
};

/** The soc detector, declared once (detector.ts); ../kinds.ts lists it. */
export const SOC_DETECTOR = detector({
  key: 'soc',
  slice: SOC_SLICE,
  fields: ['socAt'],
  on: { soc: (_ctx, s, r, plan) => noteSoc(s.soc, r, plan) },
  input: "CAN `soc`",
  settings: [],
  derives: "the soc through the CAN stream's progress, and its last 8 changes (`SOC_RING`)",
  rules: "for trips (read at a time once the stream passed it; if the stream ran more than 8 changes past it, read as the oldest remembered and corrected)",
  outputs: [

  ],
});
