import type { DerivedEvent } from './context.js';

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
 * further. It is told then, once, stamped where it began: the level before (that highest or lowest
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
  /** The readings within the window before `last` ([time, level], oldest first): what a change is measured from. */
  recent: Array<[number, number]>;
  /** A change under way. */
  open?: FuelChange;
}

/** More readings than this within a window keep only the newest (a reading a second over 30 min is 1800). */
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
  for (const t of times) {
    const v = byTime.get(t)!;
    const open = s.open;
    if (open) {
      const further = open.event === 'fuel_drop' ? v < open.to : v > open.to;
      if (further && t - open.toAt <= o.windowMs) {
        open.to = v;
        open.toAt = t;
        remember(s, t, v);
        s.last = t;
        continue;
      }
      close(s, ended);
    }
    begin(s, t, v, o);
    remember(s, t, v);
    s.last = t;
  }
  if (s.open && until - s.open.toAt > o.windowMs) close(s, ended);
  return ended;
}

function close(s: FuelChangeState, ended: FuelChange[]): void {
  const open = s.open!;
  ended.push(open);
  delete s.open;
  s.recent = [[open.toAt, open.to]];
}

function remember(s: FuelChangeState, t: number, v: number): void {
  s.recent.push([t, v]);
  if (s.recent.length > MAX_RECENT) s.recent.splice(0, s.recent.length - MAX_RECENT);
}

function begin(s: FuelChangeState, t: number, v: number, o: FuelChangeOptions): void {
  let k = 0;
  while (k < s.recent.length && s.recent[k]![0] < t - o.windowMs) k++;
  if (k > 0) s.recent.splice(0, k);
  let high: [number, number] | undefined;
  let low: [number, number] | undefined;
  // Of equal levels the latest: a level that stood still before it fell began to fall at its last reading.
  for (const r of s.recent) {
    if (!high || r[1] >= high[1]) high = r;
    if (!low || r[1] <= low[1]) low = r;
  }
  if (high && high[1] - v >= o.dropMin - EPSILON) s.open = { event: 'fuel_drop', fromAt: high[0], from: high[1], toAt: t, to: v };
  else if (low && v - low[1] >= o.refuelMin - EPSILON) s.open = { event: 'fuel_refuel', fromAt: low[0], from: low[1], toAt: t, to: v };
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
