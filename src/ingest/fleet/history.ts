/**
 * The read side of the derived history (issue #28): a vehicle's events, trips, charging sessions and stops
 * as the service writes them to InfluxDB (`vehicle_events`, `trips`, `charging`, `stops`), read with InfluxQL over
 * the v1-compatible query API (`GET /query`), which InfluxDB 1.x, 2.x (through a DBRP mapping) and 3.x
 * all serve. For `telematics-fleet events|trips|charging|stops|summary`.
 */
import { ConfigError, loadConfig, type Config } from '../../config/index.js';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import { CHARGING_SESSIONS, DERIVED_MEASUREMENTS, STOPS, TRIPS, VEHICLE_EVENTS } from '../../telemetry/derivedMeasurements.js';
import { GPS } from '../../telemetry/vehicleData.js';
import { summarizeDays, type DaySummary, type LocalDay } from './days.js';
import { EVENTS_OUTPUTS } from '../events/kinds.js';
import { eventNamesOf } from '../events/detectors/detector.js';
import { FLEET_OUTPUTS } from './changes.js';
import { influxSelect, influxTargetOf, quoteIdent, quoteString, timeLiteral, type InfluxRow, type InfluxTarget } from '../read/influxql.js';

// The InfluxQL reads every tool and process shares, where they were first written (imported from here by many).
export { InfluxError, influxSelect, influxTargetOf, quoteIdent, quoteString, timeLiteral, type InfluxRow, type InfluxTarget } from '../read/influxql.js';

export const HISTORY_MEASUREMENTS = { events: VEHICLE_EVENTS.name, trips: TRIPS.name, charging: CHARGING_SESSIONS.name, stops: STOPS.name } as const;

/** The alarm flags whose raising and clearing are events. */
export const ALARM_FLAGS: readonly string[] = ALARM_FIELDS.filter((f) => f.startsWith('alert_'));

/** Every event name the service writes (`--event` is checked against them: a typo would list nothing). */
export const EVENT_NAMES: readonly string[] = eventNamesOf([...EVENTS_OUTPUTS, ...FLEET_OUTPUTS]);

/** The event names as the CLI's help lists them: the alarms' as their pattern. */
export const EVENT_NAMES_SHOWN: readonly string[] = ['alert_<flag>_raised', 'alert_<flag>_cleared', ...EVENT_NAMES.filter((e) => !ALARM_FLAGS.some((f) => e === `${f}_raised` || e === `${f}_cleared`))];

export interface HistoryQuery {
  /** One vehicle; undefined: every vehicle (`events --event`, to find which vehicles had that event). */
  vehicle: string | undefined;
  /** Epoch ms, both inclusive. */
  since: number;
  until: number;
  limit: number;
  /** `events` only: one event name. */
  event?: string;
}

/**
 * One vehicle's points of `measurement` in the range, oldest first. `SELECT *` rather than a field
 * list: a field no point has yet (`energy_wh` before any session knew it) is then absent, never an error.
 */
export function historyQuery(measurement: string, q: HistoryQuery): string {
  const where = [...(q.vehicle === undefined ? [] : [`${quoteIdent('vehicleno')} = ${quoteString(q.vehicle)}`]), `time >= ${timeLiteral(q.since)}`, `time <= ${timeLiteral(q.until)}`, ...standingOf(measurement)];
  if (q.event !== undefined) where.push(`${quoteIdent('event')} = ${quoteString(q.event)}`);
  return `SELECT * FROM ${quoteIdent(measurement)} WHERE ${where.join(' AND ')} ORDER BY time ASC LIMIT ${q.limit}`;
}

/** The condition keeping a derived measurement's standing rows (corrections' retracted ones left out), if it has one. */
function standingOf(measurement: string): string[] {
  const m = DERIVED_MEASUREMENTS.find((d) => d.name === measurement);
  return m?.standing === undefined ? [] : [m.standing];
}

const INFLUX_KEYS = ['INFLUX_URL', 'INFLUX_TOKEN', 'INFLUX_BUCKET', 'INFLUX_TIMEOUT', 'FLEET_TIMEZONE'] as const;

