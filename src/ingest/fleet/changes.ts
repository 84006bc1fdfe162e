import { Lines } from '../write/lines.js';
import { formatLine } from '../../telemetry/lineProtocol.js';
import { FLEET, FLEET_STATUS, VEHICLE_EVENTS } from '../../telemetry/derivedMeasurements.js';
import type { PointSink } from '../write/sink.js';
import type { FleetState } from './state.js';
import type { Output } from '../events/detectors/detector.js';

/**
 * Silence written where analysts look. InfluxQL cannot ask "whose last point is older than an hour"
 * (an outer query's time range is pushed into its subquery), so this job writes what changed: a
 * `fleet_status` point when a vehicle crosses a SILENT_AFTER threshold (`silent=1`) and when it
 * reports again (`silent=0`), and a `fleet` point of the counts. The last `fleet_status` point of a
 * vehicle is thus its status, and a plain InfluxQL query lists exactly the silent vehicles.
 *
 * What was last written is kept per partition and threshold in a Redis set, updated only after
 * InfluxDB accepted the points (as the fuel watermark is), so a run that fails is simply done again.
 * A run costs a read of the silent vehicles, not of the fleet.
 *
 * A return is reported at the record that ended the silence, not at the vehicle's newest record when the
 * run happens to look: the fleet state keeps it (`resumed`, state.ts), the first record after the
 * vehicle's latest gap longer than the shortest threshold. A run done again (one that failed after
 * posting its events) thus reports the same `back` at the same time, so with the same event id. When no
 * record came after such a gap (the records came late rather than the vehicle falling silent), the
 * return is reported at the vehicle's last-seen at the first run that saw it back, kept for runs done again.
 */
export const STATUS_MEASUREMENT = FLEET_STATUS.name;
export const COUNTS_MEASUREMENT = FLEET.name;

/** The fleet status's events (docs/events.md, the CLI's `--event`), declared as the detectors' are. */
export const FLEET_OUTPUTS: readonly Output[] = [
  {
    events: ['silent', 'back'],
    shown: '`silent` / `back`',
    measurement: VEHICLE_EVENTS,
    fields: [
      { name: 'after_s', meaning: 'the `SILENT_AFTER` threshold crossed (`back`: the longest it had crossed)' },
      { name: 'last_seen', meaning: 'the last record’s time (`back`: the record that ended the silence)' },
    ],
    what: "the fleet status's changes (below): `silent` at the instant a vehicle crossed each `SILENT_AFTER` threshold; one `back` at the record that ended its silence (the first more than the shortest threshold after the one before it; for records that came late rather than after a gap, the last-seen at the first status run that saw it back), the same however often a failed run is done again, `after_s` the longest threshold it had crossed, `last_seen` its time",
  },
];

/** A change of status as a vehicle event (the shape of src/ingest/events' events). */
export interface StatusEvent {
  vehicleno: string;
  event: 'silent' | 'back';
  time: number;
  value: number;
  fields: Record<string, number>;
}

/** A SILENT_AFTER threshold: its label as configured (`1h`) and its length. */
export interface SilentAfter {
  label: string;
  ms: number;
}

export interface StatusChanges {
  /** Vehicles that crossed a threshold in this run, by threshold label. */
  wentSilent: Record<string, number>;
  cameBack: Record<string, number>;
  known: number;
  silent: Record<string, number>;
}

