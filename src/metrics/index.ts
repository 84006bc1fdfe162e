import { readFileSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's metrics, one registry a process (receiver, worker or both), served in Prometheus'
 * text format on the admin listener. Names follow Prometheus' conventions: one prefix, base units,
 * `_total` counters. No vehicle and no token is ever a label; a sender's configured name is.
 */
export const PREFIX = 'telematics_';

/** Seconds buckets from 1 ms to a minute: pushes, enqueues and writes are milliseconds, backlogs seconds. */
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Seconds buckets of lateness, from live (a second) through a buffer uploaded after a tunnel (minutes,
 * hours) to one after a dead modem (days), up to TIME_MAX_AGE's default of 90 days.
 */
const LATENESS = [1, 5, 15, 30, 60, 300, 900, 3_600, 21_600, 86_400, 259_200, 604_800, 2_592_000, 7_776_000];

export class Metrics {
  readonly registry = new Registry();

  // The receiver.
  readonly pushes = this.counter('pushes_total', 'Pushes answered, by route, status and sender', ['route', 'status', 'sender']);
  readonly pushDuration = this.histogram('push_duration_seconds', 'Time from a push arriving to its answer', ['route']);
  readonly receivedBytes = this.counter('received_bytes_total', 'Bytes of push bodies read (after decompression)', []);
  readonly recordsReceived = this.counter('records_received_total', 'Records in pushes that parsed', []);
  readonly recordsAccepted = this.counter('records_accepted_total', 'Records queued, by type', ['type']);
  readonly quarantineRefusedPushes = this.counter('quarantine_refused_pushes_total', 'Pushes refused whole (429 quarantine_share_full) because their refused records would not fit in their sender\'s share of the quarantine', ['sender']);
  readonly vehiclesRefused = this.counter('vehicles_refused_total', 'Records of new vehicles refused at the edge: MAX_VEHICLES reached and the vehicle neither known nor listed by the upstream', ['sender']);
  readonly maxVehicles = this.gauge('fleet_max_vehicles', 'MAX_VEHICLES: the vehicles the service keeps state for (0: no bound)', []);
  readonly vehiclesExpired = this.counter('fleet_vehicles_expired_total', 'Vehicles whose state was removed, not heard from for VEHICLE_EXPIRY', []);
  readonly recordsRejected = this.counter('records_rejected_total', 'Records refused by validation, by the rule they broke', ['reason']);
  readonly enqueueDuration = this.histogram('enqueue_duration_seconds', 'Redis round trip of an enqueue (one group commit)', []);
  readonly jobsEnqueued = this.counter('jobs_enqueued_total', 'Jobs queued, by payload: text, or deflated (JOB_DEFLATE: while a backlog builds)', ['payload']);
  readonly implausible = this.counter('implausible_total', 'Refusals of what cannot be true, by plausibility rule and scope (a record, or a field of an accepted one)', ['rule', 'scope']);
  readonly lateness = this.histogram('record_lateness_seconds', 'Receive time minus record time of accepted records (CAN records stamped on receipt excluded)', ['type'], LATENESS);
  readonly jobFormat = this.gauge('job_format', 'The job format a receiver writes (1 on its one series): payload version, and the field dictionary size its names are numbered below; the newest every live worker reads', ['payload', 'dictionary']);
  readonly queueReaders = this.gauge('queue_readers', 'Worker processes announcing the job formats they read, by what they read (payload versions, dictionary size), as a receiver last read them', ['payloads', 'dictionary']);

  // The worker.
  readonly pointsWritten = this.counter('points_written_total', 'Points InfluxDB accepted, by measurement', ['measurement']);
  readonly pointsRefused = this.counter('points_refused_total', 'Points InfluxDB refused for good (quarantined)', []);
  readonly writeRequests = this.counter('write_requests_total', 'Write requests to InfluxDB, by outcome and status class', ['outcome', 'status_class']);
  readonly writtenBatchJobs = this.histogram('written_batch_jobs', 'Jobs whose vehicles\' state (last seen, vehicle events) was updated together, once their points were written (WORKER_LINGER)', [], [1, 2, 4, 8, 16, 32, 64, 128]);
  readonly writeDuration = this.histogram('write_duration_seconds', 'Duration of one InfluxDB write request', []);
  readonly jobRetries = this.counter('job_retries_total', 'Jobs that failed an attempt and will be retried', []);
  readonly jobsFailed = this.counter('jobs_failed_total', 'Jobs that failed for good (dead letters)', []);
  readonly jobsDeferred = this.counter('jobs_deferred_total', 'Jobs this worker left for another without spending an attempt, because a newer release wrote them: by reason, format (payload version) or dictionary', ['reason']);
  readonly receiveToWritten = this.histogram('receive_to_written_seconds', 'From a push’s enqueue (its 202) to InfluxDB confirming its points', [], [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
  ]);

  // Sampled from Redis by any process that has one (see sampler.ts).
  readonly queueJobs = this.gauge('queue_jobs', 'Jobs in the push queue, by state', ['state']);
  readonly oldestWaitingAge = this.gauge('queue_oldest_waiting_age_seconds', 'Age of the oldest job waiting for a worker (the lag to scale on)', []);
  readonly quarantineEntries = this.gauge('quarantine_entries', 'Entries in the quarantine stream', []);
  readonly quarantineBytes = this.gauge('quarantine_bytes', 'Bytes the quarantine holds, by sender (`(service)`: points the store refused, of records already acknowledged)', ['sender']);
  readonly quarantineShare = this.gauge('quarantine_share_bytes', 'A sender\'s share of QUARANTINE_MAX_BYTES: a push whose refused records would not fit in it is refused whole (429 quarantine_share_full)', []);
  readonly sampleErrors = this.counter('redis_sample_errors_total', 'Samples of the queue gauges that failed', []);
  readonly fleetVehicles = this.gauge('fleet_vehicles', 'Vehicles known: seen at least once (sampled from Redis)', []);
  readonly connectionsShed = this.counter(
    'http_connections_shed_total',
    'Connections closed at HTTP_MAX_CONNECTIONS to make room: no_request (no complete request head yet, answered 408), idle (keep-alive between requests), refused (the new one, every other busy)',
    ['reason'],
  );
  readonly fleetSilent = this.gauge('fleet_silent_vehicles', 'Vehicles not seen for longer than a SILENT_AFTER threshold, by threshold', ['after']);

  // The upstream (the telematics service's request API) and the fuel sync (src/ingest/sync).
  readonly upstreamThrottled = this.counter('upstream_throttled_total', 'Calls the upstream answered 429 Too Many Requests, by operation: the pacing (UPSTREAM_MAX_CALLS_PER_SECOND, UPSTREAM_MIN_CALL_GAP) or the fuel sync\'s plan (UPSTREAM_HISTORY_CALLS_PER_DAY) did not keep its limits', ['operation']);
  // Labelled, so that it is absent, not 0, when the expiry is unknown (prom-client shows a labelless gauge as 0 from the start).
  readonly upstreamTokenExpiry = this.gauge('upstream_token_expiry_timestamp_seconds', 'When the upstream token expires (epoch seconds), read from the token: source jwt_exp (a JWT\'s exp); absent when the token carries no expiry', ['source']);
  readonly fuelSyncBehind = this.gauge('fuel_sync_behind_seconds', 'After a fuel sync run: how long past due the longest-waiting vehicle it did not reach is (0: every due vehicle was reached)', []);
  readonly fuelSyncVehicles = this.gauge('fuel_sync_vehicles', 'After a fuel sync run, vehicles by state: due (by the budget\'s spacing, within today\'s budget), synced, not_reached (left to the next run), out_of_budget (today\'s history calls spent)', ['state']);

  // Vehicle events (src/ingest/events).
  readonly vehicleEvents = this.counter('vehicle_events_total', 'Vehicle events derived, by event (alarm raised/cleared per flag, ignition, charging, trips, silent/back); counted once, when committed', ['event']);
  readonly vehicleEventsLate = this.counter('vehicle_events_late_total', 'Records later than EVENTS_WINDOW behind their stream\'s newest: what they change is corrected (events/corrections/)', []);
  readonly vehicleEventsTooLate = this.counter('vehicle_events_too_late_total', 'Records (and corrections) later than EVENTS_HORIZON or before the vehicle\'s first checkpoint: stored, changing no output', []);
  readonly vehicleEventsCorrections = this.counter('vehicle_events_corrections_total', 'Corrections run, by outcome: corrected, none (nothing was due), postponed (InfluxDB did not show every record yet, or the vehicle kept changing), tooLate', ['outcome']);
  readonly vehicleEventsCorrected = this.counter('vehicle_events_corrected_total', 'Outputs corrections told, by change: added (first told by a correction, marked late), corrected (a revision under the same id), retracted', ['change']);
  readonly vehicleEventsDuplicate = this.counter('vehicle_events_duplicate_total', 'Records derivation had already seen (a redelivery or a retried job): they derive nothing', []);
  readonly vehicleEventsOutbox = this.gauge('vehicle_events_outbox', 'Derived events, trips, charging sessions and stops not yet delivered to InfluxDB and the webhook (the outbox streams\' length)', []);
  // The command ledger (commands/).
  readonly commands = this.counter('commands_total', 'Immobilise and mobilise commands, each state they reached, by type and outcome (requested, waiting, sending, sent, confirmed, not_confirmed, failed, expired, cancelled)', ['type', 'outcome']);
  // Vehicle events' webhook (events/webhook.ts).
  readonly webhookDeliveries = this.counter('events_webhook_deliveries_total', 'Event webhook delivery attempts, by outcome: delivered (2xx), retry (will be tried again), failed (retry span over; kept as a failed job)', ['outcome']);
  readonly webhookBacklog = this.gauge('events_webhook_backlog', 'Event webhook deliveries not yet made: waiting and delayed (retrying) jobs (sampled from Redis)', []);
  readonly webhookDropped = this.counter('events_webhook_dropped_total', 'Events not queued for the webhook because EVENTS_WEBHOOK_MAX_BACKLOG deliveries were pending (their points are in InfluxDB)', []);

  constructor(info: { version: string; mode: string }) {
    collectDefaultMetrics({ register: this.registry });
    this.gauge('build_info', 'The running build: version, Node.js and mode', ['version', 'node', 'mode']).set({ version: info.version, node: process.version, mode: info.mode }, 1);
  }

  /** The text a scrape gets. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> {
    return new Gauge({ name: PREFIX + name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets = SECONDS): Histogram<L> {
    return new Histogram({ name: PREFIX + name, help, labelNames, buckets, registers: [this.registry] });
  }
}

/** The package's version, for build_info (package.json sits two levels above this file in src/ and in dist/). */
export function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
