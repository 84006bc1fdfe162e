import type { NewQuarantineEntry } from '../queue/quarantine.js';
import { hostname } from 'node:os';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import type { RedisClient } from '../../redis/connect.js';
import type { FieldPick, WrittenRecord } from '../../telemetry/record.js';
import type { RedisKeys } from '../queue/keys.js';
import type { PointSink } from '../write/sink.js';
import { DEFAULT_DERIVE_OPTIONS, DERIVE_PICK, type Derived, type DeriveOptions, type DerivedEvent } from './derive.js';
import { deriveOptions, emptyDerived } from './detectors/context.js';
import { webhookPayloadOf, pointOf, startDispatch, type OutboxEntry } from './outbox.js';
import { Lines } from '../write/lines.js';
import { EventsStore, type CorrectionOutcome } from './store/eventsStore.js';
import { InfluxRecordSource } from './corrections/records.js';
import { influxTargetOf } from '../read/influxql.js';
import { GeofenceRegistry, GeofenceWatch, parseGeofencesFile } from '../geofences/registry.js';
import { SpeedLimitRegistry, SpeedLimitWatch } from '../speedLimits/registry.js';
import { sampleWebhookBacklog, startWebhookDelivery, WebhookQueue, webhookRetryPolicy, type RunningDelivery, type WebhookPayload } from './webhook.js';

/**
 * The vehicle events of a worker process (EVENTS=on): derivation after each job's points are written
 * (`record`), the sweep that commits what vehicles that stopped sending still hold pending, the
 * dispatch of the outbox to InfluxDB and the webhook, and the webhook's deliveries.
 */
export interface RunningEvents {
  /** The fields derivation reads: a worker hands their values in each written record. */
  pick: FieldPick;
  record(partition: number, writtenRecords: readonly WrittenRecord[]): Promise<void>;
  /**
   * Events derived beside the streams, by scheduled runs that remember their own progress (the fleet
   * status job's silent / back, the fuel sync's drops and refuels): straight to InfluxDB and the webhook.
   */
  publish(events: readonly DerivedEvent[]): Promise<void>;
  /** Queues webhook deliveries on the events' queue (signed alike); undefined without EVENTS_WEBHOOK_URL. */
  webhook: ((out: WebhookPayload[]) => Promise<number>) | undefined;
  /** A vehicle's records from `from` on are judged again (a correction, due after EVENTS_CORRECTION_DELAY): what the derivation read besides them changed there. */
  requestCorrection(vehicleno: string, from: number): Promise<void>;
  close(): Promise<void>;
}

export interface EventsHooks {
  /** Called with every event, trip, charging session and stop once delivered (the command ledger's automation), before it is acknowledged. */
  observe?: (entries: OutboxEntry[]) => Promise<void>;
  /** The command ledger's immobilisations (a worker's watch of them), for `moved_while_immobilised`. */
  immobilisations?: DeriveOptions['immobilisations'];
}

export { deriveOptions };

/** What a commit derived, counted once (a retried job derives nothing new); records past the horizon reported in the log. */
function counted(metrics: Metrics | undefined, all: readonly Derived[], log?: Logger): void {
  for (const d of all) {
    if (d.tooLate > 0) {
      log?.warn({ tooLate: d.tooLate, first: d.tooLateFirst }, 'vehicle events: records past EVENTS_HORIZON (or before the vehicle’s first checkpoint): stored in InfluxDB, changing no event');
      metrics?.vehicleEventsTooLate.inc(d.tooLate);
    }
    if (!metrics) continue;
    for (const e of d.events) metrics.vehicleEvents.inc({ event: e.event });
    if (d.trips.length > 0) metrics.vehicleEvents.inc({ event: 'trip' }, d.trips.length);
    if (d.chargingSessions.length > 0) metrics.vehicleEvents.inc({ event: 'charging_session' }, d.chargingSessions.length);
    if (d.stops.length > 0) metrics.vehicleEvents.inc({ event: 'stop' }, d.stops.length);
    if (d.packLife.length > 0) metrics.vehicleEvents.inc({ event: 'pack_life' }, d.packLife.length);
    if (d.late > 0) metrics.vehicleEventsLate.inc(d.late);
    if (d.duplicates > 0) metrics.vehicleEventsDuplicate.inc(d.duplicates);
  }
}

/** A correction, counted by outcome and by what it emitted; reported in the log. */
function correctionTold(metrics: Metrics | undefined, log: Logger, c: CorrectionOutcome): void {
  metrics?.vehicleEventsCorrections.inc({ outcome: c.outcome });
  if (c.outcome === 'corrected') {
    if (c.added > 0) metrics?.vehicleEventsCorrected.inc({ change: 'added' }, c.added);
    if (c.corrected > 0) metrics?.vehicleEventsCorrected.inc({ change: 'corrected' }, c.corrected);
    if (c.retracted > 0) metrics?.vehicleEventsCorrected.inc({ change: 'retracted' }, c.retracted);
    log.info(c, 'vehicle events: corrected from a late record');
  } else if (c.outcome === 'tooLate') {
    metrics?.vehicleEventsTooLate.inc();
    log.warn(c, 'vehicle events: a correction is due from before the vehicle’s oldest checkpoint (past EVENTS_HORIZON): nothing was corrected');
  } else if (c.outcome === 'postponed') log.debug(c, 'vehicle events: correction postponed');
}

