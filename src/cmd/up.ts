#!/usr/bin/env node
/**
 * Quick start: the whole pipeline on this machine. Starts a private redis-server and influxd
 * (with its /api/v2/write front) when REDIS_URL / INFLUX_URL are not set, installing the
 * Debian packages first when run as root, then receiver and worker in one process; pushes a
 * sample and prints it as queried back from InfluxDB. Ctrl-C stops everything: the service first (its
 * Redis still there for the jobs in flight), then the private servers, within SHUTDOWN_GRACE (5 s
 * unless set) and their few seconds; a second Ctrl-C at once.
 * `npm run up -- --feed [records/s]` also keeps the emulator's push feed running against it, and serves
 * the emulator's operations as UPSTREAM_URL, so the feed's fuel history is synced (its thefts, refuels); with
 * `--sign` the demo sender signs every push (Standard Webhooks) and the service requires it;
 * `--influx-profile 3-core` (or `2`, `serverless`, `3-core-v3`: Core written through /api/v3/write_lp) has the private InfluxDB answer as that server does
 * (src/devstack/v2front.ts).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { formerNamesIn, loadConfig, redactedConfig, renamedWarning, type Config } from '../config/index.js';
import { parseDuration } from '../config/duration.js';
import { createLogger } from '../log/index.js';
import { startService, type RunningService } from '../ingest/service/index.js';
import { ensureDebianPackages, waitFor } from '../devstack/process.js';
import { startRedis, type LocalRedis } from '../devstack/redis.js';
import { influxQL, startInflux, type LocalInflux } from '../devstack/influxd.js';
import { PROFILES, type InfluxProfile } from '../devstack/v2front.js';
import { runFeed } from '../upstream/emulator/feed.js';
import { PROVIDER_LIMITS, startEmulator } from '../upstream/emulator/index.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { depotGeofences, Fleet } from '../upstream/emulator/fleet.js';
import { sign } from '../telemetry/signature.js';

const say = (m: string) => process.stdout.write(`${m}\n`);

function sample(now: number) {
  const t = now - (now % 1000);
  return {
    bulkData: [
      { vehicleno: 'DEMO-001', type: 'gps', data: { lat: 12.9716, lng: 77.5946, alti: 920, speed: 38.5, ignstatus: 1, time: t - 2000 } },
      { vehicleno: 'DEMO-001', type: 'can', data: { time: t - 2000, soc: 81.5, battery_voltage: 51.2, current: -12.4, cell_temperature_01: 31 } },
      { vehicleno: 'DEMO-002', type: 'gps', data: { lat: 28.6139, lng: 77.209, alti: 216, speed: 0, ignstatus: 0, time: t - 1000 } },
      { vehicleno: 'DEMO-002', type: 'can', data: { time: t - 1000, soc: 44, no_of_temperature_sensors: 1, cell_temperature_01: 29.5, cell_temperature_02: -40 } },
    ],
  };
}

type Env = Record<string, string | undefined>;

/** The servers this run started itself, stopped with it. */
interface PrivateServers {
  redis?: LocalRedis;
  influx?: LocalInflux;
}

/** The sender this run made up: a token, and with `--sign` a signing secret. */
interface DemoSender {
  token?: string;
  signingSecret?: string;
}

/** How long a private server has to stop before it is killed: its data is thrown away with it. */
const SERVER_STOP_MS = 3_000;

/** A signal this soon after the first is the same one (see stopOnSignals); a second Ctrl-C must come later to count. */
const SAME_SIGNAL_MS = 1_000;

/** SHUTDOWN_GRACE unless set: the service's drain matters little when its queue is thrown away with the private Redis. */
const UP_SHUTDOWN_GRACE = '5s';

const stopServers = async ({ redis, influx }: PrivateServers): Promise<void> => {
  await Promise.all([influx?.stop({ timeoutMs: SERVER_STOP_MS }), redis?.stop({ timeoutMs: SERVER_STOP_MS })]);
};

