/**
 * The benchmark's phases, each a function of the one running bench (`Bench`): the service's processes,
 * the load generator, what was sent so far and what was measured. run.ts calls them in order.
 */
import type { Redis } from 'ioredis';
import { bullKey } from '../../src/ingest/queue/keys.js';
import type { CpuMeter } from './cpu.js';
import type { Command, LoadResult, Target } from './load.js';
import { CEILING_DB, CLIENT, DB, opt, P, QUEUE } from './options.js';
import { influxQL } from '../../src/devstack/influxd.js';
import { freePort } from '../../src/devstack/process.js';
import { checkAll2xx, log, now, pct, polls, probeVisibility, redisUsedMemory, sleep, waitForPoints } from './points.js';
import type { Loader, Proc } from './procs.js';
import { cpuUs, fmt, ours, ratio, refs, type Latency, type Measured } from './report.js';
import { median } from './ab.js';

export interface Bench {
  /** InfluxDB's own address, for reads. */
  raw: string;
  redis: Redis;
  loader: Loader;
  meter: CpuMeter;
  m: Measured;
  receiver: Proc;
  /** With `--ab <ref>`: a receiver of that ref's build, on the same Redis and queue, for the A/B rounds. */
  refReceiver?: Proc;
  /** The receiver's Prometheus metrics. */
  receiverMetrics: string;
  /** The service's push targets and the front's write target, by database. */
  bulkTarget: Target;
  realtimeTarget(url: string): Target;
  frontTarget(db: string): Target;
  /** Spawns a process of the bench (tracked, stopped at the end). */
  spawn(name: string, which: 'ingest' | 'bare', args: string[], env?: Record<string, string>): Promise<Proc>;
  /** With `--ab <ref>`: a process of the ref's build, with the ref's own queue (its receiver's jobs go to its workers). */
  spawnRef?: (name: string, args: string[]) => Promise<Proc>;
  stop(p: Proc): Promise<void>;
  /** Record indices handed to the service so far, in DB. */
  next: number;
  /** Records the service answered 2xx for. */
  delivered: number;
  /** Records sent but unanswered when a timed wrk run stopped: stored or not, they are in [0, next). */
  unanswered: number;
  /** With `--pin`: the core the accept rounds' client runs on (influxd's, idle while no worker writes). */
  clientCpu?: string;
  /** The worker processes running now (this build's and, with `--ab`, the ref's). */
  workers: Proc[];
  /** The Prometheus metrics of this build's workers running now. */
  workerMetrics: string[];
  /**
   * Replaces InfluxDB with a new influxd on an empty data directory, the workers restarted to write to
   * it; what the old one held of [0, next) is added to `verified` first. Call with the queue drained.
   */
  freshStore(): Promise<void>;
  /** Points of [0, next) counted in stores since replaced. */
  verified: number;
}

const load = (b: Bench, cmd: Command, ready?: () => void) => b.loader.run(cmd, ready);

/** Meters CPU and wall time from when the load generator starts sending (or from the start). */
async function measure<T>(b: Bench, phase: string, records: (out: T) => number, f: (ready: () => void) => Promise<T>): Promise<T> {
  let t = now();
  b.meter.start();
  const out = await f(() => {
    t = now();
    b.meter.start();
  });
  b.m.cpu.push({ phase, records: records(out), seconds: (now() - t) / 1000, cpu: b.meter.stop() });
  return out;
}

