#!/usr/bin/env node
import { constants } from 'node:os';
import { ConfigError, formerNamesIn, loadConfig, MODES, redactedConfig, renamedWarning, type Mode } from '../config/index.js';
import { createLogger, type Logger } from '../log/index.js';
import { startService, type RunningService } from '../ingest/service/index.js';

/** `telematics-ingest [all|receiver|worker]`; the argument wins over SERVICE_MODE. */
async function main(): Promise<void> {
  const arg = process.argv[2];
  if (arg === '--help' || arg === '-h') {
    process.stdout.write(`usage: telematics-ingest [${MODES.join('|')}]\nSettings come from the environment; see .env.example.\n`);
    return;
  }
  if (arg !== undefined && !MODES.includes(arg as Mode)) {
    process.stderr.write(`unknown mode "${arg}"; expected one of ${MODES.join(', ')}\n`);
    process.exit(2);
  }
  let cfg;
  try {
    cfg = loadConfig({ ...process.env, ...(arg ? { SERVICE_MODE: arg } : {}) });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(cfg.LOG_LEVEL);
  log.info({ config: redactedConfig(cfg) }, 'configuration');
  for (const r of formerNamesIn(process.env)) log.warn({ setting: r.formerly, now: r.name }, renamedWarning(r));
  const service = await startService(cfg, log);

  stopOnSignals(service, cfg.SHUTDOWN_GRACE, log);
}

/**
 * A signal this soon after the first is the same one relayed: a terminal's Ctrl-C reaches every process
 * of its foreground group, and `npm start` (and tsx) pass the one they got on to this process as well.
 */
const SAME_SIGNAL_MS = 1_000;

/** The exit code of a process ended by `signal`, as a shell reports it. */
const signalExitCode = (signal: NodeJS.Signals): number => 128 + (constants.signals[signal] ?? 0);

/**
 * SIGTERM or SIGINT closes the service, bounded by `graceMs` (SHUTDOWN_GRACE): exit 0 once it closed;
 * past the bound, what had not finished is logged by name and the process exits 1 (jobs in flight
 * return to the queue once their locks expire). A second signal (a second after the first at least)
 * exits at once. Every way out is `process.exit`: nothing left open (a connection, a timer, a client
 * reconnecting) can keep the process.
 */
function stopOnSignals(service: RunningService, graceMs: number, log: Logger): void {
  let stopping: NodeJS.Signals | undefined;
  let stoppingAt = 0;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (Date.now() - stoppingAt < SAME_SIGNAL_MS) return;
      log.warn({ signal, unfinished: service.unfinished() }, `${signal} while shutting down already: exiting now, unfinished: ${service.unfinished().join(', ') || 'nothing'}`);
      process.exit(signalExitCode(signal));
    }
    stopping = signal;
    stoppingAt = Date.now();
    log.info({ signal, graceMs }, 'shutting down');
    // Not unref'd: the bound holds even when what close() waits for keeps nothing else alive.
    setTimeout(() => {
      const unfinished = service.unfinished();
      log.error({ graceMs, unfinished }, `shutdown did not finish within SHUTDOWN_GRACE (${graceMs} ms): ${unfinished.join(', ') || 'nothing named'} unfinished; exiting (jobs in flight return to the queue)`);
      process.exit(1);
    }, graceMs);
    service.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err: String(err) }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`telematics-ingest failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
