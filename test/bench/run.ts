/**
 * `npm run bench [-- --smoke] [-- --workers N] [-- --ab <git ref>]`: the pipeline measured against the limits of the
 * machine it runs on, in one run, as ratios. Starts its own redis-server and influxd (src/devstack),
 * the service as separate receiver and worker processes, a bare Hono endpoint, and a load
 * generator in a process of its own; prints one table. See docs/benchmarks/history.md.
 *
 * This file sets the bench up and tears it down; the phases are in phases.ts, options in options.ts,
 * reading points back in points.ts, the table in report.ts.
 */
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { Redis } from 'ioredis';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { startInflux, type LocalInflux } from '../../src/devstack/influxd.js';
import { ensureDebianPackages, freePort } from '../../src/devstack/process.js';
import { childPids, CpuMeter } from './cpu.js';
import type { Target } from './load.js';
import { AB_REF, CEILING_DB, CLIENT, DB, FLATTEN, flag, opt, P, QUEUE, settingsArg, SMOKE, TOKEN, want } from './options.js';
import { refTree } from './ab.js';
import { acceptPhase, bulkPhase, ceilingPhase, latencyPhase, memoryPhase, realtimePhase, spawnWorkers, startWorkers, storeRoundsPhase, type Bench } from './phases.js';
import { countPoints, log, pct } from './points.js';
import { buildForBench, spawnNode, startLoader, type Loader, type Proc } from './procs.js';
import { cpuTable, fmt, resultRows, table, type Latency, type Measured } from './report.js';
import { BenchData, PRECISION } from './data.js';
import { gzipSync } from 'node:zlib';
import { flattenRecords } from '../../src/ingest/flatten/flatten.js';
import { validateRecord } from '../../src/ingest/validate/record.js';

