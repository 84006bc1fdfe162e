import { z } from 'zod';
import { IANAZone } from 'luxon';
import { DURATION_HINT, parseDuration } from './duration.js';
import { parseSenders, type Sender } from './senders.js';
import { hasCredentials, SECRET_SETTINGS, withoutCredentials } from './secrets.js';
import { secretKey } from '../telemetry/signature.js';
import { parseAdminCredentials } from './adminCredentials.js';

/**
 * One typed configuration for every run mode, read from the environment once at start-up.
 * Each bad value is reported by name so an operator can fix them all in one go.
 */

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1_000, kib: 1_024, mb: 1_000_000, mib: 1_048_576 };

/** "90s", "6h", "250ms": see duration.ts for the one rule. */
const duration = z.string().transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: DURATION_HINT });
    return z.NEVER;
  }
  return ms;
});

/** "10MiB", "512kb" or a bare number of bytes. */
const size = z
  .string()
  .trim()
  .regex(/^\d+\s*(b|kb|kib|mb|mib)?$/i, 'expected a size such as 10MiB, 512KiB or a number of bytes')
  .transform((v) => {
    const m = /^(\d+)\s*([a-z]*)$/i.exec(v)!;
    return Number(m[1]) * (SIZE_UNITS[(m[2] || 'b').toLowerCase()] ?? 1);
  });

const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'expected a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const list = z
  .string()
  .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s.length > 0));

const url = z.string().trim().url('expected a URL such as http://127.0.0.1:8086');

/** A non-negative decimal number (metres, km/h, amperes), within bounds. */
const num = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, 'expected a number such as 100 or 0.5')
    .transform(Number)
    .pipe(z.number().min(min).max(max));

/** A fuel amount with its unit: `5l` litres, `8%` percent of the tank (the two units the fuel history has). */
export interface FuelAmount {
  amount: number;
  unit: 'litres' | 'percent';
}
const fuelAmount = z
  .string()
  .trim()
  .regex(/^\d+(\.\d+)?\s*(l|%)$/i, 'expected litres such as 5l or a percentage of the tank such as 8%')
  .transform((v): FuelAmount => ({ amount: parseFloat(v), unit: /%$/.test(v) ? 'percent' : 'litres' }))
  .pipe(z.object({ amount: z.number().positive('must be above 0'), unit: z.enum(['litres', 'percent']) }));

/** Where events are posted: http(s) only, since a receiver must be reachable by fetch. */
const webhookUrl = z
  .string()
  .trim()
  .url('expected a URL such as https://example.com/hooks/telematics')
  .regex(/^https?:\/\//i, 'expected an http:// or https:// URL')
  // It would be logged, and kept in every failed delivery's reason: deliveries are signed instead (EVENTS_WEBHOOK_SECRET).
  .refine((u) => !hasCredentials(u), 'must not carry credentials (user:password@): the receiver verifies each delivery by its signature (EVENTS_WEBHOOK_SECRET)');

/** A PLAUSIBLE_RANGES entry: `rule=min..max` or `rule=off` (a name that is no rule is a field, bounded so). */
export type RangeOverride = { name: string; off: true } | { name: string; off?: false; min: number; max: number };

const rangeOverride = z.string().transform((v, ctx): RangeOverride => {
  const m = /^([A-Za-z][A-Za-z0-9_]{0,127})=(?:(off)|(-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?))$/.exec(v);
  if (!m || (m[2] === undefined && Number(m[3]) > Number(m[4])) || (m[1] === 'zero_position' && m[2] === undefined)) {
    ctx.addIssue({ code: 'custom', message: `"${v}": expected rule=min..max or rule=off (zero_position takes only off), such as battery_voltage=0..60 or speed=off` });
    return z.NEVER;
  }
  return m[2] ? { name: m[1]!, off: true } : { name: m[1]!, min: Number(m[3]), max: Number(m[4]) };
});

/** A SILENT_AFTER threshold: a duration, labelled as written (the `after` label and tag). */
const silentAfter = z.string().transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: `"${v}": ${DURATION_HINT}` });
    return z.NEVER;
  }
  return { label: v.trim(), ms };
});

