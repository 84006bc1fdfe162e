/**
 * The load generator, run as its own process (forked by run.ts) so it never shares an event loop
 * with what it measures. It takes one command at a time over IPC and answers with what it saw.
 * Times are wall-clock milliseconds (performance.timeOrigin + now()), comparable across processes.
 */
import { BenchData, type PushRecord } from './data.js';
import { buildRequest, Connection, type Answer } from './http.js';
import { validateRecord } from '../../src/ingest/validate/record.js';
import { flattenRecords } from '../../src/ingest/flatten/flatten.js';
import { FLATTEN } from './options.js';
import { runWrk, wrkBodies } from './wrk.js';

export type Kind = 'mixed' | 'fullCan';

export interface Target {
  url: string;
  path: string;
  headers: Record<string, string>;
}

export type Command =
  | { op: 'ceiling'; target: Target; kind: Kind; from: number; count: number; batchLines: number; concurrency: number }
  | {
      op: 'bulk';
      target: Target;
      kind: Kind;
      from: number;
      deliveries: number;
      size: number;
      concurrency: number;
      /** Open loop, in records per second: delivery i is due at start + i·size / rate. */
      rate?: number;
      /** Count the points the records make (LoadResult.points), before sending. */
      points?: boolean;
    }
  | {
      op: 'realtime';
      target: Target;
      kind: Kind;
      from: number;
      /** Most records to send. */
      count: number;
      connections: number;
      /** Stop sending after this long (closed loop); undefined: send all `count`. */
      durationMs?: number;
      /** Open loop: record i is due at start + i / rate seconds, whatever the answers. */
      rate?: number;
      /** Keep each record's due time and answer time (open loop latency). */
      keepTimes?: boolean;
      /** The HTTP client: this process's own (default), or wrk for a timed closed-loop run (wrk.ts). */
      client?: 'node' | 'wrk';
      /** With wrk: the core(s) it runs on. */
      clientCpu?: string;
    };

export interface LoadResult {
  /** When the first request went out. */
  start: number;
  /** When the last answer came back. */
  end: number;
  requests: number;
  /** Records in requests answered 2xx. */
  records: number;
  statuses: Record<string, number>;
  /** A sample of non-2xx answers. */
  errors: string[];
  /** Per request: the time the request was due (open loop) or sent; and when answered; -1 when not sent. */
  sentAt?: Float64Array;
  answeredAt?: Float64Array;
  /** Request latencies in ms, sorted. */
  latencies: number[];
  /** Requests sent but not answered when a timed run stopped (wrk's end): their records may be stored or not. */
  unanswered?: number;
  /** The points the records sent make, as the service flattens them (a ceiling's lines; a bulk run's when asked). */
  points?: number;
}

const now = (): number => performance.timeOrigin + performance.now();

function connectionsFor(url: string, n: number): Connection[] {
  const u = new URL(url);
  return Array.from({ length: n }, () => new Connection(u.hostname, Number(u.port)));
}

function requestFor(target: Target, body: string): Buffer {
  const u = new URL(target.url);
  return buildRequest({ path: target.path, host: u.host, headers: target.headers, body });
}

class Tally {
  requests = 0;
  records = 0;
  statuses: Record<string, number> = {};
  errors: string[] = [];
  latencies: number[] = [];
  add(a: Answer | Error, records: number, ms: number): void {
    this.requests++;
    const key = a instanceof Error ? 'error' : String(a.status);
    this.statuses[key] = (this.statuses[key] ?? 0) + 1;
    if (!(a instanceof Error) && a.status >= 200 && a.status < 300) {
      this.records += records;
      this.latencies.push(ms);
    } else if (this.errors.length < 5) {
      this.errors.push(a instanceof Error ? a.message : `${a.status} ${a.body.toString().slice(0, 300)}`);
    }
  }
}

/** Sends `requests` over `concurrency` connections, each taking the next one as soon as it is free. */
async function closedLoop(
  url: string,
  concurrency: number,
  requests: Source,
  durationMs?: number,
): Promise<LoadResult> {
  const conns = connectionsFor(url, concurrency);
  const tally = new Tally();
  let next = 0;
  const start = now();
  const stopAt = durationMs === undefined ? Infinity : start + durationMs;
  let end = start;
  await Promise.all(
    conns.map(async (c) => {
      while (next < requests.length && now() < stopAt) {
        const r = requests.at(next++);
        const t = now();
        const a = await c.request(r.raw).catch((e: Error) => e);
        end = now();
        tally.add(a, r.records, end - t);
      }
      c.close();
    }),
  );
  tally.latencies.sort((a, b) => a - b);
  return { start, end, ...tally };
}