export function startEvents(
  cfg: Config,
  redis: RedisClient,
  keys: RedisKeys,
  /** Partitions this process serves (their indices). */
  served: readonly number[],
  sink: PointSink,
  log: Logger,
  metrics?: Metrics,
  /** Where derived points the store refuses are kept (the quarantine). */
  quarantine?: (entries: NewQuarantineEntry[]) => Promise<void>,
  hooks: EventsHooks = {},
): RunningEvents {
  const partitions = keys.partitions.map((_, i) => ({
    state: keys.vehicleState(i),
    outbox: keys.eventsOutbox(i),
    pending: keys.vehiclesPending(i),
    corrections: keys.eventsCorrections(i),
    records: (vehicleno: string, streamId: number) => keys.vehicleRecords(i, vehicleno, streamId),
    late: (vehicleno: string) => keys.vehicleCorrections(i, vehicleno),
  }));
  // The geofences: GEOFENCES_FILE's added (a file that does not parse stops the start here), then watched.
  const registry = new GeofenceRegistry(redis, keys.geofences);
  const fromFile = cfg.GEOFENCES_FILE ? parseGeofencesFile(cfg.GEOFENCES_FILE) : undefined;
  const geofences = new GeofenceWatch(registry, log);
  void (async () => {
    try {
      if (fromFile) {
        // The file's geofences are the fleet's standing ones: new names hold for every record time, changes from now.
        const change = await registry.add(fromFile, Date.now(), 0);
        log.info({ file: cfg.GEOFENCES_FILE, added: change.added.length, replaced: change.ended.length, unchanged: change.unchanged.length }, 'geofences: GEOFENCES_FILE added to the registry');
      }
    } finally {
      // Whatever the file's fate (over the live caps, Redis away): the workers judge by what the registry holds.
      geofences.start();
    }
  })().catch((err: Error) => log.error({ err: err.message }, 'geofences: adding GEOFENCES_FILE failed; the registry holds what it held'));
  const speedLimits = new SpeedLimitWatch(new SpeedLimitRegistry(redis, keys.speedLimits), log);
  speedLimits.start();
  const opts = { ...deriveOptions(cfg), geofences, speedLimits, ...(hooks.immobilisations ? { immobilisations: hooks.immobilisations } : {}) };
  const store = new EventsStore(redis, partitions, opts, {
    onCommit: (d) => counted(metrics, d, log),
    onCorrection: (c) => correctionTold(metrics, log, c),
    correctionDelayMs: cfg.EVENTS_CORRECTION_DELAY,
    source: new InfluxRecordSource(influxTargetOf(cfg)),
  });
  const ready = () => redis.status === 'ready';

  let outbox: WebhookQueue | undefined;
  let delivery: RunningDelivery | undefined;
  let backlog: Sampler | undefined;
  if (cfg.EVENTS_WEBHOOK_URL && cfg.EVENTS_WEBHOOK_SECRET) {
    const common = { queue: keys.eventsWebhookQueue, retry: webhookRetryPolicy(cfg), metrics, log, skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK };
    outbox = new WebhookQueue(redis, { ...common, maxBacklog: cfg.EVENTS_WEBHOOK_MAX_BACKLOG });
    delivery = startWebhookDelivery(redis, { ...common, url: cfg.EVENTS_WEBHOOK_URL, secret: cfg.EVENTS_WEBHOOK_SECRET, timeoutMs: cfg.EVENTS_WEBHOOK_TIMEOUT });
    if (metrics) backlog = sampleWebhookBacklog(metrics, outbox, cfg.METRICS_SAMPLE_INTERVAL, ready);
  }
  const webhook = outbox ? (out: Parameters<WebhookQueue['add']>[0]) => outbox!.add(out) : undefined;
  const dispatch = startDispatch({
    redis,
    outboxes: served.map((i) => partitions[i]!.outbox),
    sink,
    ...(webhook ? { webhook } : {}),
    ...(quarantine ? { quarantine } : {}),
    ...(hooks.observe ? { observe: hooks.observe } : {}),
    consumer: `${hostname()}:${process.pid}`,
    log,
    metrics,
  });
  // Corrections, as they come due.
  const corrections = sampleEvery(
    1_000,
    async () => {
      for (const i of served) while ((await store.correctDue(i)) > 0);
    },
    { ready, onError: (err) => log.warn({ err: (err as Error).message }, 'vehicle events: a correction failed; retried') },
  );
  // The window in wall time: a vehicle that stopped sending has its pending records committed.
  const sweep = sampleEvery(
    Math.max(1_000, Math.round(opts.streamQuietMs / 4)),
    async () => {
      for (const i of served) await store.sweep(i);
    },
    { ready, onError: (err) => log.warn({ err: (err as Error).message }, 'vehicle events: the sweep failed; retried') },
  );
  const outboxGauge = metrics
    ? sampleEvery(
        cfg.METRICS_SAMPLE_INTERVAL,
        async () => {
          let n = 0;
          for (const i of served) n += await redis.xlen(partitions[i]!.outbox);
          metrics.vehicleEventsOutbox.set(n);
        },
        { ready, onError: () => metrics.sampleErrors.inc() },
      )
    : undefined;

  return {
    pick: DERIVE_PICK,
    record: (partition, writtenRecords) => store.record(partition, writtenRecords),
    async publish(events) {
      if (events.length === 0) return;
      const entries: OutboxEntry[] = events.map((e) => ({ kind: 'event', ...e }));
      await sink.write(Lines.of(entries.map(pointOf)));
      await webhook?.(entries.map(webhookPayloadOf));
      await hooks.observe?.(entries);
      counted(metrics, [{ ...emptyDerived(), events }]);
    },
    webhook,
    requestCorrection: (vehicleno, from) => store.requestCorrection(vehicleno, from),
    async close() {
      geofences.stop();
      speedLimits.stop();
      sweep.stop();
      corrections.stop();
      outboxGauge?.stop();
      backlog?.stop();
      await dispatch.stop();
      await delivery?.close();
      await outbox?.close();
    },
  };
}