/**
 * The InfluxDB settings, checked by the service's own schema. INFLUX_URL must be given: a tool reads
 * the InfluxDB it is pointed at, never the schema's default one. Only these keys are read, and with
 * PUSH_AUTH=none, since the service's other requirements (push tokens, Redis) are not this tool's.
 */
export function influxTarget(env: Readonly<Record<string, string | undefined>>): InfluxTarget {
  return influxTargetOf(historyConfig(env));
}

/** FLEET_TIMEZONE, checked as the service checks it (an IANA name), for the days of `summary`. */
export function fleetTimezone(env: Readonly<Record<string, string | undefined>>): string {
  return historyConfig(env).FLEET_TIMEZONE;
}

function historyConfig(env: Readonly<Record<string, string | undefined>>): Config {
  if (!env.INFLUX_URL?.trim()) throw new ConfigError(['INFLUX_URL: set it to the InfluxDB the service writes to; this tool does not assume one']);
  const picked: Record<string, string | undefined> = { PUSH_AUTH: 'none' };
  for (const k of INFLUX_KEYS) picked[k] = env[k];
  return loadConfig(picked);
}

/** A vehicle event as the CLI shows it. */
export interface VehicleEvent {
  vehicleno: string;
  time: number;
  event: string;
  value: number | null;
  /** What the event carried besides `value` (lat, lng, soc…), by name. */
  fields: Record<string, number>;
  /** A geofence event's geofence. */
  geofence?: string;
}

export interface TripRow {
  start: number;
  end: number | null;
  duration_s: number | null;
  distance_m: number | null;
  max_speed_kmh: number | null;
  start_lat: number | null;
  start_lng: number | null;
  end_lat: number | null;
  end_lng: number | null;
  soc_start: number | null;
  soc_end: number | null;
  idle_s: number | null;
  overspeed_s: number | null;
  start_geofence: string | null;
  end_geofence: string | null;
}

export interface StopRow {
  start: number;
  end: number | null;
  duration_s: number | null;
  lat: number | null;
  lng: number | null;
  ignition_on_s: number | null;
  geofence: string | null;
}

export interface ChargingRow {
  start: number;
  end: number | null;
  duration_s: number | null;
  soc_start: number | null;
  soc_end: number | null;
  energy_wh: number | null;
}