/** (3) Receiver vs bare Hono, realtime single records, closed loop, no worker running. */
export async function acceptPhase(b: Bench): Promise<void> {
  const bare = await b.spawn('bare Hono', 'bare', []);
  let bareFrom = 50_000_000;
  const accept = async (url: string, toService: boolean, durationMs: number, phase?: string) => {
    const from = toService ? b.next : bareFrom;
    const cmd = { op: 'realtime', target: b.realtimeTarget(url), kind: 'mixed', count: 10_000_000, connections: P.senders, from, durationMs, client: CLIENT, ...(b.clientCpu ? { clientCpu: b.clientCpu } : {}) } as const;
    const r = phase ? await measure<LoadResult>(b, phase, (r) => r.requests, (ready) => load(b, cmd, ready)) : await load(b, cmd);
    checkAll2xx(phase ?? 'accept warm-up', r);
    const sent = r.requests + (r.unanswered ?? 0);
    if (toService) {
      b.next += sent;
      b.delivered += r.records;
      b.unanswered += r.unanswered ?? 0;
    } else bareFrom += sent;
    return r.requests / ((r.end - r.start) / 1000);
  };
  // Rounds alternate bare and receiver, so a slow spell of a shared machine hits both sides of a
  // round's ratio rather than one side of the only one; the median round is reported.
  const ref = b.refReceiver;
  log(`accept rate: ${CLIENT === 'wrk' ? 'wrk' : 'the load generator'}${b.clientCpu ? ` on CPU ${b.clientCpu}` : ''}, ${P.senders} senders, ${P.acceptRounds} rounds of ${P.acceptMs} ms each, bare Hono then receiver${ref ? ' then the ref\'s receiver (the two swap places every other round)' : ''}`);
  await accept(bare.url, false, P.acceptWarmupMs);
  await accept(b.receiver.url, true, P.acceptWarmupMs);
  if (ref) await accept(ref.url, true, P.acceptWarmupMs);
  for (let i = 0; i < P.acceptRounds; i++) {
    const bareRate = await accept(bare.url, false, P.acceptMs, `accept: bare Hono, round ${i + 1}`);
    // With a ref, this build and the ref's take turns going second, so neither always follows the bare endpoint.
    const refFirst = ref !== undefined && i % 2 === 1;
    const refRate = refFirst ? await accept(ref.url, true, P.acceptMs, `accept: ref's receiver, round ${i + 1}`) : undefined;
    const receiverRate = await accept(b.receiver.url, true, P.acceptMs, `accept: receiver, round ${i + 1}`);
    const refAfter = ref !== undefined && !refFirst ? await accept(ref.url, true, P.acceptMs, `accept: ref's receiver, round ${i + 1}`) : undefined;
    const refRound = refRate ?? refAfter;
    b.m.acceptRounds.push({ bare: bareRate, receiver: receiverRate, ...(refRound !== undefined ? { ref: refRound } : {}) });
    log(`round ${i + 1}: bare ${fmt(bareRate)} req/s, receiver ${fmt(receiverRate)} req/s, ${ratio(receiverRate, bareRate)}${refRound !== undefined ? `; ref ${fmt(refRound)} req/s, ${ratio(refRound, bareRate)}; this / ref ${(receiverRate / refRound).toFixed(3)}` : ''}`);
  }
  await b.stop(bare);
}

/** (5) Redis bytes per queued full CAN record, no worker running yet. */
export async function memoryPhase(b: Bench): Promise<void> {
  await sleep(200);
  const memFrom = b.next;
  const memRecords = P.memoryDeliveries * 1_000;
  const before = await redisUsedMemory(b.redis);
  const mem = await load(b, { op: 'bulk', target: b.bulkTarget, kind: 'fullCan', from: memFrom, deliveries: P.memoryDeliveries, size: 1_000, concurrency: 2 });
  checkAll2xx('memory', mem);
  const after = await redisUsedMemory(b.redis);
  b.next += memRecords;
  b.delivered += mem.records;
  b.m.bytesPerRecord = (after - before) / memRecords;
  const lastJob = (await b.redis.lrange(bullKey(QUEUE, 'wait'), 0, 0))[0];
  b.m.jobDataBytes = Number(await b.redis.hstrlen(bullKey(QUEUE, lastJob!), 'data'));
  log(`redis ${fmt(b.m.bytesPerRecord, 1)} bytes per full CAN record; the last job's data is ${b.m.jobDataBytes} bytes for 1000 records`);
}

/** Worker processes (this build's, and with `--ab` the ref's), kept in `b.workers`. */
export async function spawnWorkers(b: Bench): Promise<void> {
  b.workerMetrics = [];
  for (let i = 0; i < P.workers; i++) {
    const port = await freePort();
    b.workers.push(await b.spawn(`worker${P.workers > 1 ? i + 1 : ''}`, 'ingest', ['worker'], { ADMIN_PORT: String(port), ADMIN_HOST: '127.0.0.1' }));
    b.workerMetrics.push(`http://127.0.0.1:${port}/metrics`);
  }
  if (b.spawnRef) for (let i = 0; i < P.workers; i++) b.workers.push(await b.spawnRef(`worker (ref)${P.workers > 1 ? ` ${i + 1}` : ''}`, ['worker']));
}