export const MODES = ['all', 'receiver', 'worker'] as const;
export type Mode = (typeof MODES)[number];

const env = z.object({
  SERVICE_MODE: z.enum(MODES).default('all'),
  HOST: z.string().default('0.0.0.0'),
  PORT: int(0, 65_535).default(8080),
  ADMIN_HOST: z.string().default('0.0.0.0'),
  ADMIN_PORT: int(0, 65_535).default(9464),
  METRICS_SAMPLE_INTERVAL: duration.default(5_000),
  QUEUE_UI: z.enum(['on', 'off']).default('off'),
  QUEUE_UI_WRITES: z.enum(['on', 'off']).default('off'),
  ADMIN_CREDENTIALS: z.string().optional(),
  ADMIN_AUTH: z.enum(['basic', 'none']).default('basic'),
  LOG_SUMMARY_INTERVAL: duration.default(60_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  REDIS_URL: z.string().trim().regex(/^rediss?:\/\//, 'expected redis://host:port or rediss://…').default('redis://127.0.0.1:6379'),
  REDIS_USERNAME: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
  REDIS_TLS_CA: z.string().trim().optional(),
  REDIS_TLS_CERT: z.string().trim().optional(),
  REDIS_TLS_KEY: z.string().trim().optional(),
  REDIS_TLS_SERVERNAME: z.string().trim().optional(),
  REDIS_SENTINELS: list.pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port'))).default([]),
  REDIS_SENTINEL_MASTER: z.string().optional(),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  REDIS_CLUSTER_NODES: list.pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port'))).default([]),
  REDIS_WAIT_REPLICAS: int(0, 16).default(0),
  REDIS_SKIP_VERSION_CHECK: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  QUEUE_NAME: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only').default('telematics-push'),
  QUEUE_PARTITIONS: int(1, 1_024).default(1),
  WORKER_PARTITIONS: list.pipe(z.array(z.string().regex(/^\d+$/, 'expected partition numbers such as 0,2,4'))).transform((xs) => xs.map(Number)).default([]),

  INFLUX_URL: url.default('http://127.0.0.1:8086'),
  INFLUX_TOKEN: z.string().default(''),
  INFLUX_ORG: z.string().default(''),
  /** `v2`: /api/v2/write, which every InfluxDB serves; `v3`: InfluxDB 3's /api/v3/write_lp (partial writes, refused lines named). */
  INFLUX_API: z.enum(['v2', 'v3']).default('v2'),
  INFLUX_BUCKET: z.string().min(1, 'must not be empty').default('telematics'),
  INFLUX_TIMEOUT: duration.default(10_000),
  INFLUX_CONTENT_ENCODING: z.enum(['identity', 'gzip']).default('identity'),

  PUSH_AUTH: z.enum(['token', 'none']).default('token'),
  PUSH_TOKENS: list.default([]),
  PUSH_SIGNING_SECRETS: list.default([]),
  SIGNATURE_TOLERANCE: duration.default(5 * 60_000),
  IDEMPOTENCY_TTL: duration.default(3_600_000),
  RATE_LIMIT_PUSHES: int(0, 10_000_000).default(0),
  RATE_LIMIT_RECORDS: int(0, 100_000_000).default(0),
  BODY_LIMIT: size.default(10 * 1_048_576),
  MAX_RECORDS_PER_PUSH: int(1, 1_000_000).default(10_000),
  QUARANTINE_RAW_LIMIT: size.default(64 * 1_024),
  QUARANTINE_MAX_BYTES: size.default(256 * 1_048_576),
  ENQUEUE_TIMEOUT: duration.default(5_000),
  ENQUEUE_LINGER: duration.default(2),
  RETRY_AFTER: duration.default(5_000),
  QUEUE_MAX_JOBS: int(1, 100_000_000).default(100_000),
  REDIS_MEMORY_LIMIT: size.default(0),

  JOB_MAX_RECORDS: int(1, 100_000).default(1_000),
  JOB_DEFLATE: z.enum(['backlog', 'always', 'never']).default('backlog'),
  WORKER_CONCURRENCY: int(1, 256).default(64),
  /** How long a partition gathers jobs whose points are written, after its previous state update began, to update their vehicles' state together. */
  WORKER_LINGER: duration.default(500),
  WRITE_BATCH_LINES: int(1, 5_000).default(5_000),
  /** Bytes per InfluxDB request, uncompressed: under InfluxDB 3's 10 MiB (and Cloud's 50 MB) with room to spare. */
  WRITE_MAX_BYTES: size.default(8 << 20),
  WRITE_CONCURRENCY: int(1, 64).default(2),
  WRITE_LINGER: duration.default(0),
  WORKER_LOCK_DURATION: duration.default(30_000),
  WORKER_MAX_STALLS: int(1, 1_000).default(20),
  RETRY_SPAN: duration.default(6 * 3_600_000),
  RETRY_BASE_DELAY: duration.default(1_000),
  RETRY_MAX_DELAY: duration.default(60_000),

  CAN_TEMP_SENTINELS: z
    .string()
    .transform((v) => (v.trim().toLowerCase() === 'none' ? '' : v))
    .pipe(list)
    .pipe(z.array(z.string().regex(/^-?\d+(\.\d+)?$/, 'expected numbers such as -40')))
    .transform((xs) => xs.map(Number))
    .default([-40]),

  PACK_HEALTH: z.enum(['on', 'off']).default('on'),
  SHUTDOWN_GRACE: duration.default(25_000),
  HTTP_REQUEST_TIMEOUT: duration.default(30_000),
  HTTP_HEADERS_TIMEOUT: duration.default(10_000),
  HTTP_KEEPALIVE_TIMEOUT: duration.default(5_000),
  HTTP_MAX_CONNECTIONS: int(1, 1_000_000).default(1_024),
  TLS_CERT: z.string().trim().optional(),
  TLS_KEY: z.string().trim().optional(),
  TLS_CLIENT_CA: z.string().trim().optional(),

  UPSTREAM_URL: url.optional(),
  UPSTREAM_TOKEN: z.string().default(''),
  UPSTREAM_TIME_UNIT: z.enum(['ms', 's']).default('ms'),
  /** The provider's published limits of an account, kept by every process calling with the token together (in Redis): calls starting within any second; 0: no such bound. */
  UPSTREAM_MAX_CALLS_PER_SECOND: int(0, 1_000).default(3),
  /** Least time between the starts of two calls of the account; 0: no such bound. */
  UPSTREAM_MIN_CALL_GAP: duration.default(400),
  /** `getfuelhistory` calls per vehicle per (UTC) day the provider allows: the fuel sync plans inside it; 0: no budget. */
  UPSTREAM_HISTORY_CALLS_PER_DAY: int(0, 100_000).default(24),
  /** How long before the upstream token's expiry (read from the token, a JWT's exp) the log warns. */
  UPSTREAM_TOKEN_WARN_BEFORE: duration.default(3 * 86_400_000),
  FUEL_SYNC_INTERVAL: duration.default(15 * 60_000),
  FUEL_SYNC_LOOKBACK: duration.default(24 * 3_600_000),
  FUEL_UNITS: list.pipe(z.array(z.enum(['litres', 'percent'])).min(1, 'name litres, percent or both')).default(['litres']),
  /** A fall of the synced fuel level this large within FUEL_CHANGE_WINDOW is fuel_drop: `5l` (litres) or `8%` (percent of the tank). */
  FUEL_DROP_MIN: fuelAmount.default({ amount: 5, unit: 'litres' }),
  /** A rise this large within FUEL_CHANGE_WINDOW is fuel_refuel, in the same unit as FUEL_DROP_MIN. */
  FUEL_REFUEL_MIN: fuelAmount.default({ amount: 5, unit: 'litres' }),
  FUEL_CHANGE_WINDOW: duration.default(30 * 60_000),
  /** off: a drop or refuel during which the vehicle moved (GPS speed over MOTION_SPEED) is not told (sloshing, consumption). */
  FUEL_CHANGES_WHILE_MOVING: z.enum(['on', 'off']).default('off'),
  /** The fleet's time zone (IANA name): the days of `telematics-fleet summary`, the daily panel and queries. */
  FLEET_TIMEZONE: z
    .string()
    .trim()
    .refine((v) => IANAZone.isValidZone(v), 'expected an IANA time zone name such as Asia/Kolkata or Europe/Berlin')
    .default('UTC'),

  TIME_MAX_AHEAD: duration.default(15 * 60_000),
  TIME_MAX_AGE: duration.default(90 * 86_400_000),
  /** Field names beyond its schema a measurement may gain (columns: Cloud Serverless takes 200 a table); 0: no bound. */
  EXTRA_FIELDS_MAX: int(0, 10_000).default(120),
  PLAUSIBLE_RANGES: list.pipe(z.array(rangeOverride)).default([]),
  SILENT_AFTER: list
    .pipe(z.array(silentAfter).min(1, 'name at least one threshold, such as 1h'))
    .transform((ts) => [...ts].sort((a, b) => a.ms - b.ms))
    .default([
      { label: '15m', ms: 15 * 60_000 },
      { label: '1h', ms: 3_600_000 },
      { label: '24h', ms: 86_400_000 },
    ]),
  FLEET_STATUS_INTERVAL: duration.default(60_000),
  /** Vehicles the service keeps state for; a new one beyond, neither known nor listed upstream, is refused. 0: no bound. */
  MAX_VEHICLES: int(0, 100_000_000).default(100_000),
  /** A vehicle not heard from this long has its state removed (last seen, position, events). 0: never. */
  VEHICLE_EXPIRY: duration.default(90 * 86_400_000),

  // Vehicle events (issue #28): derived per vehicle, committed to a per-partition outbox stream.
  EVENTS: z.enum(['on', 'off']).default('on'),
  /** The reorder window, in record time: records arriving this much out of order still derive events in order. */
  EVENTS_WINDOW: duration.default(30_000),
  /**
   * How long one stream waits for the other to pass a time it reads there (a finished trip for the CAN
   * stream's soc at its end, or until that stream falls idle; charging and the drain for the GPS track, or
   * that long of wall time since it last sent): in the waiting stream's record time. Read before, it is
   * checked once the other passes, and corrected if it was otherwise.
   */
  EVENTS_MAX_SKEW: duration.default(600_000),
  /** How late (record time, behind the vehicle's newest) a record may come and still correct what was told; older ones are stored and counted as too late. */
  EVENTS_HORIZON: duration.default(24 * 3_600_000),
  /** A vehicle's state is kept as a checkpoint each time its records cross into a new interval of this length: a correction replays from the last one before its late record. */
  EVENTS_CHECKPOINT_INTERVAL: duration.default(3_600_000),
  /** How long after a late record its vehicle's correction runs (late records coming meanwhile join it; InfluxDB must show a written record by then). */
  EVENTS_CORRECTION_DELAY: duration.default(5_000),
  /** How long a job's derivation waits for jobs of its partition accepted before it whose writes are still under way (then it goes first; theirs correct what they change). */
  EVENTS_ORDER_WAIT: duration.default(10_000),
  /** A trip is kept when it lasts this long OR covers TRIP_MIN_DISTANCE (Traccar's minimalTripDuration and its default). */
  TRIP_MIN_DURATION: duration.default(300_000),
  /** Metres (Traccar's minimalTripDistance and its default). */
  TRIP_MIN_DISTANCE: num(0, 1_000_000).default(500),
  /** A gap in a stream longer than this ends the open trip or charging session at the last record before it (Traccar's minimalNoDataDuration). */
  TRIP_MAX_GAP: duration.default(3_600_000),
  /** km/h: two fixes further apart than this speed allows are a GPS glitch, not travel. */
  TRIP_MAX_JUMP_SPEED: num(1, 100_000).default(300),
  /** Metres: a step shorter than this from a fix reporting no movement is GPS jitter, not travel (Traccar's coordinates.minError). */
  GPS_MIN_ERROR: num(0, 10_000).default(30),
  /** km/h: a fix at or below this speed reports no movement (jitter, and current-only charging needs the vehicle standing). */
  MOTION_SPEED: num(0, 300).default(3),
  /** The sign `current` has while charging (the spec's packs report discharging as negative: positive). */
  CHARGING_CURRENT_SIGN: z.enum(['positive', 'negative']).default('positive'),
  /** Amperes: below this the pack is idle, not charging (sensor noise around zero). */
  CHARGING_MIN_CURRENT: num(0, 100_000).default(0.5),
  CHARGING_MIN_DURATION: duration.default(60_000),
  /** A stop is told when the vehicle stood still this long (Traccar's minimalParkingDuration and its default). */
  STOP_MIN_DURATION: duration.default(300_000),
  /** Idling is told when the ignition was on and the vehicle stood still this long. */
  IDLE_MIN_DURATION: duration.default(300_000),
  /** km/h: the fleet's speed limit; 0 tells no overspeed. */
  SPEED_LIMIT: num(0, 1_000).default(0),
  /** Overspeed is told when the speed stayed over the limit this long (Traccar's event.overspeed.minimalDuration). */
  OVERSPEED_MIN_DURATION: duration.default(10_000),
  /** Metres: with the ignition off, a vehicle seen this far from where it parked moved while off (towing, theft); above GPS drift. */
  TOW_MIN_DISTANCE: num(1, 1_000_000).default(300),
  /** A GeoJSON FeatureCollection of geofences, added to the registry at start (by name; those added at run time are kept). */
  GEOFENCES_FILE: z.string().trim().optional(),
  /** A vehicle is taken inside or outside a geofence once its fixes stayed so this long (no flapping on a border). */
  GEOFENCE_MIN_DWELL: duration.default(60_000),
  /** A raised alarm that is no safety alarm is told once it held this long; safety alarms at once. 0: every alarm at once. */
  ALARM_MIN_DURATION: duration.default(30_000),
  /** Percent: a battery at or under SOC_LOW is low (soc_low), and recovered at or over SOC_RECOVERED (soc_recovered). */
  SOC_LOW: num(0, 100).default(20),
  SOC_RECOVERED: num(0, 100).default(30),
  /** Percentage points: parked (ignition off, standing, not charging), a soc falling this much within SOC_DRAIN_WINDOW is soc_drain_while_parked. */
  SOC_DRAIN_MIN: num(0.1, 100).default(5),
  SOC_DRAIN_WINDOW: duration.default(6 * 3_600_000),
  /** on: where SPEED_LIMIT and a geofence's speed_limit both apply, the lowest (Traccar's preferLowest); off: the geofence's. */
  SPEED_LIMIT_PREFER_LOWEST: z.enum(['on', 'off']).default('on'),
  EVENTS_WEBHOOK_URL: webhookUrl.optional(),
  EVENTS_WEBHOOK_SECRET: z.string().trim().optional(),
  EVENTS_WEBHOOK_TIMEOUT: duration.default(10_000),
  /** A receiver down for hours loses nothing: each delivery is retried for this long. */
  EVENTS_WEBHOOK_RETRY_SPAN: duration.default(24 * 3_600_000),
  EVENTS_WEBHOOK_MAX_BACKLOG: int(1, 100_000_000).default(100_000),
  /** on: the command ledger (POST /fleet/commands, its sweep on the workers) and each vehicle's latest values it reads (docs/commands.md). */
  COMMANDS: z.enum(['on', 'off']).default('off'),
  /** A command that waits for its vehicle to be safe needs a fix this recent (standing, the ignition off). */
  COMMANDS_SAFE_FIX_AGE: duration.default(120_000),
  /** A command not sent within this of being asked expires, never sent: nothing fires hours later. */
  COMMANDS_WAIT_MAX: duration.default(30 * 60_000),
  /** A sent command is confirmed by the vehicle's records within this, or told not confirmed. */
  COMMANDS_CONFIRM_WINDOW: duration.default(10 * 60_000),
  /** How often each worker looks at the commands in flight. */
  COMMANDS_SWEEP_INTERVAL: duration.default(5_000),
  /** Commands the live ledger keeps (the oldest ended ones beyond go; InfluxDB's `commands` keeps their history). */
  COMMANDS_KEEP: int(100, 10_000_000).default(10_000),
  /** A JSON file of automation rules (events → commands, docs/commands.md); unset: no automation. */
  COMMANDS_AUTOMATION_FILE: z.string().trim().optional(),
});

export type Config = z.output<typeof env> & {
  /** PUSH_TOKENS and PUSH_SIGNING_SECRETS read once, by sender (empty with PUSH_AUTH=none). */
  SENDERS: Sender[];
};

/** Every setting's name, as `.env.example` must list them. */
export const CONFIG_KEYS: readonly string[] = Object.keys(env.shape);

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Who reads the configuration: the service, or a tool such as the dead-letter CLI, which needs no
 * push tokens but must be pointed at its Redis explicitly rather than write to a default one.
 */
export type ConfigRole = 'service' | 'tool';

/** Parses the environment; empty strings count as unset so `.env` files can leave a value blank. */
export function loadConfig(source: Record<string, string | undefined> = process.env, role: ConfigRole = 'service'): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(env.shape)) {
    const v = source[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  const parsed = env.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
  }
  const cfg = parsed.data;
  const problems: string[] = [];
  if (role === 'tool' && !input.REDIS_URL && cfg.REDIS_SENTINELS.length === 0 && cfg.REDIS_CLUSTER_NODES.length === 0) {
    problems.push('REDIS_URL: set it to the Redis the service uses; this tool does not assume one');
  }
  if (role === 'service' && cfg.PUSH_AUTH === 'token' && cfg.SERVICE_MODE !== 'worker' && cfg.PUSH_TOKENS.length === 0 && cfg.PUSH_SIGNING_SECRETS.length === 0) {
    problems.push('PUSH_TOKENS: set at least one token, or PUSH_AUTH=none to accept unauthenticated pushes on purpose');
  }
  const senders = parseSenders(cfg.PUSH_TOKENS, cfg.PUSH_SIGNING_SECRETS);
  problems.push(...senders.problems);
  // Whenever they are set: they guard the fleet routes (plates, positions, geofences) as well as the queue UI.
  const weak = cfg.ADMIN_CREDENTIALS === undefined ? undefined : credentialsWeakness(cfg.ADMIN_CREDENTIALS);
  if (weak !== undefined) problems.push(`ADMIN_CREDENTIALS: ${weak}`);
  else if (cfg.QUEUE_UI === 'on' && cfg.ADMIN_AUTH === 'basic' && cfg.ADMIN_CREDENTIALS === undefined) {
    problems.push('ADMIN_CREDENTIALS: the queue UI (QUEUE_UI=on) needs user:password (a password of 12+ characters), or ADMIN_AUTH=none to expose it on purpose');
  }
  if (cfg.QUEUE_UI_WRITES === 'on' && cfg.QUEUE_UI !== 'on') problems.push('QUEUE_UI_WRITES: lets the queue UI change jobs; it needs QUEUE_UI=on');
  if (Boolean(cfg.TLS_CERT) !== Boolean(cfg.TLS_KEY)) problems.push('TLS_CERT, TLS_KEY: set both (PEM files) to serve HTTPS, or neither');
  if (cfg.TLS_CLIENT_CA && !cfg.TLS_CERT) problems.push('TLS_CLIENT_CA: needs TLS_CERT and TLS_KEY (client certificates are asked for over TLS only)');
  if (cfg.REDIS_CLUSTER_NODES.length > 0 && cfg.REDIS_SENTINELS.length > 0) problems.push('REDIS_CLUSTER_NODES, REDIS_SENTINELS: a Redis is either a Cluster or Sentinel-managed; set one');
  const beyond = cfg.WORKER_PARTITIONS.filter((p) => p >= cfg.QUEUE_PARTITIONS);
  if (beyond.length > 0) problems.push(`WORKER_PARTITIONS: ${beyond.join(', ')} not below QUEUE_PARTITIONS (${cfg.QUEUE_PARTITIONS}); partitions are numbered from 0`);
  if (cfg.UPSTREAM_URL && !cfg.UPSTREAM_TOKEN) problems.push('UPSTREAM_TOKEN: required when UPSTREAM_URL is set');
  if (cfg.UPSTREAM_HISTORY_CALLS_PER_DAY > 0 && cfg.UPSTREAM_HISTORY_CALLS_PER_DAY < cfg.FUEL_UNITS.length) {
    problems.push(`UPSTREAM_HISTORY_CALLS_PER_DAY: ${cfg.UPSTREAM_HISTORY_CALLS_PER_DAY} cannot pay for one sync of FUEL_UNITS (${cfg.FUEL_UNITS.join(', ')}: a call each); raise it, sync fewer units, or 0 for no budget`);
  }
  if (cfg.RETRY_MAX_DELAY < cfg.RETRY_BASE_DELAY) problems.push('RETRY_MAX_DELAY: must not be below RETRY_BASE_DELAY');
  if (cfg.FUEL_REFUEL_MIN.unit !== cfg.FUEL_DROP_MIN.unit) problems.push('FUEL_REFUEL_MIN: must be in the unit of FUEL_DROP_MIN (l or %): fuel changes are judged on one history');
  else if (cfg.UPSTREAM_URL && !cfg.FUEL_UNITS.includes(cfg.FUEL_DROP_MIN.unit)) {
    problems.push(`FUEL_DROP_MIN: in ${cfg.FUEL_DROP_MIN.unit}, which FUEL_UNITS (${cfg.FUEL_UNITS.join(', ')}) does not sync; add it there or give the thresholds in ${cfg.FUEL_UNITS[0] === 'litres' ? 'l' : '%'}`);
  }
  if (cfg.SOC_RECOVERED <= cfg.SOC_LOW) problems.push(`SOC_RECOVERED: must be above SOC_LOW (${cfg.SOC_LOW}), or a battery at the threshold flaps between low and recovered`);
  if (cfg.EVENTS_WEBHOOK_URL && !cfg.EVENTS_WEBHOOK_SECRET) {
    problems.push('EVENTS_WEBHOOK_SECRET: required when EVENTS_WEBHOOK_URL is set (whsec_<base64>, shared with the receiver, which verifies each delivery)');
  }
  if (cfg.EVENTS_WEBHOOK_SECRET) {
    try {
      secretKey(cfg.EVENTS_WEBHOOK_SECRET);
    } catch (err) {
      problems.push(`EVENTS_WEBHOOK_SECRET: ${(err as Error).message}`);
    }
  }
  if (cfg.EVENTS_WEBHOOK_TIMEOUT <= 0) problems.push('EVENTS_WEBHOOK_TIMEOUT: must be above 0');
  if (cfg.COMMANDS_SWEEP_INTERVAL <= 0 || cfg.COMMANDS_WAIT_MAX <= 0 || cfg.COMMANDS_CONFIRM_WINDOW <= 0 || cfg.COMMANDS_SAFE_FIX_AGE <= 0) {
    problems.push('COMMANDS_SWEEP_INTERVAL, COMMANDS_WAIT_MAX, COMMANDS_CONFIRM_WINDOW, COMMANDS_SAFE_FIX_AGE: each must be above 0');
  }
  if (cfg.COMMANDS_AUTOMATION_FILE && cfg.COMMANDS !== 'on') problems.push('COMMANDS_AUTOMATION_FILE: its rules make commands; it needs COMMANDS=on');
  const share = quarantineShareOf(cfg.QUARANTINE_MAX_BYTES, cfg.PUSH_AUTH === 'none' ? 0 : senders.senders.length);
  if (share < 2 * cfg.QUARANTINE_RAW_LIMIT) {
    problems.push(`QUARANTINE_MAX_BYTES: a sender's share (${share} bytes, one of ${cfg.QUARANTINE_MAX_BYTES} shared by the senders and the service) must hold at least two entries of QUARANTINE_RAW_LIMIT (${cfg.QUARANTINE_RAW_LIMIT})`);
  }
  const longestSilence = cfg.SILENT_AFTER.at(-1)!;
  if (cfg.VEHICLE_EXPIRY > 0 && cfg.VEHICLE_EXPIRY <= Math.max(longestSilence.ms, cfg.EVENTS_HORIZON)) {
    problems.push(`VEHICLE_EXPIRY: must be longer than the longest SILENT_AFTER (${longestSilence.label}) and EVENTS_HORIZON, or a silent vehicle is forgotten before it is told silent, or its late records corrected`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...cfg, SENDERS: cfg.PUSH_AUTH === 'none' ? [] : senders.senders };
}

/**
 * Why ADMIN_CREDENTIALS' named credentials (adminCredentials.ts) cannot guard anything, or undefined: each
 * as `credentialWeakness`, named by its name (never its password), and no name twice.
 */
export function credentialsWeakness(value: string): string | undefined {
  const all = parseAdminCredentials(value);
  if (all.length === 0) return 'expected user:password';
  const names = new Set<string>();
  for (const c of all) {
    const weak = credentialWeakness(`${c.name}:${c.password}`);
    if (weak !== undefined) return all.length > 1 ? `${JSON.stringify(c.name)}: ${weak}` : weak;
    if (names.has(c.name)) return `${JSON.stringify(c.name)} is named twice`;
    names.add(c.name);
  }
  return undefined;
}

/**
 * Why admin credentials are too weak to guard anything, or undefined: `user:password`, a password of
 * 12+ characters that is not the user's name or one character repeated. Nothing of it is said back.
 */
export function credentialWeakness(credentials: string): string | undefined {
  const colon = credentials.indexOf(':');
  if (colon <= 0) return 'expected user:password';
  const user = credentials.slice(0, colon);
  const password = credentials.slice(colon + 1);
  if ([...password].length < 12) return 'the password must have 12 or more characters';
  if (password === user || new Set(password).size < 4) return 'the password is too easy to guess (the user name, or a few characters repeated); choose another';
  return undefined;
}

/**
 * A sender's share of the quarantine: QUARANTINE_MAX_BYTES in equal parts, one per sender (one,
 * `anonymous`, without authentication) and one for the service's own stages (points the store refused).
 */
export function quarantineShareOf(maxBytes: number, senders: number): number {
  return Math.floor(maxBytes / (Math.max(1, senders) + 1));
}

/** The configuration as it may be logged: secrets replaced by their presence (lists by their length). */
export function redactedConfig(cfg: Config): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...cfg, SENDERS: cfg.SENDERS.map((s) => s.name) };
  // Every URL without the credentials it may carry.
  for (const [key, v] of Object.entries(cfg)) if (typeof v === 'string' && v.includes('://')) shown[key] = withoutCredentials(v, '[credentials]@');
  for (const key of SECRET_SETTINGS) {
    const v = cfg[key];
    shown[key] = Array.isArray(v) ? `[${v.length} set]` : v ? '[set]' : '[unset]';
  }
  return shown;
}
