/**
 * `telematics-fleet`: which vehicles report and which went silent (Redis), and each vehicle's derived
 * history: events, trips, stops, charging sessions and its days (InfluxDB), on the one CLI framework
 * (`src/cli`).
 */
import { parse, parseDurationFlag, parseNumber, parseTime, noPositionals } from '../../cli/args.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT, UsageError, type ErrorClassifier } from '../../cli/exit.js';
import { isoTime, table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import type { Program } from '../../cli/program.js';
import type { Config } from '../../config/index.js';
import { classifyToolError, TOOL_SETTINGS, withServiceRedis } from '../../redis/tool.js';
import { span } from '../plausibility/judge.js';
import { GEOFENCES_COMMAND } from '../geofences/commands.js';
import { SPEED_LIMIT_COMMAND } from '../speedLimits/commands.js';
import { fleetStateFor, type FleetState, type VehicleSeen } from './state.js';
import { localDays, type DaySummary } from './days.js';
import { DateTime, IANAZone } from 'luxon';
import { packQuery, RISK_FORMULA, stintsOf, worstOf, worstQuery, type PackRange, type PackRisk, type Stint } from './packs.js';
import {
  ALARM_FLAGS,
  decimal,
  EVENT_NAMES,
  EVENT_NAMES_SHOWN,
  HISTORY_MEASUREMENTS,
  historyQuery,
  hms,
  InfluxError,
  influxSelect,
  influxTarget,
  fleetTimezone,
  readDays,
  socSpan,
  toCharging,
  toEvent,
  toStop,
  toTrip,
  type ChargingRow,
  type StopRow,
  type HistoryQuery,
  type InfluxRow,
  type TripRow,
  type VehicleEvent,
} from './history.js';

const SETTINGS_HELP = `${TOOL_SETTINGS}
  QUEUE_NAME, QUEUE_PARTITIONS and SILENT_AFTER (as for the service).\n`;

/** The fleet state of the Redis the environment names; closed when `use` settles. */
const withFleet = <T>(io: CliIO, use: (fleet: FleetState, cfg: Config) => Promise<T>): Promise<T> =>
  withServiceRedis(io, (redis, cfg) => use(fleetStateFor(cfg, redis), cfg));

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);