/** Worker processes, and the drain of what the phases before them queued (a warm-up too). */
export async function startWorkers(b: Bench): Promise<Proc[]> {
  await spawnWorkers(b);
  const workers = b.workers;
  if (b.delivered > 0) {
    log(`draining ${b.delivered} queued records`);
    await measure(b, 'drain', () => b.delivered, () => waitForPoints(b.raw, DB, 0, b.next, b.delivered, 200));
  }
  return workers;
}

/**
 * (1) Storage ceiling: the same kind of records, serialized by src/ingest/flatten, through the same
 * front, measured just before and just after (2a) (a shared machine drifts); the higher counts.
 */
export function ceilingPhase(b: Bench): () => Promise<void> {
  let ceilingRound = 0;
  return async () => {
    const round = ceilingRound++;
    const from = round * 2 * P.ceilingRecords;
    const cmd = { op: 'ceiling', target: b.frontTarget(CEILING_DB), kind: 'mixed', batchLines: opt('ceiling-batch', 5_000), concurrency: P.ceilingConcurrency } as const;
    log(`storage ceiling, run ${round + 1}: ${P.ceilingRecords} records in ${cmd.batchLines}-line batches, ${P.ceilingConcurrency} at a time`);
    if (round === 0) await load(b, { ...cmd, from: 10_000_000, count: Math.min(20_000, P.ceilingRecords) }); // warm-up
    await measure(b, `ceiling, run ${round + 1}`, () => P.ceilingRecords, async (ready) => {
      const ceil = await load(b, { ...cmd, from, count: P.ceilingRecords }, ready);
      checkAll2xx('ceiling', ceil);
      const ceilEnd = await waitForPoints(b.raw, CEILING_DB, from, from + P.ceilingRecords, P.ceilingRecords);
      const rate = P.ceilingRecords / ((ceilEnd - ceil.start) / 1000);
      b.m.ceilingRuns.push(rate);
      b.m.ceilingRate = Math.max(b.m.ceilingRate ?? 0, rate);
      log(`ceiling ${fmt(rate)} records/s`);
    });
  };
}

/** (2a) End to end, bulk deliveries of 1000 mixed records. */
export async function bulkPhase(b: Bench): Promise<void> {
  const bulkFrom = b.next;
  const bulkRecords = P.bulkDeliveries * P.bulkSize;
  log(`end-to-end bulk: ${P.bulkDeliveries} deliveries of ${P.bulkSize}, ${P.bulkConcurrency} at a time`);
  const before = await jobsByPayload(b);
  await measure(b, 'bulk', () => bulkRecords, async (ready) => {
    const bulk = await load(b, { op: 'bulk', target: b.bulkTarget, kind: 'mixed', from: bulkFrom, deliveries: P.bulkDeliveries, size: P.bulkSize, concurrency: P.bulkConcurrency }, ready);
    checkAll2xx('bulk', bulk);
    b.next += bulkRecords;
    b.delivered += bulk.records;
    const bulkEnd = await waitForPoints(b.raw, DB, bulkFrom, b.next, bulkRecords);
    b.m.bulkRate = bulkRecords / ((bulkEnd - bulk.start) / 1000);
    log(`bulk ${fmt(b.m.bulkRate)} records/s end to end (accepted at ${fmt(bulkRecords / ((bulk.end - bulk.start) / 1000))}/s)`);
  });
  const after = await jobsByPayload(b);
  b.m.bulkJobs = { text: after.text - before.text, deflated: after.deflated - before.deflated };
  log(`bulk jobs: ${b.m.bulkJobs.text} as text, ${b.m.bulkJobs.deflated} deflated (JOB_DEFLATE; by default while 64 or more jobs wait)`);
}

/**
 * `--store-rounds N`: (1) and (2a) alternated N times, each run on a fresh influxd (an empty data
 * directory: a store's cost per point grows with what it holds, and a run after another measured the
 * one before it), each after a warm-up of its own, the order swapped every round; polled alike from
 * their start until every record is queryable. Reported as the median of the per-round ratios. With
 * `--ab`, the ref's receiver and workers take a bulk run of their own each round.
 */
