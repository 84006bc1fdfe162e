import { z } from 'zod';
import { IANAZone } from 'luxon';
import { DURATION_HINT, parseDuration } from './duration.js';
import { parseSenders, type Sender } from './senders.js';
import { hasCredentials, SECRET_SETTINGS, withoutCredentials } from './secrets.js';
import { secretKey } from '../telemetry/signature.js';
import { parseAdminCredentials } from './adminCredentials.js';
import { declarationOf, setting, type SettingDeclaration } from './settings.js';

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
  SERVICE_MODE: setting(z.enum(MODES), { group: 'service', default: 'all', description: '`all` (receiver and worker in one process), `receiver` or `worker`; a command-line argument wins' }),
  HOST: setting(z.string(), { group: 'service', default: '0.0.0.0', description: 'the HTTP listen address (push routes in receiver mode, health in every mode)' }),
  PORT: setting(int(0, 65_535), { group: 'service', default: '8080', description: 'the HTTP listen port' }),
  ADMIN_HOST: setting(z.string(), { group: 'service', default: '0.0.0.0', description: 'the admin listener\'s address: Prometheus metrics at `/metrics`, the queue UI, the fleet routes; never the port senders reach' }),
  ADMIN_PORT: setting(int(0, 65_535), { group: 'service', default: '9464', description: 'the admin listener\'s port (`0`: a free port)' }),
  METRICS_SAMPLE_INTERVAL: setting(duration, { group: 'service', default: '5s', description: 'how often the queue gauges are sampled from Redis' }),
  QUEUE_UI: setting(z.enum(['on', 'off']), { group: 'service', default: 'off', description: '`on`: the queue UI (bull-board: the push queue and its failed jobs, the dead letter) at `/admin/queues` on the admin listener. It needs `ADMIN_CREDENTIALS`, or `ADMIN_AUTH=none` to expose it on purpose; the service refuses to start otherwise' }),
  QUEUE_UI_WRITES: setting(z.enum(['on', 'off']), { group: 'service', default: 'off', description: '`on` lets the queue UI change jobs (retry, remove, add, pause); read-only otherwise. A job added by hand is checked record by record as a push is ([Security](#security)). Needs `QUEUE_UI=on`' }),
  ADMIN_CREDENTIALS: setting(z.string(), { group: 'service', default: undefined, description: 'who may use the admin listener (the queue UI, the fleet routes, the command ledger), by basic auth: `user:password`, checked whenever set (a password of 12+ characters, not the user\'s name nor a few characters repeated). Several named credentials, each with its rights: `ops:<password>:commands,immediate;viewer:<password>` (`;` between; rights `read`, `commands`, `immediate`; without rights a credential reads only, a single `user:password` included: [commands.md](commands.md#who-may-ask))' }),
  ADMIN_AUTH: setting(z.enum(['basic', 'none']), { group: 'service', default: 'basic', description: '`none` exposes the admin listener without credentials, on purpose' }),
  LOG_SUMMARY_INTERVAL: setting(duration, { group: 'service', default: '1m', description: 'an info line this often: records/s, received, rejected, written, backlog, lag; `0` off' }),
  LOG_LEVEL: setting(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), { group: 'service', default: 'info', description: 'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; logs are JSON lines on stdout' }),

  REDIS_URL: setting(z.string().trim().regex(/^rediss?:\/\//, 'expected redis://host:port or rediss://…'), { group: 'redis', default: 'redis://127.0.0.1:6379', description: 'Redis for the queue and the quarantine; `rediss://` connects over TLS with the system\'s CAs' }),
  REDIS_USERNAME: setting(z.string(), { group: 'redis', default: undefined, description: 'the ACL user (overrides the one in `REDIS_URL`); the commands it needs are listed under [Redis](#redis)' }),
  REDIS_PASSWORD: setting(z.string(), { group: 'redis', default: undefined, description: 'the ACL user\'s password (overrides the one in `REDIS_URL`)' }),
  REDIS_TLS_CA: setting(z.string().trim(), { group: 'redis', default: undefined, description: 'a CA (PEM file) to trust besides the system\'s' }),
  REDIS_TLS_CERT: setting(z.string().trim(), { group: 'redis', default: undefined, description: 'a client certificate (PEM file), for mutual TLS' }),
  REDIS_TLS_KEY: setting(z.string().trim(), { group: 'redis', default: undefined, description: 'the client certificate\'s key (PEM file)' }),
  REDIS_TLS_SERVERNAME: setting(z.string().trim(), { group: 'redis', default: undefined, description: 'the server name TLS checks the certificate against' }),
  REDIS_SENTINELS: setting(list.pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port'))), { group: 'redis', default: '', description: 'Sentinels (`host:port` list): connect to the primary they name instead of `REDIS_URL`\'s address (nor its credentials: use `REDIS_USERNAME`, `REDIS_PASSWORD`)' }),
  REDIS_SENTINEL_MASTER: setting(z.string(), { group: 'redis', default: undefined, description: 'the primary\'s name the Sentinels know; unset: `mymaster`' }),
  REDIS_SENTINEL_PASSWORD: setting(z.string(), { group: 'redis', default: undefined, description: 'the Sentinels\' password' }),
  REDIS_CLUSTER_NODES: setting(list.pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'expected host:port'))), { group: 'redis', default: '', description: 'a Redis Cluster\'s seed nodes (`host:port` list); when set the service runs in cluster mode, each queue on one master ([Scaling out](#scaling-out))' }),
  REDIS_WAIT_REPLICAS: setting(int(0, 16), { group: 'redis', default: '0', description: 'replicas that must hold a push\'s records (Redis `WAIT`, within `ENQUEUE_TIMEOUT`) before its 2xx; 503 otherwise. `0`: the primary\'s (with AOF `always`) is enough' }),
  REDIS_SKIP_VERSION_CHECK: setting(z.enum(['true', 'false']).transform((v) => v === 'true'), { group: 'redis', default: 'false', description: '`true` skips BullMQ\'s version check (INFO), for ACL users without `+info`' }),
  QUEUE_NAME: setting(z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only'), { group: 'redis', default: 'telematics-push', description: 'the BullMQ queue; the quarantine is the stream `<QUEUE_NAME>:quarantine`' }),
  QUEUE_PARTITIONS: setting(int(1, 1_024), { group: 'redis', default: '1', description: 'queues records are spread over by a hash of `vehicleno` (a vehicle stays on one); on a Redis Cluster each lives on one master: a multiple of the masters, 2 to 4 each ([Scaling out](#scaling-out)). `1` keeps the queue named `QUEUE_NAME`. Drain the queues before changing it' }),
  WORKER_PARTITIONS: setting(list.pipe(z.array(z.string().regex(/^\d+$/, 'expected partition numbers such as 0,2,4'))).transform((xs) => xs.map(Number)), { group: 'redis', default: '', description: 'the partitions this process\'s workers serve, from 0 (`0,2,4`); unset: all' }),

  INFLUX_URL: setting(url, { group: 'influx', default: 'http://127.0.0.1:8086', description: 'InfluxDB\'s base URL' }),
  INFLUX_TOKEN: setting(z.string(), { group: 'influx', default: '', description: 'API token (sent as `Authorization: Token …`): one with read and write on `INFLUX_BUCKET` alone (`influx auth create --read-bucket <id> --write-bucket <id>`), never the operator\'s or an all-access token; `<user>:<password>` for 1.8' }),
  INFLUX_ORG: setting(z.string(), { group: 'influx', default: '', description: 'organisation (2.x, Cloud); 3.x ignores it' }),
  INFLUX_API: setting(z.enum(['v2', 'v3']), { group: 'influx', default: 'v2', description: '`v2` writes `/api/v2/write`, which every InfluxDB serves; `v3` writes InfluxDB 3\'s `/api/v3/write_lp?db=…&precision=millisecond&accept_partial=true`: the good lines of a request are written and the refused ones named, so nothing is sent twice (never `no_sync`: an answer means the write is in the WAL)' }),
  INFLUX_BUCKET: setting(z.string().min(1, 'must not be empty'), { group: 'influx', default: 'telematics', description: 'bucket (2.x, Cloud), database (3.x), `db/rp` (1.8)' }),
  INFLUX_TIMEOUT: setting(duration, { group: 'influx', default: '10s', description: 'the bound on each write request' }),
  INFLUX_CONTENT_ENCODING: setting(z.enum(['identity', 'gzip']), { group: 'influx', default: 'identity', description: '`gzip` sends write bodies gzipped (about 8× fewer bytes; worth it to InfluxDB Cloud or over a WAN, at a CPU cost: docs/benchmarks/history.md); `identity`: plain text, the cheapest on a local network' }),

  PUSH_AUTH: setting(z.enum(['token', 'none']), { group: 'receiver', default: 'token', description: '`none` accepts unauthenticated pushes, on purpose' }),
  PUSH_TOKENS: setting(list, { group: 'receiver', default: '', description: 'the senders\' tokens, comma-separated: `name:token` (16+ characters), `name:sha256:<hex>` (the token\'s SHA-256), or a bare token (named `token-N`); several a sender at once for rotation. Taken as `Authorization: Bearer <t>`, `X-Api-Key: <t>` or `?token=<t>`. A receiver needs these, `PUSH_SIGNING_SECRETS`, or `PUSH_AUTH=none`' }),
  PUSH_SIGNING_SECRETS: setting(list, { group: 'receiver', default: '', description: '`name:whsec_…` Standard Webhooks secrets; a sender with secrets must sign every push, and one with secrets and no token authenticates by its signature alone; several per sender for rotation' }),
  SIGNATURE_TOLERANCE: setting(duration, { group: 'receiver', default: '5m', description: 'how far a signed push\'s `webhook-timestamp` may be from now (replays)' }),
  IDEMPOTENCY_TTL: setting(duration, { group: 'receiver', default: '1h', description: 'how long a delivery\'s `Idempotency-Key` (or `webhook-id`) is remembered: a retry within it gets the first answer again and enqueues nothing; `0` off' }),
  RATE_LIMIT_PUSHES: setting(int(0, 10_000_000), { group: 'receiver', default: '0', description: 'pushes per second per sender, shared by all receivers (through Redis; a bucket holds two seconds); over it 429 with `Retry-After`; `0` no limit' }),
  RATE_LIMIT_RECORDS: setting(int(0, 100_000_000), { group: 'receiver', default: '0', description: 'records per second per sender, as `RATE_LIMIT_PUSHES`; `0` no limit' }),
  BODY_LIMIT: setting(size, { group: 'receiver', default: '10MiB', description: 'the largest push body, also after decompression (413 above)' }),
  MAX_RECORDS_PER_PUSH: setting(int(1, 1_000_000), { group: 'receiver', default: '10000', description: 'records one push may carry (413 `too_many_records` above: split it)' }),
  QUARANTINE_RAW_LIMIT: setting(size, { group: 'receiver', default: '64KiB', description: 'how much of a rejected record or body is kept in the quarantine' }),
  QUARANTINE_MAX_BYTES: setting(size, { group: 'receiver', default: '256MiB', description: 'bytes the quarantine may hold, in equal shares: one per sender (`anonymous` alone without authentication) and one for the service\'s own entries (points the store refused). A push whose refused records would not fit in its sender\'s share is refused whole, nothing of it stored (429 `quarantine_share_full`, `Retry-After: 60`); other senders are not affected, and nothing kept is ever dropped to make room. Entries of records already acknowledged (stages `write`, `derive`) are kept beyond the service\'s share, alerted. A share must hold two entries of `QUARANTINE_RAW_LIMIT`' }),
  ENQUEUE_TIMEOUT: setting(duration, { group: 'receiver', default: '5s', description: 'the longest wait for Redis to confirm a push\'s enqueue before answering 503' }),
  ENQUEUE_LINGER: setting(duration, { group: 'receiver', default: '2ms', description: 'under load (the previous enqueue returned under 10 ms ago), how long the receiver gathers pushes into the next Redis round trip: fewer, larger jobs for Redis and the workers; an idle receiver enqueues at once; `0` off' }),
  RETRY_AFTER: setting(duration, { group: 'receiver', default: '5s', description: '`Retry-After` of 429 and 503 answers (whole seconds, rounded up)' }),
  QUEUE_MAX_JOBS: setting(int(1, 100_000_000), { group: 'receiver', default: '100000', description: 'waiting jobs above which pushes are answered 429 (accepted again below 80%)' }),
  REDIS_MEMORY_LIMIT: setting(size, { group: 'receiver', default: '0', description: 'Redis memory above which pushes are answered 503; `0`: 90% of Redis\'s `maxmemory` (no bound when Redis has none)' }),

  JOB_MAX_RECORDS: setting(int(1, 100_000), { group: 'worker', default: '1000', description: 'records per queued job (concurrent pushes are grouped up to this size)' }),
  JOB_DEFLATE: setting(z.enum(['backlog', 'always', 'never']), { group: 'worker', default: 'backlog', description: 'when the receiver deflates a job above 16 KiB: `backlog` while 64 or more jobs wait for workers (then Redis memory matters: about 275 B per full CAN record; below it a job lives milliseconds in Redis, and deflating costs the receiver and the worker CPU for nothing), `always`, or `never` (about 550 B per full CAN record)' }),
  WORKER_CONCURRENCY: setting(int(1, 256), { group: 'worker', default: '64', description: 'jobs one worker process holds at once, shared by the partitions it serves; their points merge into large InfluxDB requests (docs/benchmarks/history.md, round 3)' }),
  WORKER_LINGER: setting(duration, { group: 'worker', default: '500ms', description: 'once a job\'s points are written, its vehicles\' state (last seen, vehicle events) is updated with the other jobs of its partition that came while the previous update ran or within this long after it began: each vehicle written once a batch, so fewer and cheaper Redis scripts under load (docs/benchmarks/history.md, round 9). Only the job\'s completion waits; a batch starts at once at an eighth of a partition\'s share of `WORKER_CONCURRENCY` in jobs (so the batch updating and the next one leave three quarters of the slots to jobs writing points) or at 10,000 records; `0`: no wait beyond the previous update' }),
  WRITE_BATCH_LINES: setting(int(1, 5_000), { group: 'worker', default: '5000', description: 'lines per InfluxDB request (at most 5000)' }),
  WRITE_MAX_BYTES: setting(size, { group: 'worker', default: '8MiB', description: 'bytes per InfluxDB request, uncompressed: a request closes before a line would pass it (InfluxDB 3 refuses a body over 10 MiB after gunzip, Cloud Serverless over 50 MB; 5,000 full CAN lines are about 9 MB). A 413 all the same splits the request, and refuses no line for it' }),
  WRITE_CONCURRENCY: setting(int(1, 64), { group: 'worker', default: '2', description: 'InfluxDB requests one worker process has out at once; points of jobs that are ready meanwhile are merged into the next request. A refused request\'s halves go out side by side within it too' }),
  WRITE_LINGER: setting(duration, { group: 'worker', default: '0', description: 'under load (a request out, or one sent within this long), how long a request that is not full waits for more points; an idle worker writes at once' }),
  WORKER_LOCK_DURATION: setting(duration, { group: 'worker', default: '30s', description: 'a job whose worker died (its lock not renewed for this long) is handed to another' }),
  WORKER_MAX_STALLS: setting(int(1, 1_000), { group: 'worker', default: '20', description: 'times one job may lose its worker before it becomes a dead letter (a job that kills its worker)' }),
  RETRY_SPAN: setting(duration, { group: 'worker', default: '6h', description: 'how long a failing job keeps being retried before it becomes a dead letter' }),
  RETRY_BASE_DELAY: setting(duration, { group: 'worker', default: '1s', description: 'the first wait between attempts of a failing job, growing exponentially up to `RETRY_MAX_DELAY`' }),
  RETRY_MAX_DELAY: setting(duration, { group: 'worker', default: '60s', description: 'the longest wait between attempts (not below `RETRY_BASE_DELAY`)' }),

  CAN_TEMP_SENTINELS: setting(
    z
      .string()
      .transform((v) => (v.trim().toLowerCase() === 'none' ? '' : v))
      .pipe(list)
      .pipe(z.array(z.string().regex(/^-?\d+(\.\d+)?$/, 'expected numbers such as -40')))
      .transform((xs) => xs.map(Number)),
    { group: 'http', default: '-40,-80,-273.15', unit: '°C', description: '`cell_temperature_NN` readings equal to one of these mean "no sensor" (packs differ: -40, -80, absolute zero) and are not stored, nor refused as implausible, nor taken into pack health (`can_pack` counts them in `temperature_sensors_unused`; readings numbered beyond `no_of_temperature_sensors` never are stored either); `none` for none' },
  ),
  PACK_HEALTH: setting(z.enum(['on', 'off']), { group: 'http', default: 'on', description: 'also write each CAN record\'s pack-health point (`can_pack`: cell voltage and temperature extremes and spread, alerts raised; see What lands in InfluxDB); `off` to skip' }),
  SHUTDOWN_GRACE: setting(duration, { group: 'http', default: '25s', description: 'on SIGTERM or SIGINT, the bound on stopping: both listeners stop taking connections at once (idle keep-alive connections closed, responses in flight sent with `Connection: close`, connections still open after `min(ENQUEUE_TIMEOUT + 1s, SHUTDOWN_GRACE / 2)` closed), then pushes being enqueued and jobs in flight finish, then the Redis connections close. Past the bound the process logs what had not finished, by step (`push listener`, `admin listener`, `receiver`, `workers`, `queue gauges`), and exits 1; jobs it held return to the queue when their locks expire. A second signal exits at once. Keep it under the pod\'s `terminationGracePeriodSeconds` (30 s by default) less any `preStop` pause. `npm run up` uses 5 s unless set' }),
  HTTP_REQUEST_TIMEOUT: setting(duration, { group: 'http', default: '30s', description: 'a request (body included) must arrive within this; 408 otherwise' }),
  HTTP_HEADERS_TIMEOUT: setting(duration, { group: 'http', default: '10s', description: 'a request\'s headers must arrive within this, counted from the connection (bounding a TLS handshake too); 408 otherwise' }),
  HTTP_KEEPALIVE_TIMEOUT: setting(duration, { group: 'http', default: '5s', description: 'idle keep-alive connections close after this' }),
  HTTP_MAX_CONNECTIONS: setting(int(1, 1_000_000), { group: 'http', default: '1024', description: 'connections open at once. At the cap a new connection is not refused while another is idle: the oldest that has not sent a complete request head (or finished its TLS handshake) is closed, with 408 once it speaks HTTP, else the keep-alive connection idle longest; only when every connection has a request in progress is the new one refused, and a request in progress (a slow body included) is never cut to make room; each is counted in `telematics_http_connections_shed_total{reason}`' }),
  TLS_CERT: setting(z.string().trim(), { group: 'http', default: undefined, description: 'HTTPS on the listener: the certificate (PEM file); needs `TLS_KEY`' }),
  TLS_KEY: setting(z.string().trim(), { group: 'http', default: undefined, description: 'the certificate\'s key (PEM file); needs `TLS_CERT`' }),
  TLS_CLIENT_CA: setting(z.string().trim(), { group: 'http', default: undefined, description: 'a CA bundle (PEM file): senders must present a client certificate it signed (mutual TLS); needs `TLS_CERT`' }),

  UPSTREAM_URL: setting(url, { group: 'upstream', default: undefined, description: 'the telematics service\'s request API; when set, workers sync fuel, and the `telematics` CLI calls it' }),
  UPSTREAM_TOKEN: setting(z.string(), { group: 'upstream', default: '', description: 'the upstream API\'s token; required with `UPSTREAM_URL`' }),
  UPSTREAM_TIME_UNIT: setting(z.enum(['ms', 's']), { group: 'upstream', default: 'ms', description: 'unit of `starttime`/`endtime` the upstream expects (`ms` or `s`; the spec does not say). The upstream client trusts nothing it is sent: it follows no redirect (one, even to the same host, is an error naming its status and target origin: set `UPSTREAM_URL` to where the service answers), reads at most 16 MiB of any answer and at most 100 000 vehicles or readings per answer (more is refused whole, not cut), and cuts the service\'s `err`/`msg` to 300 characters on one line, the token and any new password replaced by `[redacted]`' }),
  UPSTREAM_MAX_CALLS_PER_SECOND: setting(int(0, 1_000), { group: 'upstream', default: '3', description: 'the provider\'s published limit of calls an account may start within any second (beyond it, it answers 429), kept by every process calling with `UPSTREAM_TOKEN` together, in Redis (`<QUEUE_NAME>:upstream:pacing`). A 429 is honoured: reads are tried again after its `Retry-After` (up to 30 s; meanwhile no process calls), a command is not sent twice but reported as not carried out, with the wait. `0`: no such bound' }),
  UPSTREAM_MIN_CALL_GAP: setting(duration, { group: 'upstream', default: '400ms', description: 'the provider\'s least time between two calls of the account: one call in flight at a time, the next starting this (and 5 ms) after the answer of the one before, as the provider counts arrivals a client cannot see; so each call\'s latency adds to the gap (at 200 ms, about 1.7 calls a second). `0`: no such bound' }),
  UPSTREAM_HISTORY_CALLS_PER_DAY: setting(int(0, 100_000), { group: 'upstream', default: '24', description: 'the provider\'s `getfuelhistory` calls per vehicle a day (counted per UTC day in `<QUEUE_NAME>:fuel:history-calls:<day>`, which expires after two days): the fuel sync reads a vehicle only when its budget allows, spread evenly (every day ÷ ⌊budget ÷ units of `FUEL_UNITS`⌋: an hour for one unit, two for litres and percent), longest waiting first, from its watermark, so no reading is lost however long it waited. `telematics fuel-history` by hand spends the same budget unseen. `0`: no budget (every vehicle every run)' }),
  UPSTREAM_TOKEN_WARN_BEFORE: setting(duration, { group: 'upstream', default: '3d', description: 'the log warns this long before the upstream token expires (read from the token: a JWT\'s `exp`; any other token\'s expiry is unknown, and the log says so at start); `telematics_upstream_token_expiry_timestamp_seconds` and `TelematicsUpstreamTokenExpiring`' }),
  FUEL_SYNC_INTERVAL: setting(duration, { group: 'upstream', default: '15m', description: 'how often the fuel sync runs; a run reads the vehicles due (see `UPSTREAM_HISTORY_CALLS_PER_DAY`) for at most this long, then leaves the rest to the next, first (`telematics_fuel_sync_behind_seconds`)' }),
  FUEL_SYNC_LOOKBACK: setting(duration, { group: 'upstream', default: '1d', description: 'how far back the first sync of a vehicle reads' }),
  FUEL_UNITS: setting(list.pipe(z.array(z.enum(['litres', 'percent'])).min(1, 'name litres, percent or both')), { group: 'upstream', default: 'litres', description: '`litres`, `percent` or both (comma-separated); each is stored with its `unit` tag' }),
  FUEL_DROP_MIN: setting(fuelAmount, { group: 'upstream', default: '5l', description: 'the synced fuel level falling this much within `FUEL_CHANGE_WINDOW` is `fuel_drop`: `5l` litres or `8%` of the tank, judged on that unit\'s history (which `FUEL_UNITS` must sync)' }),
  FUEL_REFUEL_MIN: setting(fuelAmount, { group: 'upstream', default: '5l', description: 'the synced fuel level rising this much within `FUEL_CHANGE_WINDOW` is `fuel_refuel`, in the unit of `FUEL_DROP_MIN`' }),
  FUEL_CHANGE_WINDOW: setting(duration, { group: 'upstream', default: '30m', description: 'how long a fall or rise may take to count as one' }),
  FUEL_CHANGES_WHILE_MOVING: setting(z.enum(['on', 'off']), { group: 'upstream', default: 'off', description: '`off`: a drop or refuel during which the vehicle\'s GPS speed went over `MOTION_SPEED` is not reported (sloshing, consumption); `on`: reported' }),
  FLEET_TIMEZONE: setting(
    z
      .string()
      .trim()
      .refine((v) => IANAZone.isValidZone(v), 'expected an IANA time zone name such as Asia/Kolkata or Europe/Berlin'),
    { group: 'quality', default: 'UTC', description: 'the fleet\'s IANA time zone: where its days begin for `telematics-fleet summary`, the daily panel and the analysts\' daily queries' },
  ),

  TIME_MAX_AHEAD: setting(duration, { group: 'quality', default: '15m', description: 'a record stamped further ahead of the receiver\'s clock is refused (see Data quality); `0` switches the rule off' }),
  TIME_MAX_AGE: setting(duration, { group: 'quality', default: '90d', description: 'a record older than this is refused; `0` switches the rule off' }),
  EXTRA_FIELDS_MAX: setting(int(0, 10_000), { group: 'quality', default: '120', description: 'field names beyond the schema a measurement may gain, first come first served, kept in Redis for every receiver (`can`: 69 schema fields, the tag and time and 120 more are 191 columns, under Cloud Serverless\'s 200 a table); beyond, a new name is refused as a field (`extra_fields`: in `refusedFields`, counted, quarantined), as is a field named as a tag (`tag_name`). `0`: no bound' }),
  PLAUSIBLE_RANGES: setting(list.pipe(z.array(rangeOverride)), { group: 'quality', default: '', description: 'overrides of the range table (src/ingest/plausibility/rules.ts): `rule=min..max` or `rule=off` (`battery_voltage=0..60,speed=off`); another name bounds that field; `zero_position=off` keeps (0, 0)' }),
  SILENT_AFTER: setting(
    list.pipe(z.array(silentAfter).min(1, 'name at least one threshold, such as 1h')).transform((ts) => [...ts].sort((a, b) => a.ms - b.ms)),
    { group: 'quality', default: '15m,1h,24h', description: 'a vehicle not heard from for longer than a threshold is silent: gauges, `fleet_status` points, `telematics-fleet silent`' },
  ),
  FLEET_STATUS_INTERVAL: setting(duration, { group: 'quality', default: '1m', description: 'how often the status job writes silent/back changes and the fleet\'s counts to InfluxDB (one worker replica a run)' }),
  MAX_VEHICLES: setting(int(0, 100_000_000), { group: 'quality', default: '100000', description: 'the vehicles the service keeps state for (last seen, position, event derivation: about 3 KB of Redis each, and InfluxDB series). A record of a new plate past it, neither known nor listed by the upstream\'s `listvehicles` (kept by the fuel sync when `UPSTREAM_URL` is set), is refused at the edge: listed in `rejected` (rule `vehicles_max`; a realtime record 403 `vehicle_not_admitted`), the push kept once in the quarantine, counted, alerted; the push\'s other records are stored. Receivers admit new vehicles without agreeing, so the bound may be passed by the new vehicles one second brings. The default is InfluxDB 1.x\'s `max-values-per-tag`. `0`: no bound' }),
  VEHICLE_EXPIRY: setting(duration, { group: 'quality', default: '90d', description: 'a vehicle not heard from this long has its state removed by the status job (last seen, position, silences, its events\' state, pending records, checkpoints and ledger); if it reports again it starts afresh. Must be longer than the longest `SILENT_AFTER` and `EVENTS_HORIZON`. `0`: never' }),

  EVENTS: setting(z.enum(['on', 'off']), { group: 'events', default: 'on', description: 'derive vehicle events (alarms, ignition, charging, trips, stops, idling, overspeed, geofences and the rest: [events.md](events.md)); `off` derives none' }),
  EVENTS_WINDOW: setting(duration, { group: 'events', default: '30s', description: 'the reorder window of each record type\'s stream, in record time: records arriving up to this much out of order within their stream derive events in order, as they come; later ones correct what was reported ([events.md](events.md#corrections))' }),
  EVENTS_MAX_SKEW: setting(duration, { group: 'events', default: '10m', description: 'how long one stream waits for the other to pass a time it reads there: a finished trip for the CAN stream\'s soc at its end (in GPS record time, or until the CAN stream falls idle), charging (by current alone) and the drain for the GPS track (in CAN record time, or wall time since the GPS stream last sent). Read before, it is checked once the other passes, and corrected if it was otherwise' }),
  EVENTS_HORIZON: setting(duration, { group: 'events', default: '24h', description: 'how late (record time, behind the vehicle\'s newest) a record may come and still correct what was reported ([events.md](events.md#corrections)); older ones are stored, counted (`telematics_vehicle_events_too_late_total`) and logged, changing nothing' }),
  EVENTS_CHECKPOINT_INTERVAL: setting(duration, { group: 'events', default: '1h', description: 'a vehicle\'s state is kept as a checkpoint each time its records cross into a new interval of this length: a correction replays from the last one before its late record (a shorter interval: less to replay, more kept in Redis)' }),
  EVENTS_CORRECTION_DELAY: setting(duration, { group: 'events', default: '5s', description: 'how long after a late record its vehicle\'s correction runs: late records coming meanwhile join it. InfluxDB must show a written record by then (1.x, 2.x and 3 Core at once; raise it for Cloud, whose writes become readable a moment later: a correction that finds one missing waits anyway)' }),
  EVENTS_ORDER_WAIT: setting(duration, { group: 'events', default: '10s', description: 'how long a job\'s derivation waits for jobs of its partition accepted before it whose writes are still under way (any worker), so a slow or retried write moves nothing; past it the later jobs go, and the earlier one\'s records correct what they change when it lands. Keep it under `WORKER_LOCK_DURATION`' }),
  TRIP_MIN_DURATION: setting(duration, { group: 'events', default: '5m', description: 'a trip is kept when it lasts at least this long **or** covers `TRIP_MIN_DISTANCE` (Traccar\'s `minimalTripDuration` and its default)' }),
  TRIP_MIN_DISTANCE: setting(num(0, 1_000_000), { group: 'events', default: '500', unit: 'm', description: 'a trip is kept when it covers at least this distance **or** lasts `TRIP_MIN_DURATION` (Traccar\'s `minimalTripDistance` and its default)' }),
  EVENTS_MAX_GAP: setting(duration, { group: 'events', default: '1h', formerly: 'TRIP_MAX_GAP', description: 'a gap in a stream longer than this ends what the stream held open, at its last record before the gap: in the GPS stream a trip (`gap_ended` 1), a stop, idling and overspeed (at its last fix over the limit); in the CAN stream a charging session (Traccar\'s `minimalNoDataDuration`)' }),
  TRIP_MAX_JUMP_SPEED: setting(num(1, 100_000), { group: 'events', default: '300', unit: 'km/h', description: 'two fixes further apart than this speed allows disagree: one is an outlier, a GPS glitch, not travel' }),
  GPS_MIN_ERROR: setting(num(0, 10_000), { group: 'events', default: '30', unit: 'm', description: 'a step shorter than this between fixes that both report at most `MOTION_SPEED` is GPS jitter, not travel (Traccar\'s `coordinates.minError`)' }),
  MOTION_SPEED: setting(num(0, 300), { group: 'events', default: '3', unit: 'km/h', description: 'a vehicle whose fix reports at or below this speed stands still (jitter; current-only charging needs it standing)' }),
  CHARGING_CURRENT_SIGN: setting(z.enum(['positive', 'negative']), { group: 'events', default: 'positive', description: 'the sign `current` has while charging (`positive`: packs report discharging as negative, as the spec\'s do), read with `CURRENT_SIGN_FROM=signed`' }),
  CURRENT_SIGN_FROM: setting(z.enum(['signed', 'load_status']), { group: 'events', default: 'signed', description: 'how a pack\'s `current` tells its direction: `signed`, by its sign (`CHARGING_CURRENT_SIGN`); `load_status`, for packs that send a magnitude, by the record\'s `load_status` (2 charging, 1 discharging, 0 idle: 0 A), and a record without it says nothing of charging (read by the charging sessions and the command ledger, src/telemetry/current.ts)' }),
  CHARGING_MIN_CURRENT: setting(num(0, 100_000), { group: 'events', default: '0.5', unit: 'A', description: 'below this the pack is idle, not charging (sensor noise around zero); read where a record has no `load_status`' }),
  CHARGING_MIN_DURATION: setting(duration, { group: 'events', default: '60s', description: 'the shortest charging session kept; one found by current alone (without `load_status`) needs the vehicle standing and starts only once it has lasted this long' }),
  CAPACITY_MIN_SOC_MOVED: setting(num(5, 100), { group: 'events', default: '40', unit: 'percentage points', description: 'a charging session whose soc rose at least this many points (between its first and last record carrying current) yields a capacity estimate, Ah charged ÷ (soc moved / 100), with its uncertainty (`capacity_ah_estimate`, `capacity_uncertainty_pct` on the `charging` row): the soc is a whole percent, so a shallower session is mostly rounding' }),
  CAPACITY_SOH_SESSIONS: setting(int(1, 1000), { group: 'events', default: '3', unit: 'count', description: 'a pack whose BMS figure (`battery_capacity` × `soh` / 100) lies outside the capacity estimate\'s uncertainty at this many estimating sessions in a row is `bms_soh_disagrees`' }),
  STOP_MIN_DURATION: setting(duration, { group: 'events', default: '5m', description: 'a vehicle standing still this long is a stop (a `stops` point; Traccar\'s `minimalParkingDuration` and its default)' }),
  IDLE_MIN_DURATION: setting(duration, { group: 'events', default: '5m', description: 'the ignition on and the vehicle standing this long is idling (`idle_started` / `idle_ended`; a trip\'s `idle_s`)' }),
  SPEED_LIMIT: setting(num(0, 1_000), { group: 'events', default: '0', unit: 'km/h', description: 'the fleet\'s speed limit (`0`: none, no overspeed)' }),
  OVERSPEED_MIN_DURATION: setting(duration, { group: 'events', default: '10s', description: 'how long the speed must stay over the limit to be overspeed (`overspeed_started` / `_ended`; a trip\'s `overspeed_s`; Traccar\'s `event.overspeed.minimalDuration`)' }),
  TOW_MIN_DISTANCE: setting(num(1, 1_000_000), { group: 'events', default: '300', unit: 'm', description: 'how far from where it parked a vehicle with the ignition off must be seen to have moved while off (`moved_while_off`, paged by `TelematicsVehicleMovedWhileOff`: towing, theft); above GPS drift' }),
  GEOFENCES_FILE: setting(z.string().trim(), { group: 'events', default: undefined, description: 'a GeoJSON FeatureCollection of the fleet\'s standing geofences (polygons, or points with `radius_m`; `name`, `kind`, optional `speed_limit`), added to the registry at start: a new name holds for every record time, a changed one from then; those added at run time (`telematics-fleet geofences`, the admin API) are kept (`src/ingest/geofences/`). The file is checked by the admin API\'s rules (names, caps, shapes): a file they refuse stops the start, naming the feature; one that would pass the live caps (10 000 geofences, 1 000 000 vertices) is logged as an error and not added' }),
  GEOFENCE_MIN_DWELL: setting(duration, { group: 'events', default: '60s', description: 'a vehicle is taken inside (outside) a geofence once its fixes stayed so this long: no flapping on a border (ThingsBoard\'s `minInsideDuration`)' }),
  ALARM_MIN_DURATION: setting(duration, { group: 'events', default: '30s', description: 'a raised alarm that is no safety alarm is reported once it held this long (ThingsBoard\'s alarm rule duration): at the first record of its stream that long after the raise, stamped then, `since` its raise; one cleared before is reported neither raised nor cleared. So a flag is reported at most twice per this span however it flaps. Safety alarms (`alert_thermal_runaway`, `alert_short_circuit`: `safety` in the schema) are reported the moment they are raised. `0`: every alarm at once' }),
  SOC_LOW: setting(num(0, 100), { group: 'events', default: '20', unit: '%', description: 'a battery at or under this is low (`soc_low`)' }),
  SOC_RECOVERED: setting(num(0, 100), { group: 'events', default: '30', unit: '%', description: 'a low battery at or over this has recovered (`soc_recovered`); it must be above `SOC_LOW`: the gap between is the hysteresis' }),
  SOC_DRAIN_MIN: setting(num(0.1, 100), { group: 'events', default: '5', unit: 'percentage points', description: 'parked (ignition off, standing, not charging), a soc falling this many percentage points from its highest within `SOC_DRAIN_WINDOW` is `soc_drain_while_parked` (a fault, or charge stolen)' }),
  SOC_DRAIN_WINDOW: setting(duration, { group: 'events', default: '6h', description: 'the window within which `SOC_DRAIN_MIN` must be lost' }),
  PACK_HEAT_RATE: setting(num(0.1, 100), { group: 'events', default: '2', unit: '°C per minute', description: 'a pack\'s hottest real sensor rising this fast, on average over `PACK_HEAT_WINDOW` (so by this × the window within it), on two records in a row, is `pack_heating_fast`. A lithium cell in thermal runaway rises more than 20 °C a minute (UL\'s definition); a healthy pack under its heaviest load or fast charge a fraction of a degree a minute: 2 is a tenth of the one and several times the other' }),
  PACK_HEAT_WINDOW: setting(duration, { group: 'events', default: '5m', description: 'the window `PACK_HEAT_RATE` is measured over (a rise of 10 °C within 5 minutes by default: sensor noise of a degree or two never makes it), and how long one sensor must stay `PACK_SENSOR_APART` from the others' }),
  PACK_SENSOR_APART: setting(num(0.1, 200), { group: 'events', default: '10', unit: '°C', description: 'of three or more real sensors, one this far from their median for `PACK_HEAT_WINDOW` is `pack_sensor_apart` (a hot spot, or a failing sensor); a healthy pack\'s sensors stay within a few degrees of each other' }),
  PACK_C_RATE_HIGH: setting(num(0.1, 100), { group: 'events', default: '2', unit: 'C', description: 'a pack\'s current over this multiple of its `battery_capacity` (A per Ah) for `PACK_C_RATE_MIN_DURATION` is `pack_c_rate_high` (the exposure warranties turn on); acceleration and regenerative braking peak for seconds' }),
  PACK_C_RATE_MIN_DURATION: setting(duration, { group: 'events', default: '60s', description: 'how long the C-rate must stay over `PACK_C_RATE_HIGH`, from its first record over to its last' }),
  CELL_DRIFT_GROWTH: setting(num(0.001, 5), { group: 'events', default: '0.03', unit: 'V', description: 'a pack\'s cell furthest from the median of its real cells at the end of every full charge (`CELL_DRIFT_FULL_SOC`) for at least `CELL_DRIFT_SESSIONS` charges, its distance grown this much since the first of them and at least `CELL_DRIFT_MIN`, is `cell_drifting`. A healthy cell sits at a fixed offset from the others, give or take its reading\'s noise (a few mV) and the soc it ended at: its distance grows nothing over sessions (the emulator\'s healthy packs, weak cells among them: under 15 mV in 25 cycles); a cell losing capacity fills first, a few mV further each cycle' }),
  CELL_DRIFT_MIN: setting(num(0.001, 5), { group: 'events', default: '0.05', unit: 'V', description: 'how far from the median the drifting cell must be at the end of the charge it is told at: above a healthy pack\'s top-of-charge spread (the emulator\'s healthy packs: their furthest cell under 40 mV from the median), well within the cells\' safe band' }),
  CELL_DRIFT_SESSIONS: setting(int(2, 1000), { group: 'events', default: '5', unit: 'count', description: 'the fewest end-of-charge samples the drifting cell must have been the furthest at, its distance never nearer than `CELL_DRIFT_NOISE` less than the one before: a trend, not a jump between two charges' }),
  CELL_DRIFT_NOISE: setting(num(0, 5), { group: 'events', default: '0.01', unit: 'V', description: 'how much nearer the median the drifting cell may read at one end of charge than at the one before and still be growing (a reading\'s noise, and where in the charge\'s last minutes the sample fell); nearer by more, its growth is measured again from there' }),
  CELL_DRIFT_FULL_SOC: setting(num(0, 100), { group: 'events', default: '90', unit: '%', description: 'a charge is sampled for `cell_drifting` only if its last record with the cells reads at least this soc: a cell\'s distance from the others depends on the state of charge, and full is one state sessions share' }),
  CELL_DRIFT_REST: setting(duration, { group: 'events', default: '30m', description: 'the current under `CHARGING_MIN_CURRENT` this long, the cells have relaxed: the first record with them is a rest sample, the evidence `cell_drifting` carries (`rest_deviation_v`); at rest a healthy weak cell sags as the pack empties, so rest samples tell nothing alone' }),
  SPEED_LIMIT_PREFER_LOWEST: setting(z.enum(['on', 'off']), { group: 'events', default: 'on', description: '`on`: where `SPEED_LIMIT` and a geofence\'s `speed_limit` both apply, the lowest (Traccar\'s `preferLowest`); `off`: the geofence\'s' }),
  EVENTS_WEBHOOK_URL: setting(webhookUrl, { group: 'webhook', default: undefined, description: 'POST each event there as a Standard Webhooks delivery signed with `EVENTS_WEBHOOK_SECRET`; unset, no webhook' }),
  EVENTS_WEBHOOK_SECRET: setting(z.string().trim(), { group: 'webhook', default: undefined, description: 'the `whsec_<base64>` secret shared with the receiver, which verifies each delivery; required with the URL' }),
  EVENTS_WEBHOOK_TIMEOUT: setting(duration, { group: 'webhook', default: '10s', description: 'an attempt not answered 2xx within it is retried' }),
  EVENTS_WEBHOOK_RETRY_SPAN: setting(duration, { group: 'webhook', default: '24h', description: 'how long a delivery is retried (backoff `RETRY_BASE_DELAY` to `RETRY_MAX_DELAY`) before it is kept as a failed delivery: a receiver down for hours loses nothing' }),
  EVENTS_WEBHOOK_MAX_BACKLOG: setting(int(1, 100_000_000), { group: 'webhook', default: '100000', description: 'deliveries waiting or retrying beyond which new events are not queued for the webhook (counted in `telematics_events_webhook_dropped_total`; they are still in InfluxDB)' }),
  COMMANDS: setting(z.enum(['on', 'off']), { group: 'commands', default: 'off', description: '`on`: the command ledger ([commands.md](commands.md)): `POST /fleet/commands` and `telematics-fleet command` on the admin listener (a named credential with the `commands` right), its sweep on the workers (sending to `UPSTREAM_URL`, confirming from the vehicle\'s records), and each vehicle\'s latest values the workers keep for it (about 500 bytes of Redis a vehicle)' }),
  COMMANDS_SAFE_FIX_AGE: setting(duration, { group: 'commands', default: '2m', description: 'a command that waits for its vehicle to be safe is sent only on a GPS fix at most this old (wall clock) showing it standing (at most `MOTION_SPEED`) with the ignition off' }),
  COMMANDS_WAIT_MAX: setting(duration, { group: 'commands', default: '30m', description: 'a command not sent within this of being asked expires, never sent: nothing fires hours later when a vehicle reconnects' }),
  COMMANDS_CONFIRM_WINDOW: setting(duration, { group: 'commands', default: '10m', description: 'a sent command the vehicle\'s own records confirm within this is `confirmed`, else `not_confirmed`' }),
  COMMANDS_SWEEP_INTERVAL: setting(duration, { group: 'commands', default: '5s', description: 'how often each worker looks at the commands in flight (sends, expires, confirms); one worker acts on a command, the ledger\'s script is the lock' }),
  COMMANDS_KEEP: setting(int(100, 10_000_000), { group: 'commands', default: '10000', description: 'commands the live ledger keeps in Redis; the oldest ended ones beyond go (their history stays in InfluxDB\'s `commands`)' }),
  COMMANDS_AUTOMATION_FILE: setting(z.string().trim(), { group: 'commands', default: undefined, description: 'a JSON file of rules turning vehicle events into commands (`{"rules":[{"name","event","command","type","reason"}]}`, [commands.md](commands.md#automation)); unset: no automation; needs `COMMANDS=on`' }),
});