/** A private redis-server and influxd for whichever of REDIS_URL / INFLUX_URL is unset; their addresses go into `env`. */
async function startPrivateServers(env: Env, servers: PrivateServers): Promise<void> {
  const needs = [
    ...(env.REDIS_URL ? [] : [{ bin: 'redis-server', pkg: 'redis-server' }]),
    ...(env.INFLUX_URL ? [] : [{ bin: 'influxd', pkg: 'influxdb' }]),
  ];
  ensureDebianPackages(needs, say);
  // In process groups of their own: a Ctrl-C reaches this process alone, which stops the service
  // before the servers it drains into (and kills them however it exits; see spawnServer).
  if (!env.REDIS_URL) {
    const redis = await startRedis({ appendonly: true, ownGroup: true });
    servers.redis = redis;
    env.REDIS_URL = redis.url;
    say(`redis-server (private, AOF on) at ${redis.url}`);
  }
  if (!env.INFLUX_URL) {
    const at = process.argv.indexOf('--influx-profile');
    const asked = at >= 0 ? process.argv[at + 1] : undefined;
    // `3-core-v3`: InfluxDB 3 Core written through its own /api/v3/write_lp (INFLUX_API=v3).
    const profile = asked === '3-core-v3' ? '3-core' : asked;
    if (profile !== undefined && !(profile in PROFILES)) throw new Error(`--influx-profile: one of ${[...Object.keys(PROFILES), '3-core-v3'].join(', ')}`);
    if (asked === '3-core-v3') env.INFLUX_API ??= 'v3';
    const influx = await startInflux({ ownGroup: true, ...(profile === undefined ? {} : { profile: profile as InfluxProfile }) });
    servers.influx = influx;
    env.INFLUX_URL = influx.url;
    env.INFLUX_TOKEN = influx.token;
    env.INFLUX_BUCKET ??= 'telematics';
    await influx.createDatabase(env.INFLUX_BUCKET);
    say(`influxd (private) at ${influx.rawUrl}, /api/v2/write front at ${influx.url}`);
  }
}

/** Unless senders are configured (or PUSH_AUTH=none), a "demo" sender for this run, written into `env`. */
function addDemoSender(env: Env): DemoSender {
  if (env.PUSH_TOKENS || env.PUSH_AUTH === 'none') return {};
  const token = `demo-${randomBytes(12).toString('hex')}`;
  env.PUSH_TOKENS = `demo:${token}`;
  say(`push token for this run: ${token} (sender "demo")`);
  if (!process.argv.includes('--sign')) return { token };
  const signingSecret = `whsec_${randomBytes(24).toString('base64')}`;
  env.PUSH_SIGNING_SECRETS = `demo:${signingSecret}`;
  say(`sender "demo" signs its pushes (Standard Webhooks); its secret for this run: ${signingSecret}`);
  return { token, signingSecret };
}

/** The configuration; a refused one stops the private servers before the error goes on. */
async function loadConfigOrStop(env: Env, servers: PrivateServers): Promise<Config> {
  try {
    return loadConfig(env);
  } catch (err) {
    await stopServers(servers);
    throw err;
  }
}

/** Receiver and worker in this process, once ready; in `run` as soon as it started, for a Ctrl-C to stop. */
async function startReadyService(cfg: Config, run: Run): Promise<RunningService> {
  const log = createLogger(cfg.LOG_LEVEL);
  log.debug({ config: redactedConfig(cfg) }, 'configuration');
  const service = await startService(cfg, log);
  run.service = service;
  say(`telematics-ingest (receiver + worker) at ${service.url}`);
  await waitFor('readiness (/readyz)', async () => (await fetch(`${service.url}/readyz`)).ok, 30_000);
  return service;
}

/** What this run started, as far as it got: what a Ctrl-C stops. */
interface Run {
  servers: PrivateServers;
  upstream?: { close(): Promise<void> };
  service?: RunningService;
  /** Aborts the push feed. */
  feed: AbortController;
  /** Set once a signal came: the start gives up, and its errors are not the exit's. */
  stopping?: NodeJS.Signals;
}

/**
 * Ctrl-C (SIGINT), SIGTERM or SIGHUP stops the feed, the emulator, the service (bounded by `graceMs`:
 * past it, what had not finished is named and left), then the private servers (each killed if it
 * has not stopped within SERVER_STOP_MS; at once when it is gone already), and exits: 0 when all
 * stopped, 1 otherwise. A second signal (a second after the first at least) exits at once, the private
 * servers killed as it exits.
 * Installed before anything starts, so that a Ctrl-C while starting stops what was started.
 */