export async function storeRoundsPhase(b: Bench, rounds: number): Promise<void> {
  const n = P.ceilingRecords;
  const size = P.bulkSize;
  const deliveries = Math.ceil(n / size);
  const warm = Math.min(20_000, n);
  log(`store rounds: ${rounds} rounds of a ceiling run and a bulk run of ${n} records each, each on a fresh influxd after ${warm} records of warm-up`);
  let ceilingFrom = 20_000_000;
  /** What the store took in so far (influxd's own counters): write requests, points, body bytes. */
  const httpd = async () => {
    const rows = await influxQL<{ writeReq?: number; pointsWrittenOK?: number; writeReqBytes?: number }>(b.raw, DB, "SHOW STATS FOR 'httpd'");
    const sum = (f: (r: (typeof rows)[number]) => number | undefined) => rows.reduce((a, r) => a + (f(r) ?? 0), 0);
    return { requests: sum((r) => r.writeReq), points: sum((r) => r.pointsWrittenOK), bytes: sum((r) => r.writeReqBytes) };
  };
  /** How the measured run wrote, per record: requests and points InfluxDB took, and its lines per request. */
  const shapes = new Map<string, string>();
  type Gate = (points: number) => () => Promise<boolean>;
  /** `run` is given a gate that opens once influxd has taken that many points more than before it (its stats: no data read). */
  const shaped = async <T>(phase: string, records: number, run: (since: Gate) => Promise<T>): Promise<T> => {
    const before = await httpd();
    const pollsBefore = polls.count;
    const out = await run((points) => async () => (await httpd()).points - before.points >= points);
    const after = await httpd();
    const made = polls.count - pollsBefore;
    const requests = after.requests - before.requests;
    const points = after.points - before.points;
    shapes.set(
      phase,
      `${fmt((points / records) * 1000)} points and ${fmt((requests / records) * 1000, 1)} requests per 1000 records (${fmt(points / requests)} lines, ${fmt((after.bytes - before.bytes) / requests / 1024)} KiB a request); ` +
        `${made} count poll(s) once influxd had taken as many points`,
    );
    return out;
  };
  const ceilingRun = async (round: number): Promise<number> => {
    const cmd = { op: 'ceiling', target: b.frontTarget(CEILING_DB), kind: 'mixed', batchLines: opt('ceiling-batch', 5_000), concurrency: P.ceilingConcurrency } as const;
    await load(b, { ...cmd, from: ceilingFrom, count: warm });
    ceilingFrom += warm;
    const from = ceilingFrom;
    ceilingFrom += n;
    return shaped(`ceiling, round ${round}`, n, (since) =>
      measure(b, `ceiling, round ${round}`, () => n, async (ready) => {
        const r = await load(b, { ...cmd, from, count: n }, ready);
        checkAll2xx('ceiling', r);
        const end = await waitForPoints(b.raw, CEILING_DB, from, from + n, n, 50, since(r.points!));
        return n / ((end - r.start) / 1000);
      }),
    );
  };
  const bulkRun = async (round: number, receiver: Proc, phase: string): Promise<number> => {
    const send = async (count: number, measured?: string) => {
      const from = b.next;
      const cmd = { op: 'bulk', target: { ...b.bulkTarget, url: receiver.url }, kind: 'mixed', from, deliveries: Math.ceil(count / size), size, concurrency: P.bulkConcurrency } as const;
      const go = async (ready?: () => void, since?: Gate) => {
        const r = await load(b, { ...cmd, points: since !== undefined }, ready);
        checkAll2xx(measured ?? `${phase} warm-up`, r);
        b.next += cmd.deliveries * size;
        b.delivered += r.records;
        const end = await waitForPoints(b.raw, DB, from, b.next, cmd.deliveries * size, 50, since?.(r.points!));
        return (cmd.deliveries * size) / ((end - r.start) / 1000);
      };
      return measured ? shaped(measured, cmd.deliveries * size, (since) => measure(b, measured, () => cmd.deliveries * size, (ready) => go(ready, since))) : go();
    };
    await send(warm);
    if (receiver !== b.receiver) return send(deliveries * size, `${phase}, round ${round}`);
    const before = await stateUpdates(b);
    const payloads = await jobsByPayload(b);
    const rate = await send(deliveries * size, `${phase}, round ${round}`);
    const after = await stateUpdates(b);
    const payloadsAfter = await jobsByPayload(b);
    const commits = after.commits - before.commits;
    const jobs = after.jobs - before.jobs;
    const deflated = payloadsAfter.deflated - payloads.deflated;
    const enqueued = deflated + payloadsAfter.text - payloads.text;
    shapes.set(
      `${phase}, round ${round}`,
      `${shapes.get(`${phase}, round ${round}`)}; jobs deflated (a backlog): ${deflated} of ${enqueued}; vehicles' state: ${commits} updates of ${jobs} jobs (${commits > 0 ? fmt(jobs / commits, 2) : '-'} an update)`,
    );
    return rate;
  };
  // With --ab the ref's receiver and workers take a bulk run of their own in each round; the order rotates.
  const ref = b.refReceiver;
  const runs = ref ? (['ceiling', 'bulk', 'ref'] as const) : (['ceiling', 'bulk'] as const);
  const perRecord = (phase: string, which: (name: string) => boolean) => cpuUs(b.m.cpu.find((c) => c.phase === phase)!, which);
  for (let i = 1; i <= rounds; i++) {
    const order = runs.map((_, k) => runs[(k + i - 1) % runs.length]!);
    const rate: Partial<Record<(typeof runs)[number], number>> = {};
    for (const what of order) {
      await b.freshStore();
      rate[what] = what === 'ceiling' ? await ceilingRun(i) : what === 'bulk' ? await bulkRun(i, b.receiver, 'bulk') : await bulkRun(i, ref!, 'bulk (ref)');
    }
    const round = {
      ceiling: rate.ceiling!,
      bulk: rate.bulk!,
      serviceUs: perRecord(`bulk, round ${i}`, ours),
      influxdUs: perRecord(`bulk, round ${i}`, (name) => name === 'influxd'),
      ceilingInfluxdUs: perRecord(`ceiling, round ${i}`, (name) => name === 'influxd'),
      ...(rate.ref !== undefined ? { ref: rate.ref, refServiceUs: perRecord(`bulk (ref), round ${i}`, refs), refInfluxdUs: perRecord(`bulk (ref), round ${i}`, (name) => name === 'influxd') } : {}),
    };
    b.m.storeRounds.push(round);
    log(
      `store round ${i} (${order.join(' then ')}): ceiling ${fmt(round.ceiling)} records/s, bulk ${fmt(round.bulk)}: ${ratio(round.bulk, round.ceiling)}; ` +
        `service ${fmt(round.serviceUs, 1)} core-µs/record against influxd's ${fmt(round.influxdUs, 1)} (${fmt(round.ceilingInfluxdUs, 1)} on the ceiling's writes)` +
        (round.ref !== undefined ? `; ref ${fmt(round.ref)} records/s (${ratio(round.ref, round.ceiling)}), service ${fmt(round.refServiceUs!, 1)} against influxd's ${fmt(round.refInfluxdUs!, 1)}; this / ref ${(round.bulk / round.ref).toFixed(3)}` : ''),
    );
    for (const what of order) {
      const phase = `${what === 'ref' ? 'bulk (ref)' : what}, round ${i}`;
      log(`  ${phase}: ${shapes.get(phase)}`);
    }
  }
}