/** Every setting, parsed (each its default unless given). */
export type Settings = z.output<typeof env>;

export type Config = Settings & {
  /** PUSH_TOKENS and PUSH_SIGNING_SECRETS read once, by sender (empty with PUSH_AUTH=none). */
  SENDERS: Sender[];
};

/** Each entry of a schema's `shape` with its declaration, in order; an entry declared without `setting` is refused. */
export function declaredSettings(shape: Readonly<Record<string, z.ZodType>>): ReadonlyArray<readonly [name: string, declared: SettingDeclaration]> {
  return Object.entries(shape).map(([name, entry]) => {
    const declared = declarationOf(entry);
    if (declared === undefined) throw new Error(`setting ${name}: declared without setting() (no default, unit or description)`);
    return [name, declared] as const;
  });
}

/** Every setting's name with its declaration, in the schema's order. */
export const SETTINGS = declaredSettings(env.shape);

/** Every setting's name, as `.env.example` must list them. */
export const CONFIG_KEYS: readonly string[] = SETTINGS.map(([name]) => name);

/** Every setting at its default: what the service uses where nothing is given. */
export const SETTING_DEFAULTS: Readonly<Settings> = Object.freeze(env.parse({}));

/** A setting's former name, still read for one release, and its name now. */
export interface RenamedSetting {
  formerly: string;
  name: string;
}

