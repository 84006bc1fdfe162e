import { runFeed } from '../../src/upstream/emulator/feed.js';
import type { ServiceProcess } from '../harness/proc.js';
import { startStack, TOKEN } from '../harness/stack.js';

export interface SoakOptions {
  durationMs: number;
  /** Records per second offered by the emulator's push feed. */
  rate: number;
  workers: number;
  vehicles: number;
  /** Mean time between worker kills. */
  killEveryMs: number;
  seed: number;
  log?: (line: string) => void;
}

export interface SoakReport {
  sent: number;
  acknowledged: number;
  retries: number;
  failedDeliveries: number;
  workerKills: number;
  missing: number;
  wrong: number;
  extra: number;
  durationMs: number;
  /** Zero loss: every acknowledged record is in InfluxDB once with its values, nothing else is. */
  ok: boolean;
}

/**
 * Minutes of mixed bulk and realtime load from the emulator's feed against a receiver and
 * several workers, killing workers at random (SIGKILL) and starting replacements, then a
 * reconciliation of every acknowledged record against InfluxDB.
 */
export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const log = opts.log ?? (() => {});
  const started = Date.now();
  const stack = await startStack({ WORKER_CONCURRENCY: '2' });
  try {
    const receiver = await stack.spawn('receiver');
    let workers: ServiceProcess[] = await Promise.all(Array.from({ length: opts.workers }, () => stack.spawn('worker')));
    log(`stack up: receiver ${receiver.url}, ${opts.workers} workers, redis ${stack.redis.url} (AOF), influx ${stack.influx.rawUrl}`);

    let kills = 0;
    let stop = false;
    let seed = opts.seed;
    const rnd = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648);
    const chaos = (async () => {
      while (!stop) {
        await new Promise((r) => setTimeout(r, opts.killEveryMs * (0.5 + rnd())));
        if (stop) break;
        const victim = workers[Math.floor(rnd() * workers.length)]!;
        await victim.stop('SIGKILL');
        kills++;
        workers = workers.filter((w) => w !== victim);
        workers.push(await stack.spawn('worker'));
        log(`killed a worker (SIGKILL) and started another; kills so far: ${kills}`);
      }
    })();

    const feed = await runFeed({
      url: receiver.url, token: TOKEN, mode: 'mixed', realtimeRatio: 0.5, bulkSize: 200,
      rate: opts.rate, durationMs: opts.durationMs, concurrency: 8, vehicles: opts.vehicles,
      seed: opts.seed, maxAttempts: 30, backoffMs: 200, maxBackoffMs: 2_000, keep: true,
    });
    stop = true;
    await chaos;
    log(`feed done: ${feed.sent} sent, ${feed.acknowledged} acknowledged, ${feed.retries} retries; reconciling`);
    const r = await stack.settle(feed.records.acknowledged, 120_000);
    const report: SoakReport = {
      sent: feed.sent,
      acknowledged: feed.acknowledged,
      retries: feed.retries,
      failedDeliveries: feed.failedDeliveries,
      workerKills: kills,
      missing: r.missing.length,
      wrong: r.wrong.length,
      extra: r.extra,
      durationMs: Date.now() - started,
      ok: r.missing.length === 0 && r.wrong.length === 0 && r.extra === 0,
    };
    if (!report.ok) log(`first problems: ${[...r.missing, ...r.wrong].slice(0, 5).join('; ')}`);
    return report;
  } finally {
    await stack.stop();
  }
}
