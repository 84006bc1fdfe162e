import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from '../../src/devstack/process.js';
import { runFeed, type FeedErrorCount, type FeedMode } from '../../src/upstream/emulator/feed.js';
import type { ServiceProcess } from '../harness/proc.js';
import { startStack, TOKEN } from '../harness/stack.js';
import { IncrementalChecker, type CheckerTotals } from './checker.js';
import { figures, type SoakFigures, type SoakSample } from './report.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { depotGeofences, Fleet } from '../../src/upstream/emulator/fleet.js';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { infoField, metricSum, MiB, processSample, scrape, type ProcessSample, type PromSample } from './sample.js';
import { HeatWatch, judgePacks, PACK_EVENTS, PACK_SWAP_EVENT, packVerdicts, type PackEvent, type PackEvidence, type PackReport } from './packs.js';
import { influxQL } from '../../src/devstack/influxd.js';
import { loadConfig } from '../../src/config/index.js';
import { deriveOptions } from '../../src/ingest/events/detectors/context.js';

export interface SoakOptions {
  durationMs: number;
  /** Records per second offered by the emulator's push feed. */
  rate: number;
  workers: number;
  vehicles: number;
  /** Records per bulk delivery; default 200. */
  bulkSize?: number;
  /** Default 'mixed' (half the deliveries realtime, half bulk). */
  mode?: FeedMode;
  /** Share of records made invalid on purpose; their refusal is expected. Default 0. */
  invalidRatio?: number;
  /** Mean time between worker kills (SIGKILL, then a replacement); 0: no kills. */
  killEveryMs: number;
  seed: number;
  /** Between samples; default a minute, or the duration / 60 for runs shorter than an hour. */
  sampleEveryMs?: number;
  /** Between passes of the incremental reconciliation; default 2 s. */
  checkEveryMs?: number;
  /** Width of the windows of record time the reconciliation reads back (IncrementalChecker's bucketMs); default 30 s. */
  checkWindowMs?: number;
  /** After the feed: how long acknowledged records may take to show up in InfluxDB; default 2 min. */
  settleMs?: number;
  /** Settings for the service processes, over the harness's (e.g. WORKER_CONCURRENCY). */
  env?: Record<string, string>;
  /** Progress, one line per event and per sample. */
  log?: (line: string) => void;
  onSample?: (sample: SoakSample) => void;
}

export interface SoakCheck {
  name: string;
  /** null: not applicable in this run (said in `detail`). */
  ok: boolean | null;
  detail: string;
}

export interface SoakReport {
  options: {
    durationMs: number; rate: number; workers: number; vehicles: number; bulkSize: number; mode: FeedMode;
    invalidRatio: number; killEveryMs: number; seed: number; sampleEveryMs: number; checkWindowMs: number; env: Record<string, string>;
  };
  /** Redis as the run found it: `appendonly` and `appendfsync`. */
  redis: { appendonly: string; appendfsync: string };
  sent: number;
  acknowledged: number;
  rejected: number;
  rejectedInjected: number;
  failed: number;
  unconfirmed: number;
  acknowledgedInvalid: number;
  retries: number;
  failedDeliveries: number;
  injectedInvalid: number;
  feedErrors: FeedErrorCount[];
  workerKills: number;
  /** The receiver's telematics_records_accepted_total at the end. */
  accepted: number | null;
  /** telematics_points_written_total of the gps and can measurements, summed over the workers running at the end. */
  pointsWritten: number | null;
  /** What the workers derived (EVENTS=on), from telematics_vehicle_events_total and its late and duplicate counters; null if unread. */
  vehicleEvents: {
    events: number;
    trips: number;
    chargingSessions: number;
    ignitionsOn: number;
    stops: number;
    idling: number;
    overspeeds: number;
    movedWhileOff: number;
    geofencesEntered: number;
    batterySwaps: number;
    socLow: number;
    socDrains: number;
    fuelDrops: number;
    refuels: number;
    late: number;
    duplicate: number;
  } | null;
  /** The pack events read back from InfluxDB, judged against the emulator's truth (packs.ts); null if unread. */
  packs: PackReport | null;
  verified: number;
  missing: number;
  wrong: number;
  extra: number;
  /** The reconciliation's InfluxQL requests, the time they took, and the windows of record time it read. */
  checkerQueries: number;
  checkerQueryMs: number;
  checkerWindows: number;
  problems: string[];
  samples: number;
  figures: SoakFigures;
  /** The targets for the service, read from the figures (benchmark figures: they do not set the exit status). */
  targets: Array<{ name: string; met: boolean | null; detail: string }>;
  checks: SoakCheck[];
  /** The feed's run, from its first record to its last answer. */
  feedMs: number;
  durationMs: number;
  /** Every check passed: zero loss, and the counts agree. */
  ok: boolean;
}

