/**
 * `npm run bench [-- --smoke] [-- --workers N]`: the pipeline measured against the limits of the
 * machine it runs on, in one run, as ratios. Starts its own redis-server and influxd (src/devstack),
 * the service as separate receiver and worker processes, a bare Hono endpoint, and a load
 * generator in a process of its own; prints one table. See docs/benchmarks.md.
 */
import { cpus, totalmem } from 'node:os';
import { Redis } from 'ioredis';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { influxQLStatements, startInflux, type LocalInflux } from '../../src/devstack/influxd.js';
import { ensureDebianPackages } from '../../src/devstack/process.js';
import { bullKey } from '../../src/ingest/queue/keys.js';
import { BenchData } from './data.js';
import { buildForBench, spawnNode, startLoader, type Loader, type Proc } from './procs.js';
import type { Command, LoadResult, Target } from './load.js';
import { childPids, CpuMeter, OTHERS } from './cpu.js';

const argv = process.argv.slice(2);
const flag = (name: string): boolean => argv.includes(`--${name}`);
const opt = (name: string, dflt: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};

/** `--env A=1,B=2`: settings for the service processes. */
const settingsArg = (): Record<string, string> => {
  const i = argv.indexOf('--env');
  if (i < 0) return {};
  return Object.fromEntries(
    (argv[i + 1] ?? '')
      .split(',')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
};

const SMOKE = flag('smoke');
const P = {
  vehicles: opt('vehicles', SMOKE ? 50 : 500),
  workers: opt('workers', 1),
  workerConcurrency: opt('worker-concurrency', 8),
  ceilingRecords: opt('ceiling-records', SMOKE ? 2_000 : 200_000),
  ceilingConcurrency: opt('ceiling-concurrency', 4),
  bulkDeliveries: opt('bulk-deliveries', SMOKE ? 3 : 200),
  bulkConcurrency: opt('bulk-concurrency', 4),
  bulkSize: opt('bulk-size', 1_000),
  realtimeRecords: opt('realtime-records', SMOKE ? 300 : 60_000),
  senders: opt('senders', SMOKE ? 16 : 64),
  acceptMs: opt('accept-ms', SMOKE ? 300 : 5_000),
  acceptWarmupMs: opt('accept-warmup-ms', SMOKE ? 200 : 5_000),
  acceptRounds: opt('accept-rounds', SMOKE ? 1 : 3),
  latencyMs: opt('latency-ms', SMOKE ? 500 : 10_000),
  memoryDeliveries: opt('memory-deliveries', SMOKE ? 2 : 20),
  timeoutMs: SMOKE ? 20_000 : 180_000,
};
const TOKEN = 'bench-push-token-0123456789abcdef';
const DB = 'bench_e2e';
const CEILING_DB = 'bench_ceiling';
const QUEUE = 'bench-q';

const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? `${fmt((100 * a) / b)} %` : '');
const log = (m: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
};

// ---------------------------------------------------------------------------------- InfluxDB reads

const window = (from: number, to: number) => `time >= ${BenchData.timeOf(from)}ms AND time < ${BenchData.timeOf(to)}ms`;

/** Points of records [from, to) queryable now: every gps point has `lat`, every can point `soc`. */
async function countPoints(rawUrl: string, db: string, from: number, to: number): Promise<number> {
  const w = window(from, to);
  const results = await influxQLStatements<{ count?: number }>(rawUrl, db, `SELECT count(lat) FROM gps WHERE ${w}; SELECT count(soc) FROM can WHERE ${w}`);
  let n = 0;
  for (const rows of results) for (const row of rows) n += Number(row.count ?? 0);
  return n;
}

/** Polls until `expected` points of [from, to) are queryable; returns when the poll that saw them answered. */
async function waitForPoints(rawUrl: string, db: string, from: number, to: number, expected: number, intervalMs = 50): Promise<number> {
  const deadline = Date.now() + P.timeoutMs;
  let seen = 0;
  while (Date.now() < deadline) {
    const t = now();
    seen = await countPoints(rawUrl, db, from, to);
    if (seen >= expected) return now();
    const spent = now() - t;
    if (spent < intervalMs) await sleep(intervalMs - spent);
  }
  throw new Error(`only ${seen} of ${expected} records of [${from}, ${to}) reached InfluxDB within ${P.timeoutMs} ms`);
}