/** One run at `now`: finds the crossings since the last run, writes them, then remembers them. */
export async function writeStatusChanges(
  fleet: FleetState,
  sink: PointSink,
  thresholds: readonly SilentAfter[],
  now: number,
  /** The changes as vehicle events (`silent`, `back`), delivered before they are remembered. */
  events?: (e: StatusEvent[]) => Promise<void>,
): Promise<StatusChanges> {
  const lines: string[] = [];
  const changes: StatusEvent[] = [];
  // One `back` a vehicle, for the longest silence it ended: a return ends every threshold's silence at
  // the same record, and events are one a (vehicle, event, time).
  const backs = new Map<string, StatusEvent>();
  const apply: Array<() => Promise<unknown>> = [];
  const result: StatusChanges = { wentSilent: {}, cameBack: {}, known: 0, silent: {} };
  const counts = await fleet.counts(now, thresholds.map((t) => t.ms));
  result.known = counts.known;
  const redis = fleet.redis;
  for (const k of fleet.partitions) {
    for (const t of thresholds) {
      const key = k.silent(t.label);
      const [silentNow, members] = await Promise.all([fleet.silentSince(k, now - t.ms), redis.smembers(key)]);
      const written = new Set(members);
      const back = members.filter((v) => !silentNow.has(v));
      const went = [...silentNow.keys()].filter((v) => !written.has(v));
      // Still silent, but records that came late moved its last seen: its status is written again (no event:
      // it did not come back), so that the silent panel shows its true last seen.
      const stayed = [...silentNow.keys()].filter((v) => written.has(v));
      const lastWritten = stayed.length > 0 ? await redis.hmget(k.silentLastSeen(t.label), ...stayed) : [];
      const moved = new Map<string, number>();
      stayed.forEach((v, i) => {
        const lastSeen = silentNow.get(v)!;
        if (lastWritten[i] === String(lastSeen)) return;
        lines.push(formatLine(STATUS_MEASUREMENT, { after: t.label, vehicleno: v }, { silent: 1, last_seen: lastSeen }, now));
        moved.set(v, lastSeen);
      });
      for (const v of went) {
        const lastSeen = silentNow.get(v)!;
        lines.push(formatLine(STATUS_MEASUREMENT, { after: t.label, vehicleno: v }, { silent: 1, last_seen: lastSeen }, now));
        // At the instant it crossed the threshold: the same event however often a failed run is done again.
        changes.push({ vehicleno: v, event: 'silent', time: lastSeen + t.ms, value: 1, fields: { after_s: t.ms / 1000, last_seen: lastSeen } });
      }
      if (back.length > 0) {
        const backAt = await fleet.backAt(k, back);
        // A vehicle gone from the sorted set (its state was deleted by hand) is no longer known: it is not reported back.
        back.forEach((v, i) => {
          const time = backAt[i];
          if (time === undefined) return;
          // `last_seen` of a return: the record that ended the silence, as the event's time.
          lines.push(formatLine(STATUS_MEASUREMENT, { after: t.label, vehicleno: v }, { silent: 0, last_seen: time }, now));
          // At the record that ended the silence, the same for every threshold and every run done again.
          const known = backs.get(v);
          if (known === undefined || known.fields.after_s! < t.ms / 1000) backs.set(v, { vehicleno: v, event: 'back', time, value: 0, fields: { after_s: t.ms / 1000, last_seen: time } });
        });
      }
      result.wentSilent[t.label] = (result.wentSilent[t.label] ?? 0) + went.length;
      result.cameBack[t.label] = (result.cameBack[t.label] ?? 0) + back.length;
      if (went.length > 0) {
        const lastSeen = new Map(went.map((v) => [v, silentNow.get(v)!] as const));
        apply.push(() => fleet.wentSilent(k, key, lastSeen));
        apply.push(() => redis.hset(k.silentLastSeen(t.label), lastSeen));
      }
      if (moved.size > 0) apply.push(() => redis.hset(k.silentLastSeen(t.label), moved));
      if (back.length > 0) apply.push(() => redis.srem(key, ...back), () => redis.hdel(k.silentLastSeen(t.label), ...back));
    }
  }
  thresholds.forEach((t, i) => {
    result.silent[t.label] = counts.silent[i]!;
    lines.push(formatLine(COUNTS_MEASUREMENT, { after: t.label }, { vehicles: counts.known, silent: counts.silent[i]!, reporting: counts.known - counts.silent[i]! }, now));
  });
  changes.push(...backs.values());
  await sink.write(Lines.of(lines));
  if (changes.length > 0) await events?.(changes);
  for (const a of apply) await a();
  return result;
}