interface Slot {
  label: string;
  proc: ServiceProcess | undefined;
  adminUrl: string | undefined;
}

/** Default sample interval: a minute, or duration / 60 (at least a second) for runs under an hour. */
export function defaultSampleEvery(durationMs: number): number {
  return Math.min(60_000, Math.max(1_000, Math.round(durationMs / 60)));
}

/**
 * Minutes to hours of load from the emulator's feed against the service as its production processes
 * (a receiver and worker processes, each with its admin listener), Redis with AOF `appendfsync
 * always`, optionally killing workers at random (SIGKILL) and starting replacements. It samples every
 * process's memory, Redis, the queue and the accepted rate, and reconciles every acknowledged record
 * against InfluxDB as it goes (its own memory is bounded by the rate times the check lag, not by the
 * run's length); at the end it checks that the counts agree and nothing was lost, and judges the pack
 * events the service wrote by the emulator's truth of its packs (packs.ts).
 */
export async function runSoak(opts: SoakOptions): Promise<{ report: SoakReport; samples: SoakSample[] }> {
  const log = opts.log ?? (() => {});
  const started = Date.now();
  const bulkSize = opts.bulkSize ?? 200;
  const mode = opts.mode ?? 'mixed';
  const invalidRatio = opts.invalidRatio ?? 0;
  const sampleEveryMs = opts.sampleEveryMs ?? defaultSampleEvery(opts.durationMs);
  const checkEveryMs = opts.checkEveryMs ?? 2_000;
  // The feed's vehicles drive from depots and past 50 km/h: their depots are geofences and SPEED_LIMIT is
  // 50, so the soak shows geofence and overspeed events beside the rest (unless --env sets otherwise).
  const depots = join(mkdtempSync(join(tmpdir(), 'soak-')), 'depots.geojson');
  // The feed's fleet (the same seed and size): its depots, and the truth of its packs.
  const fleet = Fleet.create({ seed: opts.seed, size: opts.vehicles });
  writeFileSync(depots, JSON.stringify(depotGeofences(fleet)));
  const heat = new HeatWatch(fleet);
  // The emulator's operations are the upstream the fuel sync reads: the fleet's last day of fuel history
  // (thefts, refuels) is judged at the first run.
  const upstream = await startEmulator({ fleet: Fleet.create({ seed: opts.seed, size: opts.vehicles }) });
  const env = { SPEED_LIMIT: '50', GEOFENCES_FILE: depots, UPSTREAM_URL: upstream.url, UPSTREAM_TOKEN: upstream.token, FUEL_SYNC_INTERVAL: '1m', ...opts.env };
  const stack = await startStack(env);
  const redis = new Redis(stack.redis.url, { maxRetriesPerRequest: 1, lazyConnect: false });
  redis.on('error', () => {});
  const background: Array<Promise<unknown>> = [];
  // Ends the kills, the samples and the reconciliation passes: when the feed is done, or failed.
  const done = new AbortController();
  try {
    const [, appendonly = '?'] = (await redis.config('GET', 'appendonly')) as string[];
    const [, appendfsync = '?'] = (await redis.config('GET', 'appendfsync')) as string[];

    const spawnInto = async (slot: Slot, role: 'receiver' | 'worker'): Promise<void> => {
      const port = await freePort();
      slot.proc = await stack.spawn(role, { ADMIN_PORT: String(port), ADMIN_HOST: '127.0.0.1' });
      slot.adminUrl = `http://127.0.0.1:${port}`;
    };
    const receiver: Slot = { label: 'receiver', proc: undefined, adminUrl: undefined };
    const workers: Slot[] = Array.from({ length: opts.workers }, (_, i) => ({ label: `worker-${i + 1}`, proc: undefined, adminUrl: undefined }));
    await Promise.all([spawnInto(receiver, 'receiver'), ...workers.map((w) => spawnInto(w, 'worker'))]);
    const receiverUrl = receiver.proc!.url;
    log(`stack up: receiver ${receiverUrl} (admin ${receiver.adminUrl}), ${opts.workers} worker process(es), redis ${stack.redis.url} (appendonly ${appendonly}, appendfsync ${appendfsync}), influx ${stack.influx.rawUrl}`);

    let kills = 0;
    let seed = opts.seed;
    const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const chaos = (async () => {
      if (!(opts.killEveryMs > 0)) return;
      while (!done.signal.aborted) {
        await sleep(opts.killEveryMs * (0.5 + rnd()), undefined, { signal: done.signal }).catch(() => {});
        if (done.signal.aborted) break;
        const live = workers.filter((w) => w.proc);
        const victim = live[Math.floor(rnd() * live.length)];
        if (!victim?.proc) continue;
        const proc = victim.proc;
        victim.proc = undefined;
        victim.adminUrl = undefined;
        await proc.stop('SIGKILL');
        // A killed process's captured output is no use any more: the stack forgets it.
        stack.procs.splice(stack.procs.indexOf(proc), 1);
        kills++;
        log(`killed ${victim.label} (SIGKILL); kills so far: ${kills}; starting its replacement`);
        // The replacement starts in the background, so kills keep their pace.
        background.push(spawnInto(victim, 'worker').catch((e: Error) => log(`replacement of ${victim.label} failed: ${e.message}`)));
      }
    })();

    const checker = new IncrementalChecker({ rawUrl: stack.influx.rawUrl, db: stack.db, startMs: Date.now(), ...(opts.checkWindowMs ? { bucketMs: opts.checkWindowMs } : {}) });
    const checking = (async () => {
      while (!done.signal.aborted) {
        await sleep(checkEveryMs, undefined, { signal: done.signal }).catch(() => {});
        if (done.signal.aborted) break;
        await checker.check().catch((e: Error) => log(`reconciliation pass failed (retried): ${e.message}`));
      }
    })();

    let acknowledged = 0;
    const feedStarted = Date.now();
    const samples: SoakSample[] = [];
    let last = { at: feedStarted, acknowledged: 0 };
    const takeSample = async (): Promise<SoakSample> => {
      const now = Date.now();
      const all = [receiver, ...workers];
      const scraped = await Promise.all(all.map(async (s) => (s.adminUrl ? scrape(s.adminUrl) : null)));
      const procs: Record<string, ProcessSample> = {};
      all.forEach((s, i) => (procs[s.label] = processSample(s.proc?.child.pid, scraped[i] ?? null)));
      const rx: readonly PromSample[] = scraped[0] ?? [];
      const used = await redis.info('memory').then((i) => infoField(i, 'used_memory')).catch(() => null);
      const mem = process.memoryUsage();
      const totals = checker.snapshot();
      const sample: SoakSample = {
        at: new Date(now).toISOString(),
        elapsedS: (now - feedStarted) / 1000,
        acknowledged,
        // The first sample has no interval behind it.
        ratePerS: samples.length > 0 && now > last.at ? ((acknowledged - last.acknowledged) * 1000) / (now - last.at) : 0,
        accepted: metricSum(rx, 'telematics_records_accepted_total'),
        queueWaiting: metricSum(rx, 'telematics_queue_jobs', { state: 'waiting' }),
        queueActive: metricSum(rx, 'telematics_queue_jobs', { state: 'active' }),
        queueDelayed: metricSum(rx, 'telematics_queue_jobs', { state: 'delayed' }),
        redisUsedMiB: used === null ? null : used / MiB,
        soak: { rssMiB: mem.rss / MiB, heapUsedMiB: mem.heapUsed / MiB },
        checkerPending: totals.pending,
        verified: totals.verified,
        procs,
      };
      last = { at: now, acknowledged };
      samples.push(sample);
      log(progressLine(sample));
      opts.onSample?.(sample);
      return sample;
    };
    const sampling = (async () => {
      await takeSample().catch((e: Error) => log(`sample failed: ${e.message}`));
      // Samples fall on multiples of the interval from the feed's start, whatever a sample took.
      for (let k = 1; !done.signal.aborted; k++) {
        await sleep(Math.max(0, feedStarted + k * sampleEveryMs - Date.now()), undefined, { signal: done.signal }).catch(() => {});
        if (done.signal.aborted) break;
        await takeSample().catch((e: Error) => log(`sample failed: ${e.message}`));
      }
    })();

    const feed = await runFeed({
      url: receiverUrl, token: TOKEN, mode, realtimeRatio: 0.5, bulkSize, invalidRatio,
      rate: opts.rate, durationMs: opts.durationMs, concurrency: 8, vehicles: opts.vehicles,
      seed: opts.seed, maxAttempts: 30, backoffMs: 200, maxBackoffMs: 2_000,
      // The records go to the checker, which drops them once found in InfluxDB; the result only counts.
      onAck: (records) => {
        acknowledged += records.length;
        checker.add(records);
        heat.add(records);
      },
    });
    const feedMs = Date.now() - feedStarted;
    done.abort();
    // The last sample at once (a reconciliation pass may still be reading).
    await sampling;
    await takeSample();
    await Promise.all([chaos, checking]);
    await Promise.all(background);
    log(`feed done: ${feed.sent} sent, ${feed.acknowledged} acknowledged, ${feed.retries} retries, ${feed.failed} failed; ${checker.snapshot().pending} records still to find in InfluxDB`);

    const totals: CheckerTotals = await checker.settle(opts.settleMs ?? 120_000);
    log(`reconciled: ${totals.verified} verified, ${totals.missing} missing, ${totals.wrong} wrong, ${totals.extra} extra (${totals.windows} windows read back, ${totals.queries} queries, ${(totals.queryMs / 1000).toFixed(1)} s in all)`);

    // The counters, once the workers have written everything (a counter moves just after InfluxDB answers).
    const counters = async () => {
      const rx = receiver.adminUrl ? await scrape(receiver.adminUrl) : null;
      const ws = await Promise.all(workers.map((w) => (w.adminUrl ? scrape(w.adminUrl) : null)));
      const accepted = rx ? metricSum(rx, 'telematics_records_accepted_total') : null;
      const written = ws.every((w) => w !== null)
        ? ws.reduce((n, w) => n + (metricSum(w, 'telematics_points_written_total', { measurement: 'gps' }) ?? 0) + (metricSum(w, 'telematics_points_written_total', { measurement: 'can' }) ?? 0), 0)
        : null;
      const sum = (name: string, match: Record<string, string> = {}) => ws.reduce((n, w) => n + (metricSum(w!, name, match) ?? 0), 0);
      const vehicleEvents = ws.every((w) => w !== null)
        ? {
            events: sum('telematics_vehicle_events_total'),
            trips: sum('telematics_vehicle_events_total', { event: 'trip' }),
            chargingSessions: sum('telematics_vehicle_events_total', { event: 'charging_session' }),
            ignitionsOn: sum('telematics_vehicle_events_total', { event: 'ignition_on' }),
            stops: sum('telematics_vehicle_events_total', { event: 'stop' }),
            idling: sum('telematics_vehicle_events_total', { event: 'idle_ended' }),
            overspeeds: sum('telematics_vehicle_events_total', { event: 'overspeed_ended' }),
            movedWhileOff: sum('telematics_vehicle_events_total', { event: 'moved_while_off' }),
            geofencesEntered: sum('telematics_vehicle_events_total', { event: 'geofence_entered' }),
            batterySwaps: sum('telematics_vehicle_events_total', { event: 'battery_swapped' }),
            socLow: sum('telematics_vehicle_events_total', { event: 'soc_low' }),
            socDrains: sum('telematics_vehicle_events_total', { event: 'soc_drain_while_parked' }),
            fuelDrops: sum('telematics_vehicle_events_total', { event: 'fuel_drop' }),
            refuels: sum('telematics_vehicle_events_total', { event: 'fuel_refuel' }),
            late: sum('telematics_vehicle_events_late_total'),
            duplicate: sum('telematics_vehicle_events_duplicate_total'),
          }
        : null;
      return { accepted, written, vehicleEvents };
    };
    let c = await counters();
    for (const deadline = Date.now() + 15_000; kills === 0 && c.accepted !== null && c.written !== c.accepted && Date.now() < deadline; ) {
      await sleep(250);
      c = await counters();
    }

    // The pack events: the last records' are derived once their streams fell quiet and written by the outbox.
    const derive = deriveOptions(loadConfig(stack.env));
    const packs = await settledPackEvidence(stack.influx.rawUrl, stack.db, feedStarted + feedMs + derive.streamQuietMs * 1.25 + 5_000)
      .then((evidence) => judgePacks(fleet, heat, evidence, feedStarted, derive))
      .catch((e: Error) => {
        log(`pack events unread: ${e.message}`);
        return null;
      });
    const packVerdict = packs ? packVerdicts(packs) : null;

    const durationMin = (samples[samples.length - 1]?.elapsedS ?? feedMs / 1000) / 60;
    const figs = figures(samples, durationMin);
    const checks: SoakCheck[] = [
      {
        name: 'the feed: every delivery answered',
        ok: feed.failedDeliveries === 0 && feed.unconfirmed === 0,
        detail: `${feed.failedDeliveries} failed deliveries (${feed.failed} records), ${feed.unconfirmed} records unconfirmed; ${feed.retries} retries`,
      },
      {
        name: 'the feed: only injected invalid records refused',
        ok: feed.rejected === feed.rejectedInjected && feed.acknowledgedInvalid === 0,
        detail: `${feed.rejected} refused, ${feed.rejectedInjected} of them injected (${feed.injectedInvalid} injected); ${feed.acknowledgedInvalid} injected ones acknowledged`,
      },
      {
        name: 'accepted = acknowledged',
        ok: c.accepted !== null && Math.round(c.accepted) === feed.acknowledged,
        detail: `receiver telematics_records_accepted_total ${c.accepted ?? 'unread'}, feed acknowledged ${feed.acknowledged}`,
      },
      kills === 0
        ? {
            name: 'points written = accepted',
            ok: c.written !== null && c.accepted !== null && Math.round(c.written) === Math.round(c.accepted),
            detail: `workers' telematics_points_written_total (gps, can) ${c.written ?? 'unread'}, accepted ${c.accepted ?? 'unread'}`,
          }
        : {
            name: 'points written = accepted',
            ok: null,
            detail: `not comparable: ${kills} worker(s) killed, their counters went with them (written by the workers running at the end: ${c.written ?? 'unread'})`,
          },
      {
        name: 'every acknowledged record in InfluxDB once, with its values',
        ok: totals.missing === 0 && totals.wrong === 0 && totals.extra === 0 && totals.verified === feed.acknowledged,
        detail: `${totals.verified} of ${feed.acknowledged} verified; missing ${totals.missing}, wrong ${totals.wrong}, extra ${totals.extra}`,
      },
      ...(packVerdict?.checks ?? [{ name: 'pack events never for a pack without their trouble (the emulator\'s truth)', ok: false, detail: 'the pack events could not be read from InfluxDB' }]),
    ];
    const report: SoakReport = {
      options: {
        durationMs: opts.durationMs, rate: opts.rate, workers: opts.workers, vehicles: opts.vehicles, bulkSize, mode, invalidRatio,
        killEveryMs: opts.killEveryMs, seed: opts.seed, sampleEveryMs, checkWindowMs: opts.checkWindowMs ?? 30_000, env,
      },
      redis: { appendonly, appendfsync },
      sent: feed.sent,
      acknowledged: feed.acknowledged,
      rejected: feed.rejected,
      rejectedInjected: feed.rejectedInjected,
      failed: feed.failed,
      unconfirmed: feed.unconfirmed,
      acknowledgedInvalid: feed.acknowledgedInvalid,
      retries: feed.retries,
      failedDeliveries: feed.failedDeliveries,
      injectedInvalid: feed.injectedInvalid,
      feedErrors: feed.errors,
      workerKills: kills,
      accepted: c.accepted,
      pointsWritten: c.written,
      vehicleEvents: c.vehicleEvents,
      packs,
      verified: totals.verified,
      missing: totals.missing,
      wrong: totals.wrong,
      extra: totals.extra,
      checkerQueries: totals.queries,
      checkerQueryMs: totals.queryMs,
      checkerWindows: totals.windows,
      problems: totals.problems,
      samples: samples.length,
      figures: figs,
      targets: [...targets(figs, [receiver, ...workers].map((s) => s.label)), ...(packVerdict ? [packVerdict.target] : [])],
      checks,
      feedMs,
      durationMs: Date.now() - started,
      ok: checks.every((ch) => ch.ok !== false),
    };
    if (!report.ok) log(`first problems: ${totals.problems.slice(0, 5).join('; ') || '(none listed)'}`);
    return { report, samples };
  } finally {
    done.abort();
    await Promise.allSettled(background);
    redis.disconnect();
    await stack.stop();
    await upstream.close();
  }
}