/**
 * Latency probe: polls for the points of [from, to) not seen yet (records carry unique times, so
 * a time names a record) and notes when each first became queryable (the answer time of the poll).
 */
function probeVisibility(rawUrl: string, db: string, from: number, to: number, intervalMs = 20) {
  const seenAt = new Float64Array(to - from).fill(-1);
  let missing = to - from;
  let lowest = from;
  let stop = false;
  const done = (async () => {
    const deadline = Date.now() + P.timeoutMs + P.latencyMs;
    while (!stop && missing > 0 && Date.now() < deadline) {
      const t = now();
      const w = window(lowest, to);
      const results = await influxQLStatements<{ time: number }>(rawUrl, db, `SELECT lat FROM gps WHERE ${w}; SELECT soc FROM can WHERE ${w}`);
      const answered = now();
      for (const rows of results) {
        for (const row of rows) {
          const i = BenchData.indexOf(Number(row.time)) - from;
          if (seenAt[i] === -1) {
            seenAt[i] = answered;
            missing--;
          }
        }
      }
      while (lowest < to && seenAt[lowest - from] !== -1) lowest++;
      const spent = now() - t;
      if (spent < intervalMs) await sleep(intervalMs - spent);
    }
  })();
  return {
    seenAt,
    async finish(): Promise<number> {
      await done;
      stop = true;
      return missing;
    },
    cancel() {
      stop = true;
    },
  };
}

// ---------------------------------------------------------------------------------- helpers

