import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import type { DerivedEvent } from './context.js';
import { WindowedExtreme } from './windowed.js';
import type { Output } from './detector.js';

/**
 * Fuel drops (a theft, a leak) and refuels, judged on the fuel history the sync pulls
 * (`../../sync/fuel.ts`), not on the pushed streams: the history arrives in ranges, in time order, and
 * this detector keeps its own progress (`last`), so a range pulled again, or pulled again after a
 * crash, judges nothing twice.
 *
 * A change begins at a reading whose level lies at least `dropMin` below the highest (`refuelMin` above
 * the lowest) of the readings within `windowMs` before it: a slow siphon counts as one drop although no
 * two readings differ by the threshold (Traccar compares two consecutive positions only). It goes on
 * while each reading falls further (rises further) and ends at the first that does not, at a gap of more
 * than `windowMs` after its extreme, or when the sync has read `windowMs` past its extreme with nothing
 * further. It is emitted then, once, stamped where it began: the level before (that highest or lowest
 * reading) and after (the extreme), the amount between them, and how long it took. After it, the
 * reference restarts at its extreme, so a drop is never measured twice from the same high.
 */
export interface FuelChangeOptions {
  /** In the history's unit (litres or percent of the tank). */
  dropMin: number;
  refuelMin: number;
  windowMs: number;
}

export interface FuelReading {
  time: number;
  value: number;
}

export interface FuelChange {
  event: 'fuel_drop' | 'fuel_refuel';
  /** The level before and when it was read (the event's time), and the extreme reached and when. */
  fromAt: number;
  from: number;
  toAt: number;
  to: number;
}

/** A vehicle's progress through its fuel history; persisted as JSON (src/formats/README.md#fuel-sync). */
export interface FuelChangeState {
  /** The newest reading judged: the next are judged from after it. */
  last: number;
  /**
   * The readings within the window before `last` that can still be its highest or lowest ([time, level],
   * oldest first, `windowed.ts`): what a change is measured from.
   */
  recent: Array<[number, number]>;
  /** A change under way. */
  open?: FuelChange;
}

/** Levels held at most, each way (windowed.ts). */
const MAX_RECENT = 2048;
/** Levels are decimals: a fall of 40.3 − 35.3 is 4.999…, which is the 5 it reads as. */
const EPSILON = 1e-9;

export function freshFuelState(): FuelChangeState {
  return { last: 0, recent: [] };
}

/**
 * Judges `readings` (any order, repeats allowed) after `s.last`; returns the changes that ended, in time
 * order, and leaves `s` at the newest. `until`: the history is complete up to this time (the sync read
 * to it), so a change whose extreme lies more than the window before it has ended.
 */
export function judgeFuel(s: FuelChangeState, readings: readonly FuelReading[], o: FuelChangeOptions, until: number): FuelChange[] {
  // One reading a time: a repeat of a time takes the later value, as InfluxDB keeps the point last written.
  const byTime = new Map<number, number>();
  for (const r of readings) if (r.time > s.last && Number.isFinite(r.value)) byTime.set(r.time, r.value);
  const times = [...byTime.keys()].sort((a, b) => a - b);
  const ended: FuelChange[] = [];
  const w = extremesOf(s.recent);
  for (const t of times) {
    const v = byTime.get(t)!;
    const open = s.open;
    if (open) {
      const further = open.event === 'fuel_drop' ? v < open.to : v > open.to;
      if (further && t - open.toAt <= o.windowMs) {
        open.to = v;
        open.toAt = t;
        remember(w, t, v);
        s.last = t;
        continue;
      }
      close(s, w, ended);
    }
    begin(s, w, t, v, o);
    remember(w, t, v);
    s.last = t;
  }
  if (s.open && until - s.open.toAt > o.windowMs) close(s, w, ended);
  s.recent = entriesOf(w);
  return ended;
}

interface Extremes {
  high: WindowedExtreme;
  low: WindowedExtreme;
}

/** The highest and lowest of stored readings (a release before kept every reading: the same extremes). */
function extremesOf(recent: ReadonlyArray<readonly [number, number]>): Extremes {
  const w = { high: new WindowedExtreme('highest', MAX_RECENT), low: new WindowedExtreme('lowest', MAX_RECENT) };
  for (const [t, v] of recent) remember(w, t, v);
  return w;
}