const status: Command = {
  name: 'status',
  summary: 'vehicles known, reporting and silent per SILENT_AFTER threshold',
  help: `Usage: telematics-fleet status [--json]\n\nVehicles known (seen at least once), and for each SILENT_AFTER threshold those reporting within it and those silent longer.\n${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const now = Date.now();
    const rows = await withFleet(io, async (fleet, cfg) => {
      const counts = await fleet.counts(now, cfg.SILENT_AFTER.map((t) => t.ms));
      return cfg.SILENT_AFTER.map((t, i) => ({ after: t.label, known: counts.known, reporting: counts.known - counts.silent[i]!, silent: counts.silent[i]! }));
    });
    if (values.json) line(io, JSON.stringify(rows));
    else
      io.stdout.write(
        table(rows, [
          { header: 'SILENT AFTER', value: (r) => r.after },
          { header: 'KNOWN', value: (r) => String(r.known), align: 'right' },
          { header: 'REPORTING', value: (r) => String(r.reporting), align: 'right' },
          { header: 'SILENT', value: (r) => String(r.silent), align: 'right' },
        ]),
      );
    return EXIT.ok;
  },
};

const silent: Command = {
  name: 'silent',
  summary: 'the vehicles not heard from, longest silent first, with last-seen time and position',
  help: `Usage: telematics-fleet silent [--after 1h] [--limit 100] [--json]

Vehicles whose newest plausible record is older than --after (default: the first SILENT_AFTER threshold),
longest silent first: plate, last seen, silent for, last position and its time.
${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { after: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const limit = values.limit === undefined ? 100 : parseNumber(values.limit, '--limit', this.name, { integer: true, min: 1, max: 100_000 });
    const given = values.after === undefined ? undefined : parseDurationFlag(values.after, '--after', this.name);
    const now = Date.now();
    const vehicles = await withFleet(io, (fleet, cfg) => fleet.silent(now, given ?? cfg.SILENT_AFTER[0]!.ms, limit));
    if (values.json) line(io, JSON.stringify(vehicles));
    else if (vehicles.length === 0) line(io, 'no silent vehicle');
    else io.stdout.write(table<VehicleSeen>(vehicles, silentColumns(now)));
    return EXIT.ok;
  },
};

/** The silent list as a table, for the CLI. */
export function silentColumns(now: number) {
  return [
    { header: 'VEHICLE', value: (v: VehicleSeen) => v.vehicleno },
    { header: 'LAST SEEN', value: (v: VehicleSeen) => isoTime(v.lastSeen) },
    { header: 'SILENT FOR', value: (v: VehicleSeen) => span(now - v.lastSeen), align: 'right' as const },
    { header: 'LAST POSITION', value: (v: VehicleSeen) => (v.position ? `${v.position.lat},${v.position.lng}` : '-') },
    { header: 'POSITION AT', value: (v: VehicleSeen) => (v.position ? isoTime(v.position.time) : '-') },
  ];
}

const HISTORY_SETTINGS_HELP = `Settings: INFLUX_URL (required: the InfluxDB the service writes to), INFLUX_TOKEN, INFLUX_BUCKET
  (the database; db/rp names a retention policy) and INFLUX_TIMEOUT, as for the service. Read with InfluxQL
  at INFLUX_URL/query, which InfluxDB 1.x, 2.x (through a DBRP mapping) and 3.x serve.\n`;

const HISTORY_OPTIONS = { vehicle: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } } as const;
const RANGE_HELP = `  --vehicle <plate>  the vehicle (required)
  --since <date>     from (default: 24 hours before --until); ISO 8601, epoch s or ms, or "now"
  --until <date>     to (default: now); both bounds inclusive
  --limit N          at most N rows, oldest first (default 1000)
  --json             one JSON array instead of the table
`;

/** The flags every history command shares, as a query of one vehicle (or, `everyVehicle` with `--event`, of all) and range. */
function historySelection(values: { vehicle?: string | undefined; since?: string | undefined; until?: string | undefined; limit?: string | undefined; event?: unknown }, command: string, everyVehicle = false): HistoryQuery {
  const vehicle = values.vehicle === '' ? undefined : values.vehicle;
  if (vehicle === undefined && !(everyVehicle && typeof values.event === 'string')) throw new UsageError(`missing --vehicle <plate>${everyVehicle ? ' (or --event <name>, for every vehicle)' : ''}`, command);
  const now = Date.now();
  const until = values.until === undefined ? now : parseTime(values.until, '--until', command, now);
  const since = values.since === undefined ? until - 86_400_000 : parseTime(values.since, '--since', command, now);
  if (since > until) throw new UsageError('--since is after --until', command);
  const limit = values.limit === undefined ? 1000 : parseNumber(values.limit, '--limit', command, { integer: true, min: 1, max: 100_000 });
  return { vehicle, since, until, limit };
}

/** Reads one history measurement; the InfluxDB settings are checked before the flags' query is sent. */
async function readHistory<T>(io: CliIO, measurement: string, q: HistoryQuery, to: (r: InfluxRow) => T): Promise<T[]> {
  const target = influxTarget(io.env);
  return (await influxSelect(target, historyQuery(measurement, q))).map(to);
}

/** The empty answer, naming what was asked, so that a wrong plate or range shows as such. */
const nothing = (io: CliIO, what: string, q: HistoryQuery) => line(io, `no ${what} of ${q.vehicle ?? 'any vehicle'} from ${isoTime(q.since)} to ${isoTime(q.until)}`);