function pct(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function checkAll2xx(what: string, r: LoadResult): void {
  const bad = Object.entries(r.statuses).filter(([s]) => !s.startsWith('2'));
  if (bad.length > 0) throw new Error(`${what}: non-2xx answers ${JSON.stringify(r.statuses)}; e.g. ${r.errors.join(' | ')}`);
}

async function redisUsedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a';
const mb = (b: number): string => `${fmt(b / 1_048_576, 0)} MiB`;

interface Row {
  n: string;
  what: string;
  value: string;
  reference: string;
  ratio: string;
  target: string;
  ok?: boolean;
}

function table(rows: Row[]): string {
  const head: Row = { n: '#', what: 'Measure', value: 'Result', reference: 'Compared with', ratio: 'Ratio', target: 'Target' };
  const cols: Array<keyof Omit<Row, 'ok'>> = ['n', 'what', 'value', 'reference', 'ratio', 'target'];
  const cell = (r: Row, c: keyof Omit<Row, 'ok'>) => (c === 'target' && r.ok !== undefined ? `${r.target} ${r.ok ? 'met' : 'NOT MET'}` : r[c]);
  const lines = [head, ...rows].map((r) => `| ${cols.map((c) => cell(r, c)).join(' | ')} |`);
  lines.splice(1, 0, `|${cols.map(() => '---').join('|')}|`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------- the run

const PHASES = ['ceiling', 'accept', 'memory', 'bulk', 'realtime', 'latency'] as const;
type Phase = (typeof PHASES)[number];
const only = (() => {
  const i = argv.indexOf('--only');
  return i >= 0 ? new Set(argv[i + 1]!.split(',')) : new Set<string>(PHASES);
})();
const want = (p: Phase): boolean => only.has(p);

interface Latency {
  rate: number;
  count: number;
  /** Push → queryable, ms, sorted. */
  latencies: number[];
  /** Push → 2xx, ms, sorted. */
  acks: number[];
}

interface Measured {
  ceilingRate?: number;
  ceilingRuns: number[];
  bulkRate?: number;
  rtRate?: number;
  /** Accept rates of each round, bare Hono then receiver. */
  acceptRounds: Array<{ bare: number; receiver: number }>;
  rtLatency?: Latency;
  bulkLatency?: Latency;
  bytesPerRecord?: number;
  jobDataBytes?: number;
  /** Per phase: records, wall seconds, CPU seconds per process. */
  cpu: Array<{ phase: string; records: number; seconds: number; cpu: Map<string, number> }>;
}

async function main(): Promise<void> {
  ensureDebianPackages(
    [
      { bin: 'redis-server', pkg: 'redis-server' },
      { bin: 'influxd', pkg: 'influxdb' },
    ],
    log,
  );
  const built = buildForBench();
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
  const stopProc = async (p: Proc) => {
    await p.stop();
    procs.splice(procs.indexOf(p), 1);
  };
  const m: Measured = { cpu: [], ceilingRuns: [], acceptRounds: [] };

  try {
    // Redis as the README asks production to run it: AOF on, fsynced before it answers.
    [redis, influx] = await Promise.all([startRedis({ appendonly: !flag('no-aof') }), startInflux()]);
    redisClient = new Redis(redis.url);
    loader = startLoader({ BENCH_VEHICLES: String(P.vehicles) });
    await influx.createDatabase(DB);
    await influx.createDatabase(CEILING_DB);
    const raw = influx.rawUrl;
    const frontTarget = (db: string): Target => ({
      url: influx!.url,
      path: `/api/v2/write?bucket=${db}&precision=ms`,
      headers: { Authorization: `Token ${influx!.token}`, 'Content-Type': 'text/plain; charset=utf-8' },
    });
    const pushHeaders = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
    let next = 0; // record indices handed to the service so far, in this DB
    let delivered = 0; // records the service answered 2xx for

    const servers = new Map<string, number | undefined>([
      ['influxd', childPids(process.pid, 'influxd')[0]],
      ['redis-server', childPids(process.pid, 'redis-server')[0]],
      ['bench + v2 front', process.pid],
      ['load generator', loader.pid],
    ]);
    const meter = new CpuMeter(() => new Map([...servers, ...procs.map((p) => [p.name, p.child.pid] as [string, number | undefined])]));
    /** Meters CPU and wall time from when the load generator starts sending (or from the start). */
    const measure = async <T>(phase: string, records: (out: T) => number, f: (ready: () => void) => Promise<T>): Promise<T> => {
      let t = now();
      meter.start();
      const out = await f(() => {
        t = now();
        meter.start();
      });
      m.cpu.push({ phase, records: records(out), seconds: (now() - t) / 1000, cpu: meter.stop() });
      return out;
    };
    const load = (cmd: Command, ready?: () => void) => loader!.run(cmd, ready);

    // The service: one receiver process; worker processes start after the phases that need none.
    const env: Record<string, string> = {
      REDIS_URL: redis.url,
      QUEUE_NAME: QUEUE,
      INFLUX_URL: influx.url,
      INFLUX_TOKEN: influx.token,
      INFLUX_BUCKET: DB,
      PUSH_TOKENS: TOKEN,
      LOG_LEVEL: 'warn',
      WORKER_CONCURRENCY: String(P.workerConcurrency),
      // Settings to try, passed on as given: --env JOB_MAX_RECORDS=5000,WRITE_BATCH_LINES=5000
      ...settingsArg(),
    };
    const receiver = await spawnNode('receiver', built.ingest, ['receiver'], env, nodeArgs);
    procs.push(receiver);
    const rt = (url: string): Target => ({ url, path: '/push/realtime', headers: pushHeaders });
    const bulkTarget: Target = { url: receiver.url, path: '/push/bulk', headers: pushHeaders };

    // (3) Receiver vs bare Hono, realtime single records, closed loop, no worker running.
    if (want('accept')) {
      const bare = await spawnNode('bare Hono', built.bare, [], {}, nodeArgs);
      procs.push(bare);
      let bareFrom = 50_000_000;
      const accept = async (url: string, toService: boolean, durationMs: number, phase?: string) => {
        const from = toService ? next : bareFrom;
        const cmd = { op: 'realtime', target: rt(url), kind: 'mixed', count: 10_000_000, connections: P.senders, from, durationMs } as const;
        const r = phase ? await measure<LoadResult>(phase, (r) => r.requests, (ready) => load(cmd, ready)) : await load(cmd);
        checkAll2xx(phase ?? 'accept warm-up', r);
        if (toService) {
          next += r.requests;
          delivered += r.records;
        } else bareFrom += r.requests;
        return r.requests / ((r.end - r.start) / 1000);
      };
      // Rounds alternate bare and receiver, so a slow spell of a shared machine hits both sides of a
      // round's ratio rather than one side of the only one; the median round is reported.
      log(`accept rate: ${P.senders} senders, ${P.acceptRounds} rounds of ${P.acceptMs} ms each, bare Hono then receiver`);
      await accept(bare.url, false, P.acceptWarmupMs);
      await accept(receiver.url, true, P.acceptWarmupMs);
      for (let i = 0; i < P.acceptRounds; i++) {
        const b = await accept(bare.url, false, P.acceptMs, `accept: bare Hono, round ${i + 1}`);
        const r = await accept(receiver.url, true, P.acceptMs, `accept: receiver, round ${i + 1}`);
        m.acceptRounds.push({ bare: b, receiver: r });
        log(`round ${i + 1}: bare ${fmt(b)} req/s, receiver ${fmt(r)} req/s, ${ratio(r, b)}`);
      }
      await stopProc(bare);
    }

    // (5) Redis bytes per queued full CAN record, no worker running yet.
    if (want('memory')) {
      await sleep(200);
      const memFrom = next;
      const memRecords = P.memoryDeliveries * 1_000;
      const before = await redisUsedMemory(redisClient);
      const mem = await load({ op: 'bulk', target: bulkTarget, kind: 'fullCan', from: memFrom, deliveries: P.memoryDeliveries, size: 1_000, concurrency: 2 });
      checkAll2xx('memory', mem);
      const after = await redisUsedMemory(redisClient);
      next += memRecords;
      delivered += mem.records;
      m.bytesPerRecord = (after - before) / memRecords;
      const lastJob = (await redisClient.lrange(bullKey(QUEUE, 'wait'), 0, 0))[0];
      m.jobDataBytes = Number(await redisClient.hstrlen(bullKey(QUEUE, lastJob!), 'data'));
      log(`redis ${fmt(m.bytesPerRecord, 1)} bytes per full CAN record; the last job's data is ${m.jobDataBytes} bytes for 1000 records`);
    }

    const workers: Proc[] = [];
    if (want('bulk') || want('realtime') || want('latency') || delivered > 0) {
      for (let i = 0; i < P.workers; i++) {
        const w = await spawnNode(`worker${P.workers > 1 ? i + 1 : ''}`, built.ingest, ['worker'], env, nodeArgs);
        procs.push(w);
        workers.push(w);
      }
    }
    if (delivered > 0) {
      // Workers drain what the accept and memory phases queued (and warm up doing so).
      log(`draining ${delivered} queued records`);
      await measure('drain', () => delivered, () => waitForPoints(raw, DB, 0, next, delivered, 200));
    }

    // (1) Storage ceiling: the same kind of records, serialized by src/flatten, through the same
    // front, measured just before and just after (2a) (a shared machine drifts); the higher counts.
    let ceilingRound = 0;
    const ceiling = async (): Promise<void> => {
      const round = ceilingRound++;
      const from = round * 2 * P.ceilingRecords;
      const cmd = { op: 'ceiling', target: frontTarget(CEILING_DB), kind: 'mixed', batchLines: opt('ceiling-batch', 5_000), concurrency: P.ceilingConcurrency } as const;
      log(`storage ceiling, run ${round + 1}: ${P.ceilingRecords} records in ${cmd.batchLines}-line batches, ${P.ceilingConcurrency} at a time`);
      if (round === 0) await load({ ...cmd, from: 10_000_000, count: Math.min(20_000, P.ceilingRecords) }); // warm-up
      await measure(`ceiling, run ${round + 1}`, () => P.ceilingRecords, async (ready) => {
        const ceil = await load({ ...cmd, from, count: P.ceilingRecords }, ready);
        checkAll2xx('ceiling', ceil);
        const ceilEnd = await waitForPoints(raw, CEILING_DB, from, from + P.ceilingRecords, P.ceilingRecords);
        const rate = P.ceilingRecords / ((ceilEnd - ceil.start) / 1000);
        m.ceilingRuns.push(rate);
        m.ceilingRate = Math.max(m.ceilingRate ?? 0, rate);
        log(`ceiling ${fmt(rate)} records/s`);
      });
    };

    // (2a) End to end, bulk deliveries of 1000 mixed records, between two runs of (1).
    if (want('ceiling')) await ceiling();
    if (want('bulk')) {
      const bulkFrom = next;
      const bulkRecords = P.bulkDeliveries * P.bulkSize;
      log(`end-to-end bulk: ${P.bulkDeliveries} deliveries of ${P.bulkSize}, ${P.bulkConcurrency} at a time`);
      await measure('bulk', () => bulkRecords, async (ready) => {
        const bulk = await load({ op: 'bulk', target: bulkTarget, kind: 'mixed', from: bulkFrom, deliveries: P.bulkDeliveries, size: P.bulkSize, concurrency: P.bulkConcurrency }, ready);
        checkAll2xx('bulk', bulk);
        next += bulkRecords;
        delivered += bulk.records;
        const bulkEnd = await waitForPoints(raw, DB, bulkFrom, next, bulkRecords);
        m.bulkRate = bulkRecords / ((bulkEnd - bulk.start) / 1000);
        log(`bulk ${fmt(m.bulkRate)} records/s end to end (accepted at ${fmt(bulkRecords / ((bulk.end - bulk.start) / 1000))}/s)`);
      });
    }

    if (want('ceiling') && want('bulk')) await ceiling();

    // (2b) End to end, realtime single records from many senders.
    if (want('realtime')) {
      const rtFrom = next;
      log(`end-to-end realtime: ${P.realtimeRecords} single records, ${P.senders} senders`);
      await measure('realtime', () => P.realtimeRecords, async (ready) => {
        const rtRun = await load({ op: 'realtime', target: rt(receiver.url), kind: 'mixed', from: rtFrom, count: P.realtimeRecords, connections: P.senders }, ready);
        checkAll2xx('realtime', rtRun);
        next += P.realtimeRecords;
        delivered += rtRun.records;
        const rtEnd = await waitForPoints(raw, DB, rtFrom, next, P.realtimeRecords);
        m.rtRate = P.realtimeRecords / ((rtEnd - rtRun.start) / 1000);
        log(`realtime ${fmt(m.rtRate)} records/s end to end (accepted at ${fmt(P.realtimeRecords / ((rtRun.end - rtRun.start) / 1000))}/s)`);
      });
    }

    // (4) Push → queryable latency at half the highest sustained rate, open loop: realtime records at
    // half of (2b), and bulk deliveries at half of (2a).
    const latency = async (what: 'realtime' | 'bulk', rate: number): Promise<Latency> => {
      const size = what === 'bulk' ? 1_000 : 1;
      const count = Math.max(size * 3, Math.round((rate * P.latencyMs) / 1000 / size) * size);
      const from = next;
      log(`latency, ${what}: ${count} records at ${fmt(rate)} records/s (open loop)`);
      const probe = probeVisibility(raw, DB, from, from + count);
      let r: LoadResult;
      try {
        r = await measure(`latency: ${what}`, () => count, (ready) =>
          what === 'bulk'
            ? load({ op: 'bulk', target: bulkTarget, kind: 'mixed', from, deliveries: count / size, size, concurrency: 8, rate }, ready)
            : load({ op: 'realtime', target: rt(receiver.url), kind: 'mixed', from, count, connections: P.senders, rate }, ready),
        );
        checkAll2xx(`latency ${what}`, r);
      } catch (err) {
        probe.cancel();
        throw err;
      }
      next += count;
      delivered += r.records;
      const missing = await probe.finish();
      if (missing > 0) throw new Error(`latency phase: ${missing} of ${count} records never became queryable`);
      const latencies = Array.from(probe.seenAt, (t, i) => t - r.sentAt![Math.floor(i / size)]!).sort((a, b) => a - b);
      log(`latency p50 ${fmt(pct(latencies, 50))} ms, p99 ${fmt(pct(latencies, 99))} ms (2xx p50 ${fmt(pct(r.latencies, 50), 1)} ms, p99 ${fmt(pct(r.latencies, 99), 1)} ms)`);
      return { rate, count, latencies, acks: r.latencies };
    };
    if (want('latency')) {
      m.rtLatency = await latency('realtime', opt('latency-rate', (m.rtRate ?? 2_000) / 2));
      if (m.bulkRate !== undefined) m.bulkLatency = await latency('bulk', m.bulkRate / 2);
    }

    // Every record the service answered 2xx for is in InfluxDB.
    const total = await countPoints(raw, DB, 0, next);
    const everyRecord = total === delivered && delivered === next;

    const receiverRss = receiver.rss();
    const workerRss = workers.map((w) => w.rss());
    const rows: Row[] = [];
    const ceilingRef = m.ceilingRate === undefined ? 'ceiling not measured' : `ceiling ${fmt(m.ceilingRate)}/s`;
    if (m.ceilingRate !== undefined) {
      rows.push({
        n: '1',
        what: `Storage ceiling: the same records as line protocol (src/flatten), written straight to InfluxDB through the same /api/v2/write front, 5000-line batches, ${P.ceilingConcurrency} concurrent, until queryable; the higher of a run before and a run after 2a`,
        value: `${fmt(m.ceilingRate)} records/s`,
        reference: m.ceilingRuns.length > 1 ? `runs: ${m.ceilingRuns.map((r) => fmt(r)).join(', ')}` : '',
        ratio: '',
        target: '',
      });
    }
    if (m.bulkRate !== undefined) {
      rows.push({
        n: '2a',
        what: `End to end, bulk: ${P.bulkSize} mixed gps+can records per push, ${P.bulkConcurrency} pushes at a time, receiver → Redis → worker → InfluxDB, until queryable`,
        value: `${fmt(m.bulkRate)} records/s`,
        reference: ceilingRef,
        ratio: ratio(m.bulkRate, m.ceilingRate),
        target: '≥ 80 %',
        ok: m.ceilingRate === undefined ? undefined : m.bulkRate >= 0.8 * m.ceilingRate,
      });
    }
    if (m.rtRate !== undefined) {
      rows.push({
        n: '2b',
        what: `End to end, realtime: single records from ${P.senders} concurrent senders, until queryable`,
        value: `${fmt(m.rtRate)} records/s`,
        reference: ceilingRef,
        ratio: ratio(m.rtRate, m.ceilingRate),
        target: '',
      });
    }
    if (m.acceptRounds.length > 0) {
      // The round with the median ratio, so its two rates are what that ratio compares.
      const byRatio = [...m.acceptRounds].sort((a, b) => a.receiver / a.bare - b.receiver / b.bare);
      const mid = byRatio[Math.floor((byRatio.length - 1) / 2)]!;
      const rounds = m.acceptRounds.map((r) => ratio(r.receiver, r.bare)).join(', ');
      rows.push({
        n: '3',
        what: `Receiver: realtime pushes answered 202, each after Redis confirmed its enqueue, ${P.senders} senders, no worker running; the median of ${m.acceptRounds.length} alternating rounds`,
        value: `${fmt(mid.receiver)} req/s`,
        reference: `bare Hono ${fmt(mid.bare)} req/s (rounds: ${rounds})`,
        ratio: ratio(mid.receiver, mid.bare),
        target: '≥ 60 %',
        ok: mid.receiver >= 0.6 * mid.bare,
      });
    }
    const latencyRow = (n: string, what: string, l: Latency): Row => ({
      n,
      what,
      value: `p50 ${fmt(pct(l.latencies, 50))} ms, p99 ${fmt(pct(l.latencies, 99))} ms`,
      reference: `202 answered: p50 ${fmt(pct(l.acks, 50), 1)} ms, p99 ${fmt(pct(l.acks, 99), 1)} ms`,
      ratio: '',
      target: 'p99 ≤ 1000 ms',
      ok: pct(l.latencies, 99) <= 1000,
    });
    if (m.rtLatency) {
      rows.push(latencyRow('4a', `Latency push → queryable, realtime records at ${fmt(m.rtLatency.rate)}/s (${m.rtRate === undefined ? 'given rate' : 'half of 2b'}), open loop, ${fmt(m.rtLatency.count)} records`, m.rtLatency));
    }
    if (m.bulkLatency) {
      rows.push(latencyRow('4b', `Latency push → queryable, 1000-record pushes at ${fmt(m.bulkLatency.rate)} records/s (half of 2a), open loop, ${fmt(m.bulkLatency.count)} records`, m.bulkLatency));
    }
    if (m.bytesPerRecord !== undefined) {
      rows.push({
        n: '5a',
        what: 'Redis memory per queued CAN record with all 69 spec fields (used_memory delta over 1000-record pushes, no worker running)',
        value: `${fmt(m.bytesPerRecord, 0)} bytes`,
        reference: `its JSON push ${fmt(Buffer.byteLength(JSON.stringify(new BenchData(P.vehicles).fullCan(0))))} bytes; job data ${fmt((m.jobDataBytes ?? NaN) / 1000, 0)} bytes/record`,
        ratio: '',
        target: '≤ 300 bytes',
        ok: m.bytesPerRecord <= 300,
      });
    }
    if (workerRss.length > 0) {
      rows.push({
        n: '5b',
        what: `Worker RSS (${P.workers} process${P.workers > 1 ? 'es' : ''}, WORKER_CONCURRENCY ${P.workerConcurrency}): at the end / peak`,
        value: workerRss.map((r) => `${mb(r.now)} / ${mb(r.peak)}`).join(', '),
        reference: '',
        ratio: '',
        target: '',
      });
    }
    rows.push({
      n: '5c',
      what: 'Receiver RSS: at the end / peak',
      value: `${mb(receiverRss.now)} / ${mb(receiverRss.peak)}`,
      reference: '',
      ratio: '',
      target: '',
    });

    const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? '?'}), ${fmt(totalmem() / 2 ** 30, 1)} GiB, node ${process.version}`;
    process.stdout.write(`\ntelematics-ingest benchmark${SMOKE ? ' (smoke: tiny counts, numbers meaningless)' : ''} — ${started.toISOString()}\n`);
    process.stdout.write(`machine: ${machine}; redis-server (AOF ${flag('no-aof') ? 'off' : 'on, appendfsync always'}) and influxd 1.6.7 on the same machine, loopback only\n`);
    process.stdout.write(`records: ${P.vehicles} vehicles, fleet model of src/emulator; ${P.workers} worker process(es); load generator in its own process\n\n`);
    process.stdout.write(`${table(rows)}\n\n`);
    process.stdout.write(`every record reached InfluxDB: ${everyRecord ? 'yes' : 'NO'} (${total} of ${delivered} acknowledged, ${next} sent)\n\n`);
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

/** Where the CPU went, per phase: core-milliseconds per 1000 records (per 1000 requests for accept). */
function cpuTable(rows: Measured['cpu']): string {
  const names = [...new Set(rows.flatMap((r) => [...r.cpu.keys()]))].filter((n) => n !== OTHERS);
  const head = `| CPU, core-ms per 1000 records (accept: per 1000 requests) | wall s | ${names.join(' | ')} | all ours, cores busy | ${OTHERS}, cores busy |`;
  const sep = `|---|---|${names.map(() => '---').join('|')}|---|---|`;
  const lines = rows.map((r) => {
    const cells = names.map((n) => {
      const c = r.cpu.get(n);
      return c === undefined || Number.isNaN(c) ? '' : fmt((1000 * 1000 * c) / Math.max(1, r.records), 0);
    });
    const ours = names.map((n) => r.cpu.get(n) ?? NaN).filter((c) => !Number.isNaN(c)).reduce((a, b) => a + b, 0);
    return `| ${r.phase} (${fmt(r.records)}) | ${fmt(r.seconds, 1)} | ${cells.join(' | ')} | ${fmt(ours / r.seconds, 2)} | ${fmt((r.cpu.get(OTHERS) ?? NaN) / r.seconds, 2)} |`;
  });
  return [head, sep, ...lines].join('\n');
}

main().then(
  () => process.exit(),
  (err: unknown) => {
    process.stderr.write(`benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
