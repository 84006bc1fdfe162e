import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import type { GeofenceLookup } from '../../geofences/lookup.js';
import type { Geofence } from '../../geofences/geofence.js';
import { emitEvent, type Context, type Slice } from './context.js';
import { TRACK_SLICE, type Step } from './track.js';
import { detector } from './detector.js';
import { lasted } from './spell.js';

/**
 * Geofences (Traccar's GeofenceEventHandler, ThingsBoard's geofencing with `minInsideDuration` /
 * `minOutsideDuration`): `geofence_entered` / `geofence_exited`, tagged with the geofence's name and kind,
 * by the track's confirmed fixes (an outlier never enters one) and the geofences that held at each fix's
 * time (src/ingest/geofences/).
 *
 * - **Dwell.** A vehicle is taken inside once its fixes have stayed inside GEOFENCE_MIN_DWELL, and
 *   outside once they have stayed out as long; the event is stamped at the first fix of the run. A
 *   vehicle wandering on a border flips nothing until it has settled on one side.
 * - **Crossings.** A step between two fixes that passes through a geofence with neither fix inside (a
 *   small geofence, sparse fixes) is emitted as entered and exited at once (`crossed: 1`), at the times the
 *   step meets its border, whatever the dwell: it was inside, briefly.
 * - A geofence removed while the vehicle is inside stops holding at its end: the vehicle leaves it then
 *   (after the dwell), by the name it had.
 */
export interface GeofencesState {
  /** The last confirmed fix (a step's start, for crossings); NaN before any. */
  lastTime: number;
  lastLat: number;
  lastLng: number;
  /** Per geofence the vehicle is in or may be entering: its id, 1 inside (0: entering), and since when it may be changing side (NaN: settled). */
  entries: number[];
}

const WIDTH = 3;

export function geofencesRecord(ctx: Context, s: GeofencesState, steps: readonly Step[]): void {
  const lookup = ctx.opts.geofences?.current;
  if (lookup === undefined || (lookup.size === 0 && s.entries.length === 0)) return;
  for (const step of steps) {
    const f = step.fix;
    if (s.lastTime === s.lastTime && f.time > s.lastTime) crossings(ctx, s, lookup, f);
    settle(ctx, s, lookup, lookup.containing(f.lat, f.lng, f.time), f.time);
    s.lastTime = f.time;
    s.lastLat = f.lat;
    s.lastLng = f.lng;
  }
}

/** A fix at `time` inside `inside`: each geofence's side moves on, after the dwell. */
function settle(ctx: Context, s: GeofencesState, lookup: GeofenceLookup, inside: readonly Geofence[], time: number): void {
  const dwell = ctx.opts.geofenceMinDwellMs;
  const e = s.entries;
  for (let i = 0; i < e.length; i += WIDTH) {
    const id = e[i]!;
    const isIn = inside.some((g) => g.id === id);
    if (e[i + 1] === 1) {
      // Inside: out long enough, it has left (at its first fix out); back in, it never left.
      if (isIn) e[i + 2] = NaN;
      else {
        if (e[i + 2] !== e[i + 2]) e[i + 2] = time;
        if (lasted(e[i + 2]!, time, dwell)) {
          tell(ctx, lookup, id, 'geofence_exited', e[i + 2]!, {});
          e.splice(i, WIDTH);
          i -= WIDTH;
        }
      }
    } else if (!isIn) {
      // Entering, but out again before the dwell: never entered.
      e.splice(i, WIDTH);
      i -= WIDTH;
    } else if (lasted(e[i + 2]!, time, dwell)) {
      tell(ctx, lookup, id, 'geofence_entered', e[i + 2]!, {});
      e[i + 1] = 1;
      e[i + 2] = NaN;
    }
  }
  for (const g of inside) {
    if (has(e, g.id)) continue;
    if (dwell <= 0) {
      tell(ctx, lookup, g.id, 'geofence_entered', time, {});
      e.push(g.id, 1, NaN);
    } else e.push(g.id, 0, time);
  }
}

function crossings(ctx: Context, s: GeofencesState, lookup: GeofenceLookup, f: { time: number; lat: number; lng: number }): void {
  for (const c of lookup.crossed({ time: s.lastTime, lat: s.lastLat, lng: s.lastLng }, f)) {
    if (has(s.entries, c.geofence.id)) continue;
    tell(ctx, lookup, c.geofence.id, 'geofence_entered', c.entered, { crossed: 1 });
    tell(ctx, lookup, c.geofence.id, 'geofence_exited', c.exited, { crossed: 1 });
  }
}