/** A full page: more rows may lie in the range. */
const truncated = (io: CliIO, n: number, q: HistoryQuery) => {
  if (n >= q.limit) io.stderr.write(`(the first ${q.limit} rows; narrow --since/--until or raise --limit for the rest)\n`);
};

/** `text` in lines of at most `width` characters, broken at spaces, the lines after the first indented. */
function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ')) {
    if (current && current.length + 1 + word.length > width) {
      lines.push(current);
      current = indent + word;
    } else current = current ? `${current} ${word}` : word;
  }
  return [...lines, current].join('\n');
}

/**
 * A history command: its rows of one measurement for one vehicle and range, as a table or JSON. `filter`
 * reads the command's own options into the selection (events: --event).
 */
function historyCommand<R>(c: {
  name: string;
  summary: string;
  help: string;
  measurement: string;
  what: string;
  toRow: Parameters<typeof readHistory<R>>[3];
  columns: Parameters<typeof table<R>>[1];
  options?: Record<string, { type: 'string' }>;
  /** Rows of every vehicle when no --vehicle is given but the filter is (their own vehicleno then). */
  everyVehicle?: boolean;
  filter?: (values: Record<string, unknown>, q: ReturnType<typeof historySelection>) => string | undefined;
}): Command {
  return {
    name: c.name,
    summary: c.summary,
    help: c.help,
    async run(args, io) {
      const { values, positionals } = parse(this.name, args, { ...HISTORY_OPTIONS, ...(c.options ?? {}) });
      if (values.help) return showHelp(io, this.help);
      noPositionals(positionals, this.name);
      const q = historySelection(values, this.name, c.everyVehicle);
      const what = c.filter?.(values, q) ?? c.what;
      const rows = await readHistory(io, c.measurement, q, c.toRow);
      // Rows that carry their own vehicle (events) keep it; the rest are the one vehicle asked for.
      if (values.json) line(io, JSON.stringify(rows.map((r) => ({ vehicleno: q.vehicle, ...r }))));
      else if (rows.length === 0) nothing(io, what, q);
      // Every vehicle's rows: which vehicle each is, first.
      else io.stdout.write(table<R>(rows, q.vehicle === undefined ? [{ header: 'VEHICLE', value: (r) => String((r as { vehicleno?: unknown }).vehicleno ?? '') }, ...c.columns] : c.columns));
      truncated(io, rows.length, q);
      return EXIT.ok;
    },
  };
}

const events = historyCommand<VehicleEvent>({
  name: 'events',
  summary: "a vehicle's events (every kind the service writes: --help names them) from InfluxDB",
  help: `Usage: telematics-fleet events --vehicle <plate> [--since <date>] [--until <date>] [--event <name>] [--limit N] [--json]
       telematics-fleet events --event <name> [--since <date>] [--until <date>] [--limit N] [--json]

The vehicle's events in the range, oldest first, from measurement vehicle_events: time, event, value
(1 raised, on, started, silent; 0 cleared, off, stopped, back) and what the event carried (lat, lng, soc…).
With --event and no --vehicle, that event of every vehicle (which vehicle was towed, or over the limit).

${RANGE_HELP}  --event <name>     only this event: ${wrap(EVENT_NAMES_SHOWN.join(', '), 82, ' '.repeat(21))}

Alarm flags: ${wrap(ALARM_FLAGS.join(', '), 100, '  ')}

${HISTORY_SETTINGS_HELP}`,
  measurement: HISTORY_MEASUREMENTS.events,
  what: 'event',
  toRow: toEvent,
  options: { event: { type: 'string' } },
  everyVehicle: true,
  filter(values, q) {
    const event = values.event;
    if (typeof event !== 'string') return undefined;
    if (!EVENT_NAMES.includes(event)) throw new UsageError(`--event: "${event}" is no event; see the names in --help`, 'events');
    q.event = event;
    return event;
  },
  columns: [
    { header: 'TIME', value: (r) => isoTime(r.time) },
    { header: 'EVENT', value: (r) => r.event },
    { header: 'VALUE', value: (r) => decimal(r.value, 6), align: 'right' },
    { header: 'FIELDS', value: (r) => [...(r.geofence === undefined ? [] : [`geofence=${r.geofence}`]), ...Object.entries(r.fields).map(([k, v]) => `${k}=${v}`)].join(' ') || '-' },
  ],
});