function stopOnSignals(run: Run, graceMs: number): void {
  const pending = new Set<string>();
  const unfinished = () => [...pending].flatMap((p) => (p === 'service' && run.service ? run.service.unfinished().map((u) => `service: ${u}`) : [p]));
  const step = async (name: string, work: () => Promise<unknown> | undefined): Promise<boolean> => {
    pending.add(name);
    try {
      await work();
      return true;
    } catch (err) {
      say(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    } finally {
      pending.delete(name);
    }
  };
  let stoppingAt = 0;
  const stop = (signal: NodeJS.Signals) => {
    if (run.stopping) {
      // The same Ctrl-C, relayed: the terminal signals npm, tsx and this process, and npm and tsx pass it on.
      if (Date.now() - stoppingAt < SAME_SIGNAL_MS) return;
      const left = unfinished();
      say(`\n${signal} while stopping already: exiting now${left.length > 0 ? `; unfinished: ${left.join(', ')}` : ''}`);
      process.exit(128 + (constants.signals[signal] ?? 0));
    }
    run.stopping = signal;
    stoppingAt = Date.now();
    say(`\n${signal}: stopping the service, then the private servers (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again exits at once)`);
    // The last resort, should stopping a server hang itself: nothing outlives this.
    setTimeout(() => {
      say(`not stopped within ${graceMs + SERVER_STOP_MS + 2_000} ms; unfinished: ${unfinished().join(', ')}; exiting`);
      process.exit(1);
    }, graceMs + SERVER_STOP_MS + 2_000);
    void (async () => {
      run.feed.abort();
      const closed = (async () => {
        const emulator = await step('emulator', () => run.upstream?.close());
        return (await step('service', () => run.service?.close())) && emulator;
      })();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), graceMs);
      });
      const outcome = await Promise.race([closed, late]);
      clearTimeout(timer);
      if (outcome === 'late') say(`the service did not stop within SHUTDOWN_GRACE (${graceMs} ms); unfinished: ${unfinished().join(', ')}; stopping the private servers regardless`);
      const stopped = await Promise.all([step('influxd', () => run.servers.influx?.stop({ timeoutMs: SERVER_STOP_MS })), step('redis-server', () => run.servers.redis?.stop({ timeoutMs: SERVER_STOP_MS }))]);
      const ok = outcome === true && stopped.every(Boolean);
      say(ok ? 'stopped' : 'stopped, not cleanly (see above)');
      process.exit(ok ? 0 : 1);
    })();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => stop(signal));
}

/** Pushes the sample bulk as the sender would, signed when it signs; returns what was pushed. */
async function pushSample(url: string, token: string | undefined, signingSecret: string | undefined): Promise<ReturnType<typeof sample>> {
  const push = sample(Date.now());
  const body = JSON.stringify(push);
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(`${url}/push/bulk`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(signingSecret ? { 'webhook-id': 'msg_up_sample', 'webhook-timestamp': String(ts), 'webhook-signature': sign(signingSecret, 'msg_up_sample', ts, body) } : {}),
    },
    body,
  });
  say(`\npushed a sample bulk of ${push.bulkData.length} records: HTTP ${res.status} ${await res.text()}`);
  return push;
}