/** The names of the geofences holding a point at a time (`, ` between), or undefined: for trips, stops and charging sessions. */
export function geofenceNamesAt(ctx: Context, lat: number, lng: number, time: number): string | undefined {
  const lookup = ctx.opts.geofences?.current;
  if (lookup === undefined || lookup.size === 0 || lat !== lat || lng !== lng) return undefined;
  const inside = lookup.containing(lat, lng, time);
  return inside.length === 0 ? undefined : inside.map((g) => g.name).join(', ');
}

function has(e: readonly number[], id: number): boolean {
  for (let i = 0; i < e.length; i += WIDTH) if (e[i] === id) return true;
  return false;
}

function tell(ctx: Context, lookup: GeofenceLookup, id: number, event: 'geofence_entered' | 'geofence_exited', time: number, fields: Record<string, number>): void {
  const g = lookup.geofence(id);
  emitEvent(ctx, event, time, event === 'geofence_entered' ? 1 : 0, { geofence_id: id, ...fields }, { geofence: g?.name ?? `#${id}`, geofence_kind: g?.kind ?? 'other' });
}

export const GEOFENCES_SLICE: Slice<GeofencesState> = {
  id: 11,
  name: 'geofences',
  fresh: () => ({ lastTime: NaN, lastLat: NaN, lastLng: NaN, entries: [] }),
  save(s, out, at) {
    out[at] = s.lastTime;
    out[at + 1] = s.lastLat;
    out[at + 2] = s.lastLng;
    out[at + 3] = WIDTH;
    // At most 83 geofences at once fit a slice's 255 doubles: a vehicle in more keeps the first.
    const n = Math.min(s.entries.length, Math.floor((255 - 4) / WIDTH) * WIDTH);
    for (let i = 0; i < n; i++) out[at + 4 + i] = s.entries[i]!;
    return at + 4 + n;
  },
  load(x, stored) {
    const s = GEOFENCES_SLICE.fresh();
    s.lastTime = x(0);
    s.lastLat = x(1);
    s.lastLng = x(2);
    const width = x(3);
    if (!(width >= WIDTH)) return s;
    for (let at = 4; at + width <= stored; at += width) s.entries.push(x(at), x(at + 1), x(at + 2));
    return s;
  },
};

/** The geofences detector, declared once (detector.ts); ../kinds.ts lists it. */
export const GEOFENCES_DETECTOR = detector({
  key: 'geofences',
  slice: GEOFENCES_SLICE,
  fields: [],
  reads: { track: TRACK_SLICE },
  // The fixes as the track confirmed them, before the trips' settle (which at a trip's end takes the place of the first of `steps`: trips.ts `amends`).
  before: ['trips'],
  on: { position: (ctx, s, _r, _plan, steps) => geofencesRecord(ctx, s.geofences, steps) },
  input: "the track, the geofences (`../geofences/`)",
  settings: ["GEOFENCE_MIN_DWELL", "SPEED_LIMIT_PREFER_LOWEST"],
  derives: "`geofence_entered` / `geofence_exited` (tags `geofence`, `geofence_kind`; `geofence_id`, `crossed`)",
  rules: "each confirmed fix judged by the geofences that held at its time; inside (outside) once the fixes stayed so `GEOFENCE_MIN_DWELL` (60 s), stamped at the run's first fix, so a vehicle on a border flips nothing; a step through a geofence with neither fix inside is a crossing, entered and exited at the border whatever the dwell; overspeed reads the geofences' `speed_limit` (the lowest applies, `SPEED_LIMIT_PREFER_LOWEST`); trips (`start_geofence`, `end_geofence`: their first and last confirmed fix), stops (`geofence`) and charging sessions (`geofence`: where the vehicle came to stand before it started, `track.ts`'s `standingAt`, exact once the GPS stream has passed the start) are tagged with the geofences they lay in",
  outputs: [
    { events: ['geofence_entered', 'geofence_exited'], shown: "`geofence_entered` / `geofence_exited`", measurement: VEHICLE_EVENTS, fields: [{ name: 'geofence', meaning: "the geofence’s name" }, { name: 'geofence_kind', meaning: "its kind (depot, charging, customer, restricted, other)" }, { name: 'geofence_id', meaning: "its id (`telematics-fleet geofences list`)" }, { name: 'crossed', meaning: "1: a step between two fixes passed through it (neither fix inside)" }], what: "inside (outside) a geofence once the fixes stayed so `GEOFENCE_MIN_DWELL`; a step passing through one between two fixes is a crossing; trips (`start_geofence`, `end_geofence`), stops and charging sessions (`geofence`) say where" },
  ],
});