export const RENAMED_SETTINGS: readonly RenamedSetting[] = SETTINGS.flatMap(([name, d]) => (d.formerly === undefined ? [] : [{ formerly: d.formerly, name }]));

const given = (v: string | undefined): v is string => v !== undefined && v !== '';

/** The former names `source` sets (read as their new ones, for this release only): the service logs a warning for each. */
export const formerNamesIn = (source: Record<string, string | undefined>): RenamedSetting[] => RENAMED_SETTINGS.filter((r) => given(source[r.formerly]));

/** The warning a former name given is logged with. */
export const renamedWarning = (r: RenamedSetting): string => `setting renamed: ${r.formerly} is now ${r.name}; the former name is read for this release only (docs/upgrading.md)`;

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
  const problems: string[] = [];
  for (const key of CONFIG_KEYS) {
    const v = source[key];
    if (given(v)) input[key] = v;
  }
  // A value given by its former name is read as the new name's; it is named as given in its problems.
  const givenAs = new Map<string, string>();
  for (const { formerly, name } of formerNamesIn(source)) {
    if (given(source[name])) problems.push(`${name}, ${formerly}: both set; ${formerly} is the former name of ${name}: keep ${name} alone`);
    else {
      input[name] = source[formerly]!;
      givenAs.set(name, `${formerly} (now ${name})`);
    }
  }
  const parsed = env.safeParse(input);
  if (!parsed.success) {
    const where = (path: PropertyKey[]) => [givenAs.get(String(path[0])) ?? path[0], ...path.slice(1)].join('.') || '(env)';
    throw new ConfigError([...problems, ...parsed.error.issues.map((i) => `${where(i.path)}: ${i.message}`)]);
  }
  const cfg = parsed.data;
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