/** Open loop: request i is due at start + i/rate; a late connection delays it, and the delay counts. */
async function openLoop(url: string, connections: number, requests: Source, rate: number): Promise<LoadResult> {
  const free = connectionsFor(url, connections);
  const all = [...free];
  const tally = new Tally();
  const sentAt = new Float64Array(requests.length).fill(-1);
  const answeredAt = new Float64Array(requests.length).fill(-1);
  const start = now() + 20;
  let next = 0;
  let inFlight = 0;
  let end = start;
  await new Promise<void>((resolve) => {
    const pump = (): void => {
      const t = now();
      while (next < requests.length && free.length > 0 && start + (next * 1000) / rate <= t) {
        const i = next++;
        const due = start + (i * 1000) / rate;
        const c = free.pop()!;
        sentAt[i] = due;
        inFlight++;
        void c.request(requests.at(i).raw).then(
          (a) => done(i, c, a),
          (e: Error) => done(i, c, e),
        );
      }
      if (next >= requests.length) {
        if (inFlight === 0) resolve();
        return;
      }
      const wait = start + (next * 1000) / rate - now();
      if (free.length > 0) setTimeout(pump, Math.max(0, Math.min(wait, 5)));
    };
    const done = (i: number, c: Connection, a: Answer | Error): void => {
      inFlight--;
      end = now();
      answeredAt[i] = end;
      tally.add(a, requests.at(i).records, end - sentAt[i]!);
      free.push(c);
      if (next >= requests.length) {
        if (inFlight === 0) resolve();
      } else if (free.length === 1) pump();
    };
    setTimeout(pump, Math.max(0, start - now()));
  });
  for (const c of all) c.close();
  tally.latencies.sort((a, b) => a - b);
  return { start, end, ...tally, sentAt, answeredAt };
}

/**
 * Records [from, from + count): the first POOL are generated by the fleet model, later ones reuse
 * their values with their own (unique) time, so long runs cost no generation time.
 */
const POOL = 20_000;
function recordAt(data: BenchData, kind: Kind, from: number, i: number, pool: PushRecord[]): PushRecord {
  if (i < POOL) return (pool[i] ??= data.record(kind, from + i));
  const base = (pool[i % POOL] ??= data.record(kind, from + (i % POOL)));
  return { ...base, data: { ...base.data, time: BenchData.timeOf(from + i) } };
}

function records(data: BenchData, kind: Kind, from: number, count: number): PushRecord[] {
  const pool: PushRecord[] = [];
  const out: PushRecord[] = [];
  for (let i = 0; i < count; i++) out.push(recordAt(data, kind, from, i, pool));
  return out;
}

interface Req {
  raw: Buffer;
  records: number;
}
/** The requests of a run; built when first asked for, so a timed run needs no bound on their count. */
interface Source {
  length: number;
  at(i: number): Req;
}
const fromArray = (reqs: Req[]): Source => ({ length: reqs.length, at: (i) => reqs[i]! });
function lazy(count: number, build: (i: number) => Req): Source {
  const cache: Req[] = [];
  return { length: count, at: (i) => (cache[i] ??= build(i)) };
}

let data: BenchData | undefined;

