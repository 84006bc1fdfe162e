import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Immobilisation, type Slice } from './context.js';

export type { Immobilisation, ImmobilisationLookup } from './context.js';
import { TRACK_SLICE, type Step } from './track.js';
import { detector } from './detector.js';

/**
 * Moved while immobilised: a vehicle under a confirmed immobilisation of a type that stops it (the command
 * ledger, src/ingest/commands/) whose records show its ignition on, or the track confirms it moving over
 * MOTION_SPEED. Emitted once an immobilisation, at the first such record by record time, with its position,
 * speed and ignition, tagged with the command's type. A function of the records and of the ledger's
 * immobilisations (each an interval of wall time, `[from, to)`), never of when the records arrive: a late
 * record earlier in the interval moves the event there through a correction, and the ledger asks for a
 * correction from an interval's start and end when it sets or lifts one, so records derived before the
 * workers knew of it are judged again.
 *
 * The ignition is read off the record itself (a digital line, which a jittering fix cannot fake); motion
 * only off fixes the track confirmed (an outlier or a cold-start jump is not movement).
 */

export interface ImmobilisedState {
  /** The `from` of the immobilisation last emitted (-Infinity: none), so each is emitted once. */
  toldFrom: number;
}

/** A record with a position or the ignition, in order, after the track judged its fix. */
export function immobilisedRecord(ctx: Context, s: ImmobilisedState, r: StreamRecord, plan: StreamPlan, steps: readonly Step[]): void {
  const lookup = ctx.opts.immobilisations?.current;
  if (lookup === undefined) return;
  const ign = valueOf(r, plan.ignitionAt);
  if (ign === 1) {
    const im = lookup.at(ctx.vehicleno, r.time);
    if (im !== undefined && im.from !== s.toldFrom) {
      const fields: Record<string, number> = { ignition: 1 };
      const lat = valueOf(r, plan.latAt);
      const lng = valueOf(r, plan.lngAt);
      const speed = valueOf(r, plan.speedAt);
      if (lat !== undefined && lng !== undefined) Object.assign(fields, { lat, lng });
      if (speed !== undefined) fields.speed = speed;
      return tell(ctx, s, im, r.time, fields);
    }
  }
  for (const step of steps) {
    const f = step.fix;
    if (!(f.speed > ctx.opts.motionSpeedKmh)) continue;
    const im = lookup.at(ctx.vehicleno, f.time);
    if (im === undefined || im.from === s.toldFrom) continue;
    const fields: Record<string, number> = { lat: f.lat, lng: f.lng, speed: f.speed };
    if (ign !== undefined) fields.ignition = ign;
    return tell(ctx, s, im, f.time, fields);
  }
}

function tell(ctx: Context, s: ImmobilisedState, im: Immobilisation, time: number, fields: Record<string, number>): void {
  s.toldFrom = im.from;
  emitEvent(ctx, 'moved_while_immobilised', time, 1, fields, { command_type: im.type });
}

export const IMMOBILISED_SLICE: Slice<ImmobilisedState> = flatSlice(16, 'immobilised', ['toldFrom'], () => ({ toldFrom: -Infinity }));

/** The immobilised detector, declared once (detector.ts); ../kinds.ts lists it. */
export const IMMOBILISED_DETECTOR = detector({
  key: 'immobilised',
  slice: IMMOBILISED_SLICE,
  fields: ['ignitionAt', 'latAt', 'lngAt', 'speedAt'],
  reads: { track: TRACK_SLICE },
  // The fixes as the trips leave them: at a trip's end the trips settle the track's last fix, and its confirmation takes the place of the first of `steps` (track.ts reuses its two Step objects).
  after: ['trips'],
  on: { position: (ctx, s, r, plan, steps) => immobilisedRecord(ctx, s.immobilised, r, plan, steps) },
  input: "GPS `ignstatus` (with the record's position and `speed`), the track, the command ledger's immobilisations (`../commands/immobilisations.ts`, COMMANDS=on)",
  settings: ["MOTION_SPEED"],
  derives: "`moved_while_immobilised` (`lat`, `lng`, `speed`, `ignition`; tag `command_type`)",
  rules: "under an immobilisation (an interval of time: from its confirmation to the mobilise's claim for sending), a record with the ignition on, or a fix the track confirms over `MOTION_SPEED`; once an immobilisation, at the first by record time; a correction is asked for from each interval's start and end as the ledger sets or lifts it; paged by `TelematicsVehicleMovedWhileImmobilised` ([docs/commands.md](../../../docs/commands.md))",
  outputs: [
    { events: ['moved_while_immobilised'], shown: "`moved_while_immobilised`", measurement: VEHICLE_EVENTS, fields: [{ name: 'lat', meaning: "where it was seen" }, { name: 'lng', meaning: "the same, longitude" }, { name: 'speed', meaning: "the fix’s speed" }, { name: 'ignition', meaning: "the record’s ignition" }, { name: 'command_type', meaning: "the immobilise type it was under ([commands.md](commands.md))" }], what: "under an immobilisation the command ledger confirmed ([commands.md](commands.md)), a record with the ignition on or a confirmed fix over `MOTION_SPEED`, once an immobilisation, at the first by record time (corrected by late records as every event is); pages (`TelematicsVehicleMovedWhileImmobilised`)" },
  ],
});