/** Waits up to 15 s for the sample's 4 points in InfluxDB and prints them as queried back. */
async function showQueriedBack(queryUrl: string, bucket: string, since: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  let rows: Array<Record<string, unknown>> = [];
  const read = async () => [
    ...(await influxQL(queryUrl, bucket, `SELECT * FROM gps WHERE time >= ${since}ms AND vehicleno =~ /^DEMO-/`).catch(() => [])),
    ...(await influxQL(queryUrl, bucket, `SELECT * FROM can WHERE time >= ${since}ms AND vehicleno =~ /^DEMO-/`).catch(() => [])),
  ];
  while (Date.now() < deadline && rows.length < 4) {
    rows = await read();
    if (rows.length < 4) await new Promise((r) => setTimeout(r, 200));
  }
  // InfluxDB 1.x may show a point before all its fields: read once more after a moment.
  await new Promise((r) => setTimeout(r, 200));
  rows = await read();
  say(`\nqueried back from InfluxDB (InfluxQL on ${bucket}):`);
  for (const r of rows) {
    const fields = Object.entries(r).filter(([k, v]) => v !== null && k !== 'time' && k !== 'vehicleno');
    say(`  ${new Date(Number(r.time)).toISOString()}  ${String(r.vehicleno).padEnd(9)} ${fields.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  }
  if (rows.length < 4) say('  (not all sample points arrived within 15 s; check the logs above)');
}

/** Where the metrics are, and a `curl` to push more with this run's token. */
function sayWhereToGoNext(service: RunningService, token: string | undefined): void {
  say(`\nPrometheus metrics: ${service.adminUrl}/metrics`);
  say(`\nPush more:\n  curl -X POST ${service.url}/push/realtime -H 'Authorization: Bearer ${token ?? ''}' -H 'Content-Type: application/json' \\\n    -d '{"vehicleno":"DEMO-003","type":"can","data":{"soc":55}}'`);
}

/** The feed's vehicles' depots as a GeoJSON file of 300-m circles (the feed's fleet: seed 1, FEED_VEHICLES). */
function writeFeedDepots(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'telematics-up-')), 'depots.geojson');
  writeFileSync(file, JSON.stringify(depotGeofences(Fleet.create({ seed: 1, size: FEED_VEHICLES }))));
  return file;
}

const FEED_VEHICLES = 20;

/** With `--feed [records/s]`, the emulator's push feed keeps running against the service until `signal`. */
function startFeedIfAsked(url: string, token: string | undefined, signingSecret: string | undefined, signal: AbortSignal): void {
  const feedAt = process.argv.indexOf('--feed');
  if (feedAt < 0) return;
  const rate = Number(process.argv[feedAt + 1] ?? '') || 50;
  say(`\nemulator push feed: ${rate} records/s of ${FEED_VEHICLES} vehicles, bulk and realtime mixed; their depots are geofences, SPEED_LIMIT 50; their fuel history synced from the emulator, inside the provider's limits it enforces (each vehicle's read about hourly: UPSTREAM_HISTORY_CALLS_PER_DAY)`);
  void runFeed({ url, token, ...(signingSecret ? { signingSecret } : {}), mode: 'mixed', rate, durationMs: 7 * 86_400_000, vehicles: FEED_VEHICLES, seed: 1, signal, maxAttempts: 20 });
}

const run: Run = { servers: {}, feed: new AbortController() };

async function main(): Promise<void> {
  const env: Env = { ...process.env };
  env.SHUTDOWN_GRACE ||= UP_SHUTDOWN_GRACE;
  stopOnSignals(run, parseDuration(env.SHUTDOWN_GRACE) ?? parseDuration(UP_SHUTDOWN_GRACE)!);
  // With a feed, its events are there to be seen: the emulator's fleet passes 50 km/h now and then, and
  // starts and ends its drives at its depots (each a 300-m geofence).
  // Its fuel history is synced from the emulator's operations too, the last day's first: its thefts and refuels.
  if (process.argv.includes('--feed')) {
    env.SPEED_LIMIT ??= '50';
    env.GEOFENCES_FILE ??= writeFeedDepots();
    if (!env.UPSTREAM_URL) {
      // With the provider's limits, as production meets them: the service paces its calls and plans its fuel sync inside them.
      const upstream = await startEmulator({ fleet: Fleet.create({ seed: 1, size: FEED_VEHICLES }), limits: PROVIDER_LIMITS });
      run.upstream = upstream;
      env.UPSTREAM_URL = upstream.url;
      env.UPSTREAM_TOKEN = upstream.token;
      env.FUEL_SYNC_INTERVAL ??= '1m';
    }
  }
  const { servers } = run;
  await startPrivateServers(env, servers);
  if (run.stopping) return;
  const demo = addDemoSender(env);
  const cfg = await loadConfigOrStop(env, servers);
  for (const r of formerNamesIn(env)) say(renamedWarning(r));
  const service = await startReadyService(cfg, run);
  if (run.stopping) return;

  const token = demo.token ?? process.env.PUSH_TOKEN;
  const push = await pushSample(service.url, token, demo.signingSecret);
  await showQueriedBack(servers.influx?.rawUrl ?? cfg.INFLUX_URL, cfg.INFLUX_BUCKET, push.bulkData[0]!.data.time);
  if (run.stopping) return;
  sayWhereToGoNext(service, token);
  startFeedIfAsked(service.url, token, demo.signingSecret, run.feed.signal);
  say('\nRunning; Ctrl-C stops the service and the private servers.');
}

main().catch((err: unknown) => {
  // Once stopping, what failed to start is what the stop stops; the stop decides the exit.
  if (run.stopping) return;
  process.stderr.write(`up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  // The private servers are killed as this process exits (spawnServer's ownGroup).
  process.exit(1);
});
