#!/usr/bin/env node
import { ConfigError, loadConfig, MODES, redactedConfig, type Mode } from '../config/index.js';
import { createLogger } from '../log/index.js';
import { startService } from '../ingest/service/index.js';

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
  const service = await startService(cfg, log);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, graceMs: cfg.SHUTDOWN_GRACE }, 'shutting down');
    const force = setTimeout(() => {
      log.error('shutdown grace time exceeded; exiting with work in flight (jobs return to the queue)');
      process.exit(1);
    }, cfg.SHUTDOWN_GRACE);
    force.unref();
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
