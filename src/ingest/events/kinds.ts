import { ALARMS_DETECTOR } from './detectors/alarms.js';
import { BATTERY_SWAP_DETECTOR } from './detectors/batterySwap.js';
import { CHARGING_DETECTOR } from './detectors/charging.js';
import { detector, eventNamesOf, type Detector, type Output } from './detectors/detector.js';
import { DRAIN_DETECTOR } from './detectors/drain.js';
import { FUEL_OUTPUTS } from './detectors/fuel.js';
import { GEOFENCES_DETECTOR } from './detectors/geofences.js';
import { IDLE_DETECTOR } from './detectors/idle.js';
import { IGNITION_DETECTOR } from './detectors/ignition.js';
import { IMMOBILISED_DETECTOR } from './detectors/immobilised.js';
import { OVERSPEED_DETECTOR } from './detectors/overspeed.js';
import { PACK_LIFE_DETECTOR } from './detectors/packLife.js';
import { SOC_DETECTOR } from './detectors/soc.js';
import { SOC_LOW_DETECTOR } from './detectors/socLow.js';
import { STOPS_DETECTOR } from './detectors/stops.js';
import { TOWING_DETECTOR } from './detectors/towing.js';
import { TRACK_DETECTOR } from './detectors/track.js';
import { PACK_HEAT_DETECTOR } from './detectors/packHeat.js';
import { C_RATE_DETECTOR } from './detectors/cRate.js';
import { CELL_DRIFT_DETECTOR } from './detectors/cellDrift.js';
import { FINISHED_TRIPS_DETECTOR, TRIPS_DETECTOR } from './detectors/trips.js';
import { LATE_SLICE } from './corrections/state.js';

/**
 * Every detector of the vehicle events, in the order their slices are stored: the one list a kind is
 * added to. The vehicle state and its slices (derive.ts), the order the detectors run in (`runOrder`,
 * from what each declares it reads and writes into; where nothing orders two, this list's), the event
 * names (`EVENTS_EVENT_NAMES`, the CLI's `--event`), and the documentation's tables (src/ingest/events/README.md,
 * docs/events.md, through `npm run docs`) are derived from it. A new detector goes at the end, with a slice
 * id no other has (`nextSliceId`; kinds.test.ts holds both).
 */
export const DETECTORS = [
  TRACK_DETECTOR,
  SOC_DETECTOR,
  ALARMS_DETECTOR,
  IGNITION_DETECTOR,
  TRIPS_DETECTOR,
  FINISHED_TRIPS_DETECTOR,
  CHARGING_DETECTOR,
  STOPS_DETECTOR,
  IDLE_DETECTOR,
  OVERSPEED_DETECTOR,
  TOWING_DETECTOR,
  GEOFENCES_DETECTOR,
  SOC_LOW_DETECTOR,
  BATTERY_SWAP_DETECTOR,
  DRAIN_DETECTOR,
  IMMOBILISED_DETECTOR,
  PACK_LIFE_DETECTOR,
  // The corrections' own state (corrections/), kept last as it always was.
  detector({ key: 'late', slice: LATE_SLICE, fields: [], input: '', settings: ['EVENTS_HORIZON', 'EVENTS_CHECKPOINT_INTERVAL'], derives: '', rules: '', outputs: [] }),
  PACK_HEAT_DETECTOR,
  C_RATE_DETECTOR,
  // Slice 18, kept for it when the pack warnings took 19 and 20: no release has stored another slice under it.
  CELL_DRIFT_DETECTOR,
] as const;

/** The slices of a list of detectors by key, in the list's order (the order a state's slices are stored). */
export function slicesOf<const L extends readonly Detector[]>(detectors: L): { [D in L[number] as D['key']]: D['slice'] } {
  return Object.fromEntries(detectors.map((d) => [d.key, d.slice])) as { [D in L[number] as D['key']]: D['slice'] };
}

/** The id the next slice takes: above every id a release has used (ids are frozen: a stored state names its slices by them). */
export const nextSliceId = (detectors: readonly Detector[] = DETECTORS): number => Math.max(...detectors.map((d) => d.slice.id)) + 1;

/** What the vehicle events write, of the streams' detectors and of the fuel sync (fuel changes run on the synced history). */
export const EVENTS_OUTPUTS: readonly Output[] = [...DETECTORS.flatMap((d) => d.outputs), ...FUEL_OUTPUTS];

/** The event names the vehicle events write (`vehicle_events`' `event` tag), in the order declared. */
export const EVENTS_EVENT_NAMES: readonly string[] = eventNamesOf(EVENTS_OUTPUTS);