const num = (v: InfluxRow[string] | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const text = (v: InfluxRow[string] | undefined): string | null => (typeof v === 'string' && v !== '' ? v : null);
const TAGS = new Set(['time', 'vehicleno', 'event', 'geofence', 'geofence_kind', 'unit']);

export function toEvent(r: InfluxRow): VehicleEvent {
  const fields: Record<string, number> = {};
  for (const k of Object.keys(r).sort()) {
    const v = num(r[k]);
    if (!TAGS.has(k) && k !== 'value' && v !== null) fields[k] = v;
  }
  const e: VehicleEvent = { vehicleno: String(r.vehicleno ?? ''), time: Number(r.time), event: String(r.event ?? ''), value: num(r.value), fields };
  const geofence = text(r.geofence);
  if (geofence !== null) e.geofence = geofence;
  return e;
}

export function toTrip(r: InfluxRow): TripRow {
  return {
    start: Number(r.time),
    end: num(r.end),
    duration_s: num(r.duration_s),
    distance_m: num(r.distance_m),
    max_speed_kmh: num(r.max_speed_kmh),
    start_lat: num(r.start_lat),
    start_lng: num(r.start_lng),
    end_lat: num(r.end_lat),
    end_lng: num(r.end_lng),
    soc_start: num(r.soc_start),
    soc_end: num(r.soc_end),
    idle_s: num(r.idle_s),
    overspeed_s: num(r.overspeed_s),
    start_geofence: text(r.start_geofence),
    end_geofence: text(r.end_geofence),
  };
}

export function toStop(r: InfluxRow): StopRow {
  return { start: Number(r.time), end: num(r.end), duration_s: num(r.duration_s), lat: num(r.lat), lng: num(r.lng), ignition_on_s: num(r.ignition_on_s), geofence: text(r.geofence) };
}

export function toCharging(r: InfluxRow): ChargingRow {
  return { start: Number(r.time), end: num(r.end), duration_s: num(r.duration_s), soc_start: num(r.soc_start), soc_end: num(r.soc_end), energy_wh: num(r.energy_wh) };
}

/** `45s`, `12m 30s`, `2h 05m`: a trip's or a session's length, to the second below an hour. */
export function hms(seconds: number | null): string {
  if (seconds === null) return '-';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3_600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3_600)}h ${String(Math.floor((s % 3_600) / 60)).padStart(2, '0')}m`;
}

/** A number to at most `digits` decimals, without trailing zeros; `-` when unknown. */
export function decimal(n: number | null, digits: number): string {
  return n === null ? '-' : String(Number(n.toFixed(digits)));
}

/** `80→64`, `80→?` when only the start is known, `-` when neither is. */
export function socSpan(start: number | null, end: number | null): string {
  if (start === null && end === null) return '-';
  const pct = (n: number | null) => (n === null ? '?' : decimal(n, 1));
  return `${pct(start)}→${pct(end)}`;
}

/**
 * One vehicle's derived history over `days` (the local days of `days.ts`), and each day's first and
 * last GPS fix, read with InfluxQL over the same API as the rest: every InfluxDB version answers it,
 * and the days are cut here, by the fleet's time zone, so they do not depend on a server's `tz()`.
 */
export async function readDays(target: InfluxTarget, vehicle: string, days: readonly LocalDay[]): Promise<DaySummary[]> {
  if (days.length === 0) return [];
  const where = `"vehicleno" = ${quoteString(vehicle)} AND time >= ${timeLiteral(days[0]!.start)} AND time < ${timeLiteral(days[days.length - 1]!.end)}`;
  const select = (measurement: string, fields: string[], more = '') =>
    influxSelect(target, `SELECT ${fields.map(quoteIdent).join(', ')} FROM ${quoteIdent(measurement)} WHERE ${[where, ...standingOf(measurement)].join(' AND ')}${more}`);
  // `value` is in every event's point: InfluxQL returns a row only where a selected field is present.
  const counted = ['idle_ended', 'overspeed_started', 'fuel_drop', 'fuel_refuel'].map((e) => `"event" = ${quoteString(e)}`).join(' OR ');
  const [trips, stops, charging, events] = await Promise.all([
    select(TRIPS.name, ['duration_s', 'distance_m', 'soc_start', 'soc_end', 'overspeed_s']),
    select(STOPS.name, ['duration_s']),
    select(CHARGING_SESSIONS.name, ['duration_s', 'energy_wh']),
    select(VEHICLE_EVENTS.name, ['event', 'value', 'duration_s'], ` AND (${counted} OR "event" =~ /^alert_.+_raised$/)`),
  ]);
  const reports = new Map<string, { first: number; last: number }>();
  await Promise.all(
    days.map(async (d) => {
      const day = `"vehicleno" = ${quoteString(vehicle)} AND time >= ${timeLiteral(d.start)} AND time < ${timeLiteral(d.end)}`;
      const [first] = await influxSelect(target, `SELECT first("lat") FROM ${quoteIdent(GPS.measurement)} WHERE ${day}`);
      const [last] = await influxSelect(target, `SELECT last("lat") FROM ${quoteIdent(GPS.measurement)} WHERE ${day}`);
      if (first && last) reports.set(d.day, { first: Number(first.time), last: Number(last.time) });
    }),
  );
  return summarizeDays(days, {
    trips: trips.map((r) => ({ time: Number(r.time), duration_s: num(r.duration_s), distance_m: num(r.distance_m), soc_start: num(r.soc_start), soc_end: num(r.soc_end), overspeed_s: num(r.overspeed_s) })),
    stops: stops.map((r) => ({ time: Number(r.time), duration_s: num(r.duration_s) })),
    charging: charging.map((r) => ({ time: Number(r.time), energy_wh: num(r.energy_wh) })),
    events: events.map((r) => ({ time: Number(r.time), event: String(r.event ?? ''), duration_s: num(r.duration_s) })),
    reports,
  });
}
