import { loadConfig } from '../../src/config/index.js';
import { flattenOptions } from '../../src/ingest/service/components.js';

/** The benchmark's command line: `npm run bench -- [--smoke] [--only a,b] [--workers N] [--env K=V,...] ...`. */

export const argv = process.argv.slice(2);
export const flag = (name: string): boolean => argv.includes(`--${name}`);
export const opt = (name: string, dflt: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};

/** `--ab <git ref>`: a build of that ref beside this tree's, alternated with it round by round (ab.ts). */
export const AB_REF: string | undefined = (() => {
  const i = argv.indexOf('--ab');
  return i >= 0 ? argv[i + 1] : undefined;
})();

/**
 * `--client wrk`: the accept rounds (3) sent by wrk rather than the load generator's Node client; with
 * `--pin`, wrk has CPU 1 (idle then: no worker writes), as a sender has a machine of its own.
 */
export const CLIENT: 'node' | 'wrk' = (() => {
  const i = argv.indexOf('--client');
  const c = i >= 0 ? argv[i + 1] : 'node';
  if (c !== 'node' && c !== 'wrk') throw new Error(`--client: node or wrk, not ${c}`);
  return c;
})();

/** `--precision full`: records with full-precision values (data.ts); children inherit it through the environment. */
{
  const i = argv.indexOf('--precision');
  if (i >= 0) {
    if (argv[i + 1] !== 'full' && argv[i + 1] !== 'bms') throw new Error(`--precision: bms or full, not ${argv[i + 1]}`);
    process.env.BENCH_PRECISION = argv[i + 1];
  }
}

/** `--env A=1,B=2`: settings for the service processes. */
export const settingsArg = (): Record<string, string> => {
  const i = argv.indexOf('--env');
  if (i < 0) return {};
  return Object.fromEntries(
    (argv[i + 1] ?? '')
      .split(',')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
};

export const SMOKE = flag('smoke');
export const P = {
  vehicles: opt('vehicles', SMOKE ? 50 : 500),
  workers: opt('workers', 1),
  workerConcurrency: opt('worker-concurrency', 64),
  ceilingRecords: opt('ceiling-records', SMOKE ? 2_000 : 200_000),
  ceilingConcurrency: opt('ceiling-concurrency', 4),
  bulkDeliveries: opt('bulk-deliveries', SMOKE ? 3 : 200),
  bulkConcurrency: opt('bulk-concurrency', 4),
  bulkSize: opt('bulk-size', 1_000),
  realtimeRecords: opt('realtime-records', SMOKE ? 300 : 60_000),
  /** With --ab: rounds of the realtime phase, each this build and the ref's in turns. */
  realtimeRounds: opt('realtime-rounds', 3),
  senders: opt('senders', SMOKE ? 16 : 64),
  acceptMs: opt('accept-ms', SMOKE ? 300 : 5_000),
  acceptWarmupMs: opt('accept-warmup-ms', SMOKE ? 200 : 5_000),
  acceptRounds: opt('accept-rounds', SMOKE ? 1 : 3),
  latencyMs: opt('latency-ms', SMOKE ? 500 : 10_000),
  memoryDeliveries: opt('memory-deliveries', SMOKE ? 2 : 20),
  timeoutMs: SMOKE ? 20_000 : 180_000,
};
export const TOKEN = 'bench-push-token-0123456789abcdef';
export const DB = 'bench_e2e';
export const CEILING_DB = 'bench_ceiling';
export const QUEUE = 'bench-q';

export const PHASES = ['ceiling', 'accept', 'memory', 'bulk', 'realtime', 'latency'] as const;
export type Phase = (typeof PHASES)[number];
const only = (() => {
  const i = argv.indexOf('--only');
  return i >= 0 ? new Set(argv[i + 1]!.split(',')) : new Set<string>(PHASES);
})();
export const want = (p: Phase): boolean => only.has(p);


/** How the service flattens records with its default settings: the ceiling and the gzip row write the same lines. */
export const FLATTEN = flattenOptions(loadConfig({ PUSH_AUTH: 'none' }));