/** Builds the run's requests, waits for the go (so the meters see only the sending), then sends. */
async function run(cmd: Command, ready: () => Promise<void>): Promise<LoadResult> {
  data ??= new BenchData(Number(process.env.BENCH_VEHICLES ?? 500));
  switch (cmd.op) {
    case 'ceiling': {
      // The very lines a worker would write for these records: validated, then serialized by src/ingest/flatten.
      const lines = linesOf(records(data, cmd.kind, cmd.from, cmd.count));
      const reqs: Req[] = [];
      for (let i = 0; i < lines.length; i += cmd.batchLines) {
        const batch = lines.slice(i, i + cmd.batchLines);
        reqs.push({ raw: requestFor(cmd.target, batch.join('\n')), records: batch.length });
      }
      await ready();
      return { ...(await closedLoop(cmd.target.url, cmd.concurrency, fromArray(reqs))), points: lines.length };
    }
    case 'bulk': {
      const reqs: Req[] = [];
      let points = 0;
      for (let d = 0; d < cmd.deliveries; d++) {
        const bulkData = records(data, cmd.kind, cmd.from + d * cmd.size, cmd.size);
        if (cmd.points) points += linesOf(bulkData).length;
        reqs.push({ raw: requestFor(cmd.target, JSON.stringify({ bulkData })), records: cmd.size });
      }
      await ready();
      if (cmd.rate !== undefined) return openLoop(cmd.target.url, cmd.concurrency, fromArray(reqs), cmd.rate / cmd.size);
      return { ...(await closedLoop(cmd.target.url, cmd.concurrency, fromArray(reqs))), ...(cmd.points ? { points } : {}) };
    }
    case 'realtime': {
      const pool: PushRecord[] = [];
      const d = data;
      const build = (i: number): Req => ({ raw: requestFor(cmd.target, JSON.stringify(recordAt(d, cmd.kind, cmd.from, i, pool))), records: 1 });
      // A timed run builds ahead what it will most likely send, and the rest as it goes.
      const ahead = cmd.durationMs === undefined ? cmd.count : Math.min(cmd.count, Math.ceil((40_000 * cmd.durationMs) / 1000));
      if (cmd.client === 'wrk') return wrkRun(cmd, (i) => JSON.stringify(recordAt(d, cmd.kind, cmd.from, i, pool)), Math.min(cmd.count, wrkBodies(cmd.durationMs ?? 0)), ready);
      const built = Array.from({ length: ahead }, (_, i) => build(i));
      const reqs: Source = ahead === cmd.count ? fromArray(built) : lazy(cmd.count, (i) => built[i] ?? build(i));
      await ready();
      if (cmd.rate !== undefined) return openLoop(cmd.target.url, cmd.connections, reqs, cmd.rate);
      return closedLoop(cmd.target.url, cmd.connections, reqs, cmd.durationMs);
    }
  }
}

/** The lines the service writes for `records`: validated, then serialized by src/ingest/flatten (a can record may add `can_pack`). */
function linesOf(records: readonly PushRecord[]): string[] {
  const lines: string[] = [];
  for (const r of records) {
    const v = validateRecord(r, BenchData.timeOf(0));
    if (!v.ok) throw new Error(v.error);
    lines.push(...flattenRecords([v.record], FLATTEN).lines);
  }
  return lines;
}

/** A timed realtime run with wrk: the bodies [0, ahead) written out, then sent in order for the run's duration. */
async function wrkRun(cmd: Extract<Command, { op: 'realtime' }>, body: (i: number) => string, ahead: number, ready: () => Promise<void>): Promise<LoadResult> {
  if (cmd.durationMs === undefined || cmd.rate !== undefined) throw new Error('wrk runs timed closed-loop runs only');
  const bodies = Array.from({ length: ahead }, (_, i) => body(i));
  await ready();
  const r = await runWrk({ ...cmd.target, bodies, connections: cmd.connections, durationMs: cmd.durationMs, ...(cmd.clientCpu ? { cpu: cmd.clientCpu } : {}) });
  const end = now();
  const ok = r.requests - r.non2xx;
  const statuses: Record<string, number> = { '2xx': ok };
  if (r.non2xx > 0) statuses.other = r.non2xx;
  if (r.socketErrors > 0) statuses.error = r.socketErrors;
  const errors = r.non2xx + r.socketErrors > 0 ? [`wrk: ${r.non2xx} answers not 2xx, ${r.socketErrors} socket errors`] : [];
  // wrk's own duration: its start-up (reading the bodies) is not the server's time.
  return { start: end - r.durationMs, end, requests: r.requests, records: ok, statuses, errors, latencies: [r.p50Ms, r.p99Ms], unanswered: r.sent - r.requests };
}

const go = new Map<number, () => void>();
process.on('message', (msg: { id: number; cmd?: Command; go?: true }) => {
  if (msg.go) {
    go.get(msg.id)?.();
    go.delete(msg.id);
    return;
  }
  const ready = () =>
    new Promise<void>((resolve) => {
      go.set(msg.id, resolve);
      process.send!({ id: msg.id, ready: true });
    });
  run(msg.cmd!, ready).then(
    (result) => process.send!({ id: msg.id, result }),
    (err: Error) => process.send!({ id: msg.id, error: err.stack ?? String(err) }),
  );
});
process.on('disconnect', () => process.exit(0));