/** The targets for the service (#23): RSS ≤ 256 MiB, no heap trend beyond 15 %. */
function targets(f: SoakFigures, labels: readonly string[]): SoakReport['targets'] {
  const out: SoakReport['targets'] = [];
  for (const l of labels) {
    const rss = f.maxRssMiB[l] ?? null;
    out.push({ name: `${l}: RSS ≤ 256 MiB throughout`, met: rss === null ? null : rss <= 256, detail: `max ${rss ?? '?'} MiB` });
  }
  for (const l of labels) {
    const t = f.heapTrend[l] ?? null;
    out.push({
      name: `${l}: no heap trend (late window's mean within 15 % of the early one's)`,
      met: t === null ? null : Math.abs(t.changePct) <= 15,
      detail: t === null ? 'no samples in both windows' : `${t.earlyMeanMiB} → ${t.lateMeanMiB} MiB (${t.changePct > 0 ? '+' : ''}${t.changePct} %; ${f.trendWindows.note})`,
    });
  }
  return out;
}

const mib = (v: number | null | undefined): string => (v === null || v === undefined ? '–' : `${Math.round(v)}`);

function progressLine(s: SoakSample): string {
  const t = `${Math.floor(s.elapsedS / 60)}m${String(Math.round(s.elapsedS % 60)).padStart(2, '0')}s`;
  const procs = Object.entries(s.procs).map(([l, p]) => `${l} ${mib(p.rssMiB)}/${mib(p.heapUsedMiB)}`).join(', ');
  return (
    `sample ${t}: ${s.acknowledged} acknowledged (${Math.round(s.ratePerS)}/s), accepted ${s.accepted ?? '–'}, ` +
    `queue ${s.queueWaiting ?? '–'} waiting ${s.queueActive ?? '–'} active, redis ${s.redisUsedMiB === null ? '–' : s.redisUsedMiB.toFixed(2)} MiB; ` +
    `RSS/heap MiB: ${procs}, feed ${mib(s.soak.rssMiB)}/${mib(s.soak.heapUsedMiB)}; checker holds ${s.checkerPending}, verified ${s.verified}`
  );
}

