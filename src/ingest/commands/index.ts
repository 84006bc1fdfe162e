import { hostname } from 'node:os';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import { sampleEvery } from '../../metrics/sampler.js';
import type { RedisClient } from '../../redis/connect.js';
import { serviceUpstreamClient } from '../sync/upstream.js';
import type { PointSink } from '../write/sink.js';
import type { OutboxEntry } from '../events/outbox.js';
import type { WebhookPayload } from '../events/webhook.js';
import { keysOf } from '../queue/keys.js';
import { automation, readAutomationFile } from './automation.js';
import { ImmobilisationWatch } from './immobilisations.js';
import { CommandLedger } from './ledger.js';
import { COMMANDS_PICK, LatestValuesStore } from './latest.js';
import { sweepCommands, type CommandSender, type SweepOptions } from './sweep.js';
import { tellChanges } from './tell.js';

export { COMMANDS_PICK } from './latest.js';

/** The ledger of the configuration's Redis. */
export function commandLedgerFor(cfg: Config, redis: RedisClient): CommandLedger {
  return new CommandLedger(redis, keysOf(cfg).commands, cfg.COMMANDS_KEEP);
}

/** Each vehicle's latest values, beside the fleet state of each partition. */
export function latestValuesFor(cfg: Config, redis: RedisClient): LatestValuesStore {
  const keys = keysOf(cfg);
  return new LatestValuesStore(redis, keys.partitions.map((_, i) => keys.fleet(i)), { motionSpeedKmh: cfg.MOTION_SPEED, currentSign: { from: cfg.CURRENT_SIGN_FROM, charging: cfg.CHARGING_CURRENT_SIGN }, chargingMinCurrentA: cfg.CHARGING_MIN_CURRENT });
}

/** How often a worker reads the immobilisations again (when they changed): at most 2 s, and half the events' window and correction delay. */
export function immobilisationsWatchEvery(cfg: Pick<Config, 'EVENTS_WINDOW' | 'EVENTS_CORRECTION_DELAY'>): number {
  return Math.max(100, Math.min(2_000, cfg.EVENTS_WINDOW / 2, cfg.EVENTS_CORRECTION_DELAY / 2));
}

/** A `sending` command whose worker gave no answer for this long is failed ("may have been carried out"): far past the client's timeout. */
export const SENDING_STUCK_MS = 120_000;

export function sweepOptions(cfg: Config): SweepOptions {
  return { safety: { maxFixAgeMs: cfg.COMMANDS_SAFE_FIX_AGE, motionSpeedKmh: cfg.MOTION_SPEED }, confirmWindowMs: cfg.COMMANDS_CONFIRM_WINDOW, sendingStuckMs: SENDING_STUCK_MS };
}

export interface RunningCommands {
  /** The fields a worker reads of each written record (the events' and the pack's allow flags). */
  pick: typeof COMMANDS_PICK;
  /** After InfluxDB confirmed a batch: the vehicles' latest values. */
  record: LatestValuesStore['record'];
  /** The automation rules' hook for the events (undefined without COMMANDS_AUTOMATION_FILE). */
  observe: ((entries: readonly OutboxEntry[]) => Promise<void>) | undefined;
  /** The ledger's immobilisations as the vehicle events read them (`moved_while_immobilised`). */
  immobilisations: ImmobilisationWatch;
  /** Hands the events' webhook and corrections once they run (they start after the hooks are made). */
  attach(events: { webhook: ((out: WebhookPayload[]) => Promise<number>) | undefined; requestCorrection(vehicleno: string, from: number): Promise<void> } | undefined): void;
  close(): Promise<void>;
}

/**
 * The command ledger's side of a worker process (COMMANDS=on): the vehicles' latest values after each batch,
 * the sweep (send when safe, expire, confirm), the publishing of each state change (InfluxDB `commands`, the
 * webhook, the counter), the automation rules, and the immobilisations the vehicle events judge
 * `moved_while_immobilised` by.
 */
export function startCommands(cfg: Config, redis: RedisClient, sink: PointSink, log: Logger, metrics?: Metrics, sender?: CommandSender): RunningCommands {
  const ledger = commandLedgerFor(cfg, redis);
  const latest = latestValuesFor(cfg, redis);
  const rules = cfg.COMMANDS_AUTOMATION_FILE ? readAutomationFile(cfg.COMMANDS_AUTOMATION_FILE) : [];
  if (rules.length > 0) log.info({ rules: rules.map((r) => r.name), file: cfg.COMMANDS_AUTOMATION_FILE }, 'commands: automation rules loaded');
  // The account's client, paced in Redis with the fuel sync and every other process: the provider's limits are the account's.
  const client: CommandSender | undefined = sender ?? (cfg.UPSTREAM_URL ? serviceUpstreamClient(cfg, redis, keysOf(cfg).upstreamPacing, metrics) : undefined);
  let events: Parameters<RunningCommands['attach']>[0];
  // The workers' view of the immobilisations; each set or lift is judged again from its time by a correction.
  // Read again well within the events' window (so a record after a set or lift is derived with it) and
  // within the correction's delay (so the correction asked for below replays with it).
  const immobilisations = new ImmobilisationWatch(redis, keysOf(cfg).commands, log, immobilisationsWatchEvery(cfg));
  immobilisations.start();
  ledger.onImmobilisation = async (vehicleno, at) => {
    await events?.requestCorrection(vehicleno, at).catch((err: Error) => log.warn({ vehicleno, err: err.message }, 'commands: asking the vehicle events to judge an immobilisation again failed; records derived before the workers saw it are not judged again'));
  };
  const consumer = `${hostname()}:${process.pid}`;
  const ready = () => redis.status === 'ready';
  let running: Promise<unknown> = Promise.resolve();
  const sweep = sampleEvery(
    cfg.COMMANDS_SWEEP_INTERVAL,
    async () => {
      const work = (async () => {
        const r = await sweepCommands({ ledger, latest, sender: client, opts: sweepOptions(cfg), log }, Date.now());
        if (r.sent + r.expired + r.confirmed + r.notConfirmed + r.failed > 0) log.info(r, 'commands: sweep');
        await tellChanges({ redis, ledger, sink, webhook: events?.webhook ?? undefined, metrics, consumer, log });
      })();
      running = work.catch(() => undefined);
      await work;
    },
    { ready, onError: (err) => log.warn({ err: (err as Error).message }, 'commands: the sweep failed; retried') },
  );
  return {
    pick: COMMANDS_PICK,
    record: (partition, records) => latest.record(partition, records),
    observe: rules.length > 0 ? automation({ rules, ledger, latest, waitMaxMs: cfg.COMMANDS_WAIT_MAX, log }) : undefined,
    immobilisations,
    attach(e) {
      events = e;
    },
    async close() {
      sweep.stop();
      immobilisations.stop();
      await running;
    },
  };
}