/** The vehicles' state updates of this build's workers so far, and the jobs they covered (telematics_written_batch_jobs). */
async function stateUpdates(b: Bench): Promise<{ commits: number; jobs: number }> {
  let commits = 0;
  let jobs = 0;
  for (const url of b.workerMetrics) {
    const text = await (await fetch(url)).text();
    commits += Number(/^telematics_written_batch_jobs_count (\d+)$/m.exec(text)?.[1] ?? 0);
    jobs += Number(/^telematics_written_batch_jobs_sum (\d+)$/m.exec(text)?.[1] ?? 0);
  }
  return { commits, jobs };
}

/** The receiver's telematics_jobs_enqueued_total, by payload. */
async function jobsByPayload(b: Bench): Promise<{ text: number; deflated: number }> {
  const text = await (await fetch(b.receiverMetrics)).text();
  const count = (payload: string) => Number(new RegExp(`^telematics_jobs_enqueued_total\\{payload="${payload}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { text: count('text'), deflated: count('deflated') };
}

/** (2b) End to end, realtime single records from many senders. */
export async function realtimePhase(b: Bench): Promise<void> {
  log(`end-to-end realtime: ${P.realtimeRecords} single records, ${P.senders} senders`);
  const run = (receiver: Proc, phase: string) =>
    measure(b, phase, () => P.realtimeRecords, async (ready) => {
      const rtFrom = b.next;
      b.next += P.realtimeRecords;
      const rtRun = await load(b, { op: 'realtime', target: b.realtimeTarget(receiver.url), kind: 'mixed', from: rtFrom, count: P.realtimeRecords, connections: P.senders }, ready);
      checkAll2xx(phase, rtRun);
      b.delivered += rtRun.records;
      const rtEnd = await waitForPoints(b.raw, DB, rtFrom, rtFrom + P.realtimeRecords, P.realtimeRecords);
      const rate = P.realtimeRecords / ((rtEnd - rtRun.start) / 1000);
      log(`${phase}: ${fmt(rate)} records/s end to end (accepted at ${fmt(P.realtimeRecords / ((rtRun.end - rtRun.start) / 1000))}/s)`);
      return rate;
    });
  const ref = b.refReceiver;
  if (!ref) {
    b.m.rtRate = await run(b.receiver, 'realtime');
    return;
  }
  // A/B: rounds of the bare endpoint's accept rate, then this build and the ref's end to end, in turns.
  const bare = await b.spawn('bare Hono', 'bare', []);
  for (let i = 0; i < P.realtimeRounds; i++) {
    const bareRun = await load(b, { op: 'realtime', target: b.realtimeTarget(bare.url), kind: 'mixed', count: 10_000_000, connections: P.senders, from: 60_000_000 + i * 10_000_000, durationMs: P.acceptMs });
    checkAll2xx(`realtime A/B: bare Hono, round ${i + 1}`, bareRun);
    const bareRate = bareRun.requests / ((bareRun.end - bareRun.start) / 1000);
    const refFirst = i % 2 === 1;
    const refRate = refFirst ? await run(ref, `realtime (ref), round ${i + 1}`) : undefined;
    const thisRate = await run(b.receiver, `realtime, round ${i + 1}`);
    const refRound = refRate ?? (await run(ref, `realtime (ref), round ${i + 1}`));
    b.m.rtRounds.push({ bare: bareRate, receiver: thisRate, ref: refRound });
    log(`realtime A/B round ${i + 1}: bare ${fmt(bareRate)} req/s; this ${fmt(thisRate)} records/s (${ratio(thisRate, bareRate)}), ref ${fmt(refRound)} (${ratio(refRound, bareRate)}); this / ref ${(thisRate / refRound).toFixed(3)}`);
  }
  await b.stop(bare);
  b.m.rtRate = median(b.m.rtRounds.map((r) => r.receiver));
}

/** (4) Push → queryable latency at `rate`, open loop: realtime records, or bulk deliveries of 1000. */
export async function latencyPhase(b: Bench, what: 'realtime' | 'bulk', rate: number): Promise<Latency> {
  const size = what === 'bulk' ? 1_000 : 1;
  const count = Math.max(size * 3, Math.round((rate * P.latencyMs) / 1000 / size) * size);
  const from = b.next;
  log(`latency, ${what}: ${count} records at ${fmt(rate)} records/s (open loop)`);
  const probe = probeVisibility(b.raw, DB, from, from + count);
  let r: LoadResult;
  try {
    r = await measure(b, `latency: ${what}`, () => count, (ready) =>
      what === 'bulk'
        ? load(b, { op: 'bulk', target: b.bulkTarget, kind: 'mixed', from, deliveries: count / size, size, concurrency: 8, rate }, ready)
        : load(b, { op: 'realtime', target: b.realtimeTarget(b.receiver.url), kind: 'mixed', from, count, connections: P.senders, rate }, ready),
    );
    checkAll2xx(`latency ${what}`, r);
  } catch (err) {
    probe.cancel();
    throw err;
  }
  b.next += count;
  b.delivered += r.records;
  const missing = await probe.finish();
  if (missing > 0) throw new Error(`latency phase: ${missing} of ${count} records never became queryable`);
  const latencies = Array.from(probe.seenAt, (t, i) => t - r.sentAt![Math.floor(i / size)]!).sort((x, y) => x - y);
  log(`latency p50 ${fmt(pct(latencies, 50))} ms, p99 ${fmt(pct(latencies, 99))} ms (2xx p50 ${fmt(pct(r.latencies, 50), 1)} ms, p99 ${fmt(pct(r.latencies, 99), 1)} ms)`);
  return { rate, count, latencies, acks: r.latencies };
}