const trips = historyCommand<TripRow>({
  name: 'trips',
  summary: "a vehicle's trips (start, end, duration, km, max speed, state of charge) from InfluxDB",
  help: `Usage: telematics-fleet trips --vehicle <plate> [--since <date>] [--until <date>] [--limit N] [--json]

The vehicle's trips that started in the range, oldest first, from measurement trips: start, end,
duration, distance (km), top speed (km/h), state of charge at start and end (%, ? when unknown), and
how long of it the vehicle idled and was over SPEED_LIMIT.
A trip is written when it ends, so one under way is not listed yet.

${RANGE_HELP}
${HISTORY_SETTINGS_HELP}`,
  measurement: HISTORY_MEASUREMENTS.trips,
  what: 'trip',
  toRow: toTrip,
  columns: [
    { header: 'START', value: (r) => isoTime(r.start) },
    { header: 'END', value: (r) => (r.end === null ? '-' : isoTime(r.end)) },
    { header: 'DURATION', value: (r) => hms(r.duration_s), align: 'right' },
    { header: 'KM', value: (r) => (r.distance_m === null ? '-' : (r.distance_m / 1000).toFixed(1)), align: 'right' },
    { header: 'MAX KM/H', value: (r) => decimal(r.max_speed_kmh, 0), align: 'right' },
    { header: 'SOC %', value: (r) => socSpan(r.soc_start, r.soc_end) },
    { header: 'IDLE', value: (r) => hms(r.idle_s), align: 'right' },
    { header: 'OVERSPEED', value: (r) => hms(r.overspeed_s), align: 'right' },
  ],
});

const stops = historyCommand<StopRow>({
  name: 'stops',
  summary: "a vehicle's stops (start, end, duration, where, ignition on) from InfluxDB",
  help: `Usage: telematics-fleet stops --vehicle <plate> [--since <date>] [--until <date>] [--limit N] [--json]

The vehicle's stops that started in the range, oldest first, from measurement stops: start, end,
duration, where it stood, and how long of it the ignition was on. A stop is written when the vehicle
moves again, so the one it stands in now is not listed yet.

${RANGE_HELP}
${HISTORY_SETTINGS_HELP}`,
  measurement: HISTORY_MEASUREMENTS.stops,
  what: 'stop',
  toRow: toStop,
  columns: [
    { header: 'START', value: (r) => isoTime(r.start) },
    { header: 'END', value: (r) => (r.end === null ? '-' : isoTime(r.end)) },
    { header: 'DURATION', value: (r) => hms(r.duration_s), align: 'right' },
    { header: 'LAT', value: (r) => decimal(r.lat, 6), align: 'right' },
    { header: 'LNG', value: (r) => decimal(r.lng, 6), align: 'right' },
    { header: 'IGNITION ON', value: (r) => hms(r.ignition_on_s), align: 'right' },
    { header: 'GEOFENCE', value: (r) => r.geofence ?? '-' },
  ],
});

const charging = historyCommand<ChargingRow>({
  name: 'charging',
  summary: "a vehicle's charging sessions (start, end, duration, state of charge, energy) from InfluxDB",
  help: `Usage: telematics-fleet charging --vehicle <plate> [--since <date>] [--until <date>] [--limit N] [--json]

The vehicle's charging sessions that started in the range, oldest first, from measurement charging:
start, end, duration, state of charge at start and end (%) and energy charged (Wh, - when unknown).
A session is written when it ends, so one under way is not listed yet.

${RANGE_HELP}
${HISTORY_SETTINGS_HELP}`,
  measurement: HISTORY_MEASUREMENTS.charging,
  what: 'charging session',
  toRow: toCharging,
  columns: [
    { header: 'START', value: (r) => isoTime(r.start) },
    { header: 'END', value: (r) => (r.end === null ? '-' : isoTime(r.end)) },
    { header: 'DURATION', value: (r) => hms(r.duration_s), align: 'right' },
    { header: 'SOC %', value: (r) => socSpan(r.soc_start, r.soc_end) },
    { header: 'ENERGY WH', value: (r) => decimal(r.energy_wh, 0), align: 'right' },
  ],
});