async function main(): Promise<void> {
  ensureDebianPackages(
    [
      { bin: 'redis-server', pkg: 'redis-server' },
      { bin: 'influxd', pkg: 'influxdb' },
      ...(CLIENT === 'wrk' ? [{ bin: 'wrk', pkg: 'wrk' }] : []),
    ],
    log,
  );
  const built = buildForBench();
  // --ab <ref>: that ref built beside this tree (a worktree under .bench/ab), its receiver alternated with ours.
  const ab = AB_REF === undefined ? undefined : refTree(AB_REF);
  const refBuilt = ab ? buildForBench(ab.dir) : undefined;
  if (ab) log(`A/B: this tree against ${AB_REF} (${ab.sha.slice(0, 12)})`);
  const started = new Date();
  let redis: LocalRedis | undefined;
  let influx: LocalInflux | undefined;
  let loader: Loader | undefined;
  let redisClient: Redis | undefined;
  const procs: Proc[] = [];
  const profDir = process.env.BENCH_CPU_PROF;
  // BENCH_NODE_ARGS: extra flags for the receiver and workers, e.g. --perf-basic-prof for `perf record`.
  const nodeArgs = [
    ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
    ...(process.env.BENCH_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []),
  ];
  const m: Measured = { cpu: [], ceilingRuns: [], storeRounds: [], acceptRounds: [], rtRounds: [] };
  // --pin: influxd and its front on CPU 1 (processes of their own), everything else on CPU 0, as in
  // production where InfluxDB has cores of its own. Children inherit this process's affinity.
  const pin = flag('pin');
  if (pin) execFileSync('taskset', ['-apc', '0', String(process.pid)], { stdio: 'ignore' });
  m.pinned = pin;

  try {
    // Redis as the README asks production to run it: AOF on, fsynced before it answers.
    [redis, influx] = await Promise.all([startRedis({ appendonly: !flag('no-aof') }), startInflux(pin ? { pinCpus: '1' } : {})]);
    redisClient = new Redis(redis.url);
    loader = startLoader({ BENCH_VEHICLES: String(P.vehicles) });
    await influx.createDatabase(DB);
    await influx.createDatabase(CEILING_DB);
    const pushHeaders = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
    // The service's settings; --env K=V,... adds settings to try, passed on as given.
    const env: Record<string, string> = {
      REDIS_URL: redis.url,
      QUEUE_NAME: QUEUE,
      INFLUX_URL: influx.url,
      INFLUX_TOKEN: influx.token,
      INFLUX_BUCKET: DB,
      PUSH_TOKENS: TOKEN,
      LOG_LEVEL: 'warn',
      ADMIN_PORT: '0',
      WORKER_CONCURRENCY: String(P.workerConcurrency),
      ...settingsArg(),
    };
    const spawn = async (name: string, which: 'ingest' | 'bare', args: string[], extra: Record<string, string> = {}): Promise<Proc> => {
      const p = await spawnNode(name, built[which], args, which === 'ingest' ? { ...env, ...extra } : extra, nodeArgs);
      procs.push(p);
      return p;
    };
    const servers = new Map<string, number | undefined>([
      ['influxd', childPids(process.pid, 'influxd')[0]],
      ['redis-server', childPids(process.pid, 'redis-server')[0]],
      [pin ? 'bench' : 'bench + v2 front', process.pid],
      ...(influx.front.pid ? [['v2 front', influx.front.pid] as [string, number]] : []),
      ['load generator', loader.pid],
    ]);
    // The receiver's admin listener on a known port: the bulk phase reads its jobs-by-payload counter.
    const receiverAdmin = await freePort();
    const receiver = await spawnNode('receiver', built.ingest, ['receiver'], { ...env, ADMIN_PORT: String(receiverAdmin), ADMIN_HOST: '127.0.0.1' }, nodeArgs);
    procs.push(receiver);
    // The ref's processes have a queue of their own: its receiver's jobs are its workers'.
    const spawnRef = refBuilt
      ? async (name: string, args: string[]): Promise<Proc> => {
          const p = await spawnNode(name, refBuilt.ingest, args, { ...env, QUEUE_NAME: `${QUEUE}-ref` }, nodeArgs);
          procs.push(p);
          return p;
        }
      : undefined;
    const refReceiver = spawnRef ? await spawnRef('receiver (ref)', ['receiver']) : undefined;
    const realtimeTarget = (url: string): Target => ({ url, path: '/push/realtime', headers: pushHeaders });
    const b: Bench = {
      raw: influx.rawUrl,
      redis: redisClient,
      loader,
      meter: new CpuMeter(() => new Map([...servers, ...procs.map((p) => [p.name, p.child.pid] as [string, number | undefined])])),
      m,
      receiver,
      ...(refReceiver && spawnRef ? { refReceiver, spawnRef } : {}),
      receiverMetrics: `http://127.0.0.1:${receiverAdmin}/metrics`,
      bulkTarget: { url: receiver.url, path: '/push/bulk', headers: pushHeaders },
      realtimeTarget,
      frontTarget: (db: string): Target => ({
        url: influx!.url,
        path: `/api/v2/write?bucket=${db}&precision=ms`,
        headers: { Authorization: `Token ${influx!.token}`, 'Content-Type': 'text/plain; charset=utf-8' },
      }),
      spawn,
      async stop(p) {
        await p.stop();
        procs.splice(procs.indexOf(p), 1);
      },
      next: 0,
      delivered: 0,
      unanswered: 0,
      ...(pin ? { clientCpu: '1' } : {}),
      workers: [],
      workerMetrics: [],
      verified: 0,
      async freshStore() {
        b.verified += await countPoints(b.raw, DB, 0, b.next);
        for (const w of b.workers.splice(0)) await b.stop(w);
        await influx!.stop();
        influx = await startInflux(pin ? { pinCpus: '1' } : {});
        await influx.createDatabase(DB);
        await influx.createDatabase(CEILING_DB);
        env.INFLUX_URL = influx.url;
        env.INFLUX_TOKEN = influx.token;
        b.raw = influx.rawUrl;
        servers.set('influxd', childPids(process.pid, 'influxd')[0]);
        if (influx.front.pid) servers.set('v2 front', influx.front.pid);
        await spawnWorkers(b);
      },
    };

    if (want('accept')) await acceptPhase(b);
    if (want('memory')) await memoryPhase(b);
    // --store-rounds N: (1) and (2a) as alternated rounds on fresh stores, in place of the two phases below.
    const storeRounds = opt('store-rounds', 0);
    const ceilingAndBulk = storeRounds === 0 && want('bulk');
    if (ceilingAndBulk || storeRounds > 0 || want('realtime') || want('latency') || b.delivered > 0) await startWorkers(b);
    if (storeRounds > 0) {
      await storeRoundsPhase(b, storeRounds);
      m.jsonParseUsPerRecord = jsonParseCost();
    }
    const ceiling = ceilingPhase(b);
    // (2a) between two runs of (1).
    if (storeRounds === 0 && want('ceiling')) await ceiling();
    if (ceilingAndBulk) {
      await bulkPhase(b);
      m.jsonParseUsPerRecord = jsonParseCost();
      m.gzip = gzipCost();
    }
    if (storeRounds === 0 && want('ceiling') && want('bulk')) await ceiling();
    if (want('realtime')) await realtimePhase(b);
    // (4) at half the highest sustained rates: realtime at half of (2b), bulk at half of (2a).
    if (want('latency')) {
      m.rtLatency = await latencyPhase(b, 'realtime', opt('latency-rate', (m.rtRate ?? 2_000) / 2));
      if (m.bulkRate !== undefined) m.bulkLatency = await latencyPhase(b, 'bulk', m.bulkRate / 2);
    }

    // Every record the service answered 2xx for is in InfluxDB.
    // Records a timed wrk run left unanswered when it stopped may be stored or not; every other one is.
    const { next, delivered, unanswered } = b;
    const total = b.verified + (await countPoints(b.raw, DB, 0, next));
    const everyRecord = total >= delivered && total <= delivered + unanswered && delivered + unanswered === next;
    const receiverRss = receiver.rss();
    const workerRss = b.workers.map((w) => w.rss());
    const rows = resultRows(m, receiverRss, workerRss);
    const topology = pin
      ? 'pinned: influxd and its /api/v2/write front (a process of its own) on CPU 1; load generator, receiver, workers and Redis on CPU 0'
      : 'shared: every process on every core';

    const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? '?'}), ${fmt(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}`;
    process.stdout.write(`\ntelematics-ingest benchmark${SMOKE ? ' (smoke: tiny counts, numbers meaningless)' : ''} — ${started.toISOString()}\n`);
    process.stdout.write(`machine: ${machine}; redis-server (AOF ${flag('no-aof') ? 'off' : 'on, appendfsync always'}) and influxd 1.6.7 on the same machine, loopback only\n`);
    process.stdout.write(`topology: ${topology}\n`);
    process.stdout.write(`records: ${P.vehicles} vehicles, fleet model of src/upstream/emulator, values ${PRECISION === 'full' ? 'at full precision (float32 readings as doubles, 16–17 digits)' : 'as its BMS writes them (a few decimals)'}; ${P.workers} worker process(es); load generator in its own process\n\n`);
    process.stdout.write(`${table(rows)}\n\n`);
    const cut = unanswered > 0 ? `; ${unanswered} sent unanswered when wrk stopped, ${total - delivered} of them stored` : '';
    process.stdout.write(`every record reached InfluxDB: ${everyRecord ? 'yes' : 'NO'} (${total} of ${delivered} acknowledged, ${next} sent${cut})\n\n`);
    process.stdout.write(`${cpuTable(m.cpu)}\n\n`);
    const lat = (l?: Latency) => l && { rate: l.rate, count: l.count, p50: pct(l.latencies, 50), p99: pct(l.latencies, 99), ackP50: pct(l.acks, 50), ackP99: pct(l.acks, 99) };
    const json = { smoke: SMOKE, everyRecord, total, delivered, ...m, cpu: undefined, rtLatency: lat(m.rtLatency), bulkLatency: lat(m.bulkLatency), receiverRss, workerRss };
    process.stdout.write(`BENCH_RESULT ${JSON.stringify(json)}\n`);
    if (!everyRecord) process.exitCode = 1;
  } finally {
    for (const p of [...procs].reverse()) await p.stop().catch(() => {});
    loader?.stop();
    redisClient?.disconnect();
    await influx?.stop().catch(() => {});
    await redis?.stop().catch(() => {});
  }
}

/**
 * The floor no service can go below: JSON.parse of bulk pushes like the ones sent, in this process,
 * as core-µs per record (CPU time, so a busy machine does not inflate it).
 */
function jsonParseCost(): number {
  const data = new BenchData(P.vehicles);
  const pushes = Array.from({ length: 20 }, (_, d) => JSON.stringify({ bulkData: Array.from({ length: P.bulkSize }, (_, i) => data.mixed(d * P.bulkSize + i)) }));
  for (const p of pushes) JSON.parse(p);
  const before = process.cpuUsage();
  for (let round = 0; round < 5; round++) for (const p of pushes) JSON.parse(p);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / (5 * pushes.length * P.bulkSize);
}

/** gzip of write bodies as the worker sends them (flattened bulk records, 5000 lines), in this process. */
function gzipCost(): { usPerLine: number; keptShare: number } {
  const data = new BenchData(P.vehicles);
  const records = Array.from({ length: 4_000 }, (_, i) => validateRecord(data.mixed(i), Date.now())).flatMap((r) => (r.ok ? [r.record] : []));
  const lines = flattenRecords(records, FLATTEN).lines.slice(0, 5_000);
  const body = Buffer.from(lines.join('\n'));
  const packed = gzipSync(body);
  const before = process.cpuUsage();
  for (let round = 0; round < 10; round++) gzipSync(body);
  const used = process.cpuUsage(before);
  return { usPerLine: (used.user + used.system) / (10 * lines.length), keptShare: packed.length / body.length };
}

main().then(
  () => process.exit(),
  (err: unknown) => {
    process.stderr.write(`benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