/**
 * The pack events of the run once they have settled: read at `notBefore` (wall time), then again every few
 * seconds until two reads agree (at most a minute more).
 */
async function settledPackEvidence(rawUrl: string, db: string, notBefore: number): Promise<PackEvidence> {
  await sleep(Math.max(0, notBefore - Date.now()));
  let last = await readPackEvidence(rawUrl, db);
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    await sleep(3_000);
    const next = await readPackEvidence(rawUrl, db);
    const same = next.events.length === last.events.length && next.packLifeRows === last.packLifeRows && next.charging.length === last.charging.length;
    last = next;
    if (same) break;
  }
  return last;
}

/** What the service wrote of the packs: their events (standing ones: a correction's retraction is -1), `pack_life` rows, the charging sessions that told their pack. */
async function readPackEvidence(rawUrl: string, db: string): Promise<PackEvidence> {
  const kinds = [...PACK_EVENTS, PACK_SWAP_EVENT];
  const rows = await influxQL<{ time: number; event: string; vehicleno: string; value: number; from_temperature?: number | null }>(
    rawUrl, db, `SELECT "value", "from_temperature", "event", "vehicleno" FROM "vehicle_events" WHERE "event" =~ /^(${kinds.join('|')})$/ AND "value" >= 0`,
  );
  const events: PackEvent[] = rows.map((r) => ({ event: r.event, vehicleno: r.vehicleno, time: r.time, ...(typeof r.from_temperature === 'number' ? { fromTemperature: r.from_temperature } : {}) }));
  const [life] = await influxQL<{ count: number }>(rawUrl, db, `SELECT count("duration_s") FROM "pack_life" WHERE "duration_s" >= 0`);
  const charging = await influxQL<{ vehicleno: string; pack: string | null; capacity_ah_estimate: number | null; soc_end: number | null }>(
    rawUrl, db, `SELECT "capacity_ah_estimate", "soc_end", "pack", "vehicleno" FROM "charging" WHERE "duration_s" >= 0`,
  );
  return {
    events,
    packLifeRows: life?.count ?? 0,
    charging: charging.flatMap((c) =>
      typeof c.pack === 'string' && c.pack !== ''
        ? [{ vehicleno: c.vehicleno, pack: c.pack, ...(typeof c.capacity_ah_estimate === 'number' ? { capacityAhEstimate: c.capacity_ah_estimate } : {}), ...(typeof c.soc_end === 'number' ? { socEnd: c.soc_end } : {}) }]
        : [],
    ),
  };
}