const PACK_RANGE_HELP = `  --since <date>     from (default: 365 days before --until); ISO 8601, epoch s or ms, or "now"
  --until <date>     to (default: now); both bounds inclusive
  --limit N          at most N rows read (pack: its daily rows, oldest first; default 10000) or packs listed (packs: default 20)
  --json             one JSON array instead of the table
`;

/** A pack command's range and limit. */
function packRange(values: { since?: string | undefined; until?: string | undefined; limit?: string | undefined }, command: string, limit: number): PackRange {
  const now = Date.now();
  const until = values.until === undefined ? now : parseTime(values.until, '--until', command, now);
  const since = values.since === undefined ? until - 365 * 86_400_000 : parseTime(values.since, '--since', command, now);
  if (since > until) throw new UsageError('--since is after --until', command);
  return { since, until, limit: values.limit === undefined ? limit : parseNumber(values.limit, '--limit', command, { integer: true, min: 1, max: 100_000 }) };
}

const hours = (h: number): string => h.toFixed(1);
const cycles = (s: Stint): string => (s.cycleStart === null && s.cycleEnd === null ? '-' : `${s.cycleStart ?? '?'}→${s.cycleEnd ?? '?'}`);

const pack: Command = {
  name: 'pack',
  summary: "a pack's history across vehicles (its stints, charge and energy, heat, C-rate, soc) from InfluxDB",
  help: `Usage: telematics-fleet pack <id> [--since <date>] [--until <date>] [--limit N] [--json]

The pack's stints in the range, oldest first, from measurement pack_life: which vehicle it was in, from
its first record there to its last (or to the last row written, when it is still in it: a row is written
per UTC day at the vehicle's first record past midnight, and when the pack leaves), Ah and kWh in and out,
the BMS's charge cycles, hours at 45 °C and over and at 35–45 °C, at 1 C and over, and at a soc of 90 %
and over and 20 % and under; then the totals. <id> is the pack's bms_id, else its bat_id_1 (decimal).

${PACK_RANGE_HELP}
${HISTORY_SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { since: { type: 'string' }, until: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    if (positionals.length !== 1 || !/^\d+$/.test(positionals[0]!)) throw new UsageError('expected one pack id (its bms_id, else its bat_id_1: digits)', this.name);
    const id = positionals[0]!;
    const r = packRange(values, this.name, 10_000);
    const rows = await influxSelect(influxTarget(io.env), packQuery(id, r));
    const stints = stintsOf(rows);
    if (values.json) {
      line(io, JSON.stringify(stints.map((s) => ({ pack: id, ...s }))));
      return EXIT.ok;
    }
    if (stints.length === 0) {
      line(io, `no pack_life rows of pack ${id} from ${isoTime(r.since)} to ${isoTime(r.until)}`);
      return EXIT.ok;
    }
    const total = stints.reduce((t, s) => ({ ...t, ahIn: t.ahIn + s.ahIn, ahOut: t.ahOut + s.ahOut, kwhIn: t.kwhIn + s.kwhIn, kwhOut: t.kwhOut + s.kwhOut, hotS: t.hotS + s.hotS, warmS: t.warmS + s.warmS, cRateHighS: t.cRateHighS + s.cRateHighS, cRateExtremeS: t.cRateExtremeS + s.cRateExtremeS, socHighS: t.socHighS + s.socHighS, socLowS: t.socLowS + s.socLowS }));
    const all: Array<Stint & { label?: string }> = [...stints, { ...total, vehicleno: `total (${new Set(stints.map((s) => s.vehicleno)).size} vehicles)`, from: stints[0]!.from, to: stints.at(-1)!.to, left: false, cycleStart: stints.find((s) => s.cycleStart !== null)?.cycleStart ?? null, cycleEnd: [...stints].reverse().find((s) => s.cycleEnd !== null)?.cycleEnd ?? null, label: 'total' }];
    io.stdout.write(
      table<Stint & { label?: string }>(all, [
        { header: 'VEHICLE', value: (s) => s.vehicleno },
        { header: 'FROM', value: (s) => isoTime(s.from) },
        { header: 'TO', value: (s) => isoTime(s.to) },
        { header: 'LEFT', value: (s) => (s.label !== undefined ? '' : s.left ? 'yes' : 'no') },
        { header: 'AH IN', value: (s) => decimal(s.ahIn, 1), align: 'right' },
        { header: 'AH OUT', value: (s) => decimal(s.ahOut, 1), align: 'right' },
        { header: 'KWH IN', value: (s) => decimal(s.kwhIn, 2), align: 'right' },
        { header: 'KWH OUT', value: (s) => decimal(s.kwhOut, 2), align: 'right' },
        { header: 'CYCLES', value: cycles },
        { header: 'HOT H', value: (s) => hours(s.hotS / 3600), align: 'right' },
        { header: 'WARM H', value: (s) => hours(s.warmS / 3600), align: 'right' },
        { header: '≥1C H', value: (s) => hours((s.cRateHighS + s.cRateExtremeS) / 3600), align: 'right' },
        { header: 'SOC≥90 H', value: (s) => hours(s.socHighS / 3600), align: 'right' },
        { header: 'SOC≤20 H', value: (s) => hours(s.socLowS / 3600), align: 'right' },
      ]),
    );
    if (rows.length >= r.limit) io.stderr.write(`(the first ${r.limit} rows; narrow --since/--until or raise --limit for the rest)\n`);
    return EXIT.ok;
  },
};

const packs: Command = {
  name: 'packs',
  summary: 'the packs ranked by risk (heat, C-rate, soc held high or low) from InfluxDB',
  help: `Usage: telematics-fleet packs --worst [--since <date>] [--until <date>] [--limit N] [--json]

Every pack with pack_life rows in the range, the riskiest first, by what its rows sum to:
  ${RISK_FORMULA}
(heat and high C-rate age a pack fastest; a soc held high or low, more slowly), with its hours at each,
its Ah and kWh out, the hottest sensor and the highest C-rate read, and the BMS's last charge cycle count.

${PACK_RANGE_HELP}
${HISTORY_SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { worst: { type: 'boolean' }, since: { type: 'string' }, until: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    if (!values.worst) throw new UsageError('expected --worst (the one ranking there is)', this.name);
    const r = packRange(values, this.name, 20);
    const ranked = worstOf(await influxSelect(influxTarget(io.env), worstQuery(r)), r.limit);
    if (values.json) line(io, JSON.stringify(ranked));
    else if (ranked.length === 0) line(io, `no pack_life rows from ${isoTime(r.since)} to ${isoTime(r.until)}`);
    else
      io.stdout.write(
        table<PackRisk>(ranked, [
          { header: 'PACK', value: (p) => p.pack },
          { header: 'RISK H', value: (p) => hours(p.risk), align: 'right' },
          { header: 'HOT H', value: (p) => hours(p.hotH), align: 'right' },
          { header: 'WARM H', value: (p) => hours(p.warmH), align: 'right' },
          { header: '1-2C H', value: (p) => hours(p.cRateHighH), align: 'right' },
          { header: '≥2C H', value: (p) => hours(p.cRateExtremeH), align: 'right' },
          { header: 'SOC≥90 H', value: (p) => hours(p.socHighH), align: 'right' },
          { header: 'SOC≤20 H', value: (p) => hours(p.socLowH), align: 'right' },
          { header: 'AH OUT', value: (p) => decimal(p.ahOut, 1), align: 'right' },
          { header: 'KWH OUT', value: (p) => decimal(p.kwhOut, 2), align: 'right' },
          { header: 'MAX °C', value: (p) => decimal(p.temperatureMax, 1), align: 'right' },
          { header: 'MAX C', value: (p) => decimal(p.cRateMax, 2), align: 'right' },
          { header: 'CYCLES', value: (p) => decimal(p.cycles, 0), align: 'right' },
        ]),
      );
    return EXIT.ok;
  },
};

/** A `--from` / `--to` day: a local date (YYYY-MM-DD, in the fleet's zone) or any time parseTime takes. */
function dayBound(value: string, flag: string, zone: string, now: number): number {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value.trim())) {
    const d = DateTime.fromISO(value.trim(), { zone });
    if (!d.isValid) throw new UsageError(`${flag}: "${value}" is no date`, 'summary');
    return d.toMillis();
  }
  return parseTime(value, flag, 'summary', now);
}