/** What is stored of them: the readings either holds, once each, oldest first. */
function entriesOf(w: Extremes): Array<[number, number]> {
  const byTime = new Map<number, number>([...w.high.entries(), ...w.low.entries()]);
  return [...byTime.entries()].sort((a, b) => a[0] - b[0]);
}

function close(s: FuelChangeState, w: Extremes, ended: FuelChange[]): void {
  const open = s.open!;
  ended.push(open);
  delete s.open;
  w.high.clear();
  w.low.clear();
  remember(w, open.toAt, open.to);
}

function remember(w: Extremes, t: number, v: number): void {
  w.high.push(t, v);
  w.low.push(t, v);
}

function begin(s: FuelChangeState, w: Extremes, t: number, v: number, o: FuelChangeOptions): void {
  w.high.expire(t - o.windowMs);
  w.low.expire(t - o.windowMs);
  const high = w.high.value;
  const low = w.low.value;
  if (high !== undefined && high - v >= o.dropMin - EPSILON) s.open = { event: 'fuel_drop', fromAt: w.high.time!, from: high, toAt: t, to: v };
  else if (low !== undefined && v - low >= o.refuelMin - EPSILON) s.open = { event: 'fuel_refuel', fromAt: w.low.time!, from: low, toAt: t, to: v };
}

/** The change as a vehicle event: `fuel_before`, `fuel_after`, `fuel_amount` (in `unit`, its tag), `over_s`. */
export function fuelEvent(vehicleno: string, unit: string, c: FuelChange): DerivedEvent {
  const amount = Math.abs(c.from - c.to);
  return {
    vehicleno,
    event: c.event,
    time: c.fromAt,
    value: 1,
    fields: { fuel_before: c.from, fuel_after: c.to, fuel_amount: Number(amount.toFixed(6)), over_s: (c.toAt - c.fromAt) / 1000 },
    tags: { unit },
  };
}

/** Fuel changes, judged by the fuel sync on the synced history (not the push streams, so no slice): their outputs. */
export const FUEL_OUTPUTS: readonly Output[] = [
    { events: ['fuel_drop', 'fuel_refuel'], shown: "`fuel_drop` / `fuel_refuel`", measurement: VEHICLE_EVENTS, fields: [{ name: 'unit', meaning: "the unit of the fuel history judged (litres, percent)" }, { name: 'fuel_before', meaning: "the level before (the highest, lowest, within `FUEL_CHANGE_WINDOW`)" }, { name: 'fuel_after', meaning: "the level it fell to, rose to" }, { name: 'fuel_amount', meaning: "how much, in `unit`" }, { name: 'over_s', meaning: "from the level before to the level after" }], what: "judged by the fuel sync on the synced history (not the push streams): the level falling `FUEL_DROP_MIN` (rising `FUEL_REFUEL_MIN`) within `FUEL_CHANGE_WINDOW`, told once it stopped falling (rising), stamped where it began; none while the vehicle moved (`FUEL_CHANGES_WHILE_MOVING=off`); a range synced again tells nothing twice ([src/ingest/sync/](../src/ingest/sync/README.md))" },
];

/** Fuel changes in the detectors' table (src/ingest/events/README.md). */
export const FUEL_ROW = { module: 'fuel.ts', reads: "the synced fuel history (run by `../sync/fuel.ts`, not on the streams)", derives: "`fuel_drop` / `fuel_refuel` (tag `unit`; `fuel_before`, `fuel_after`, `fuel_amount`, `over_s`)", rules: "a reading `FUEL_DROP_MIN` below the highest (`FUEL_REFUEL_MIN` above the lowest) of the readings within `FUEL_CHANGE_WINDOW` before it begins a change (a slow siphon counts; Traccar's `fuelDropThreshold` compares two consecutive positions only); it goes on while each reading falls (rises) further and is emitted at the first that does not, at a gap over the window, or once the sync read a window past its extreme; stamped where it began (the level before), once; the next is measured from its extreme; with `FUEL_CHANGES_WHILE_MOVING=off` not emitted when a GPS fix stored in InfluxDB between its first and last reading went over `MOTION_SPEED`; its progress (`last`) sits beside the sync's watermark, written with it after the events were emitted, so a range read twice or after a crash emits the same events once" } as const;