/** At most this many days in one summary: a quarter. */
const MAX_DAYS = 92;

const summary: Command = {
  name: 'summary',
  summary: "a vehicle's days in the fleet's time zone: distance, driving, idling, stops, charge, alarms, first and last report",
  help: `Usage: telematics-fleet summary --vehicle <plate> [--from <day>] [--to <day>] [--tz <zone>] [--json]

The vehicle's local days, midnight to midnight in FLEET_TIMEZONE (23 or 25 hours when the clocks change),
from the history the workers derive (trips, stops, charging, vehicle_events) and its GPS fixes: trips,
km and driving time, idling (from idle_ended), stops, state of charge the trips used (percentage points),
charging sessions and the energy they charged (Wh), overspeeds, alarms raised, fuel drops and refuels,
and the day's first and last report (GPS fix), in local time.
Each counts to the day its point is stamped in: a trip, stop or charging session to the day it started (a trip
across midnight is the day it set off), an event to the day it happened (an idle to the day it ended).

  --vehicle <plate>  the vehicle (required)
  --from <day>       the first day (default: 6 days before --to); YYYY-MM-DD in the fleet's zone, or
                     any date --since takes elsewhere (the day holding it)
  --to <day>         the last day, included (default: today)
  --tz <zone>        an IANA time zone instead of FLEET_TIMEZONE
  --json             one JSON array instead of the table (times epoch ms)

${HISTORY_SETTINGS_HELP}  FLEET_TIMEZONE (default UTC), as for the service.
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { vehicle: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, tz: { type: 'string' }, json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const vehicle = values.vehicle;
    if (!vehicle) throw new UsageError('missing --vehicle <plate>', this.name);
    const zone = values.tz ?? fleetTimezone(io.env);
    if (!IANAZone.isValidZone(zone)) throw new UsageError(`--tz: "${zone}" is no IANA time zone (Asia/Kolkata, Europe/Berlin…)`, this.name);
    const now = Date.now();
    const to = values.to === undefined ? now : dayBound(values.to, '--to', zone, now);
    const from = values.from === undefined ? DateTime.fromMillis(to, { zone }).minus({ days: 6 }).toMillis() : dayBound(values.from, '--from', zone, now);
    if (from > to) throw new UsageError('--from is after --to', this.name);
    const days = localDays(from, to, zone);
    if (days.length > MAX_DAYS) throw new UsageError(`--from to --to is ${days.length} days; at most ${MAX_DAYS} at a time`, this.name);
    const rows = await readDays(influxTarget(io.env), vehicle, days);
    if (values.json) {
      line(io, JSON.stringify(rows.map((r) => ({ vehicleno: vehicle, timezone: zone, ...r }))));
      return EXIT.ok;
    }
    const local = (t: number | null) => (t === null ? '-' : DateTime.fromMillis(t, { zone }).toFormat('HH:mm'));
    line(io, `${vehicle}, days in ${zone}`);
    io.stdout.write(
      table<DaySummary>(rows, [
        { header: 'DAY', value: (r) => r.day },
        { header: 'TRIPS', value: (r) => String(r.trips), align: 'right' },
        { header: 'KM', value: (r) => (r.distance_m / 1000).toFixed(1), align: 'right' },
        { header: 'DRIVING', value: (r) => hms(r.driving_s), align: 'right' },
        { header: 'IDLE', value: (r) => hms(r.idle_s), align: 'right' },
        { header: 'STOPS', value: (r) => String(r.stops), align: 'right' },
        { header: 'SOC USED', value: (r) => decimal(r.soc_used, 1), align: 'right' },
        { header: 'CHARGES', value: (r) => String(r.charging_sessions), align: 'right' },
        { header: 'WH', value: (r) => decimal(r.energy_charged_wh, 0), align: 'right' },
        { header: 'OVERSPEEDS', value: (r) => String(r.overspeeds), align: 'right' },
        { header: 'ALARMS', value: (r) => String(r.alarms), align: 'right' },
        { header: 'FUEL -/+', value: (r) => `${r.fuel_drops}/${r.refuels}` },
        { header: 'FIRST', value: (r) => local(r.first_report) },
        { header: 'LAST', value: (r) => local(r.last_report) },
      ]),
    );
    return EXIT.ok;
  },
};

/** Commands a program adds to this one, with the classifier of their own errors (tried first). */
export interface MoreCommands {
  commands: readonly Command[];
  classify: (e: unknown) => ReturnType<ErrorClassifier> | undefined;
}

/**
 * `telematics-fleet` with `more` commands: the command ledger's (`command`, `commands`) are added where
 * the program is run (src/cmd/fleetProgram.ts), since the ledger's folder stands above this one.
 */
export function fleetProgram(more: MoreCommands = { commands: [], classify: () => undefined }): Program {
  // Theirs first, then InfluxDB's (the history commands'), then the Redis tools' (the rest).
  const classify: ErrorClassifier = (e) => more.classify(e) ?? (e instanceof InfluxError ? { code: e.code, message: `InfluxDB: ${e.message}` } : classifyToolError(e));
  return {
    name: 'telematics-fleet',
    commands: [status, silent, events, trips, stops, charging, summary, pack, packs, GEOFENCES_COMMAND, SPEED_LIMIT_COMMAND, ...more.commands],
    classify,
    help: FLEET_HELP,
  };
}

/** `telematics-fleet` without the command ledger's commands (the whole program: src/cmd/fleetProgram.ts). */
export const FLEET: Program = fleetProgram();

function FLEET_HELP(commands: string): string {
  return `Usage: telematics-fleet <command> [options]

Which vehicles report and which went silent, from each vehicle's last-seen time (its newest record that
passed the plausibility rules), kept by the service's workers (status, silent: Redis). And each vehicle's
history the workers derive from its records: events, trips, stops and charging sessions, and its days;
a pack's history across the vehicles it visited, and the packs ranked by risk (InfluxDB).
And the geofences and per-vehicle speed limits the workers judge the vehicles' fixes by (geofences,
speed-limit: Redis). And the command ledger: immobilise and mobilise, asked through the admin listener
(command) and listed (commands: Redis); docs/commands.md.

Commands:
${commands}

status and silent:
${SETTINGS_HELP}
events, trips, stops, charging, summary, pack and packs:
${HISTORY_SETTINGS_HELP}
Exit status:
  0  done
  1  a command refused by the admin listener (its reason on stderr)
  2  usage or configuration error (REDIS_URL or INFLUX_URL unset, bad flags)
  3  Redis, InfluxDB or the admin listener unreachable, or Redis or InfluxDB refused a command or query
  4  InfluxDB answered what is no query result
`;
}
