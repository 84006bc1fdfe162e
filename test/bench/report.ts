/** The benchmark's table: one row a measure, its reference, ratio and target; and where the CPU went. */
import { BenchData } from './data.js';
import { OTHERS } from './cpu.js';
import { CLIENT, P } from './options.js';
import { pct } from './points.js';
import { median } from './ab.js';

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a';
export const mb = (b: number): string => `${fmt(b / 1_048_576, 0)} MiB`;

export interface Row {
  n: string;
  what: string;
  value: string;
  reference: string;
  ratio: string;
  target: string;
  ok?: boolean;
}

export function table(rows: Row[]): string {
  const head: Row = { n: '#', what: 'Measure', value: 'Result', reference: 'Compared with', ratio: 'Ratio', target: 'Target' };
  const cols: Array<keyof Omit<Row, 'ok'>> = ['n', 'what', 'value', 'reference', 'ratio', 'target'];
  const cell = (r: Row, c: keyof Omit<Row, 'ok'>) => (c === 'target' && r.ok !== undefined ? `${r.target} ${r.ok ? 'met' : 'NOT MET'}` : r[c]);
  const lines = [head, ...rows].map((r) => `| ${cols.map((c) => cell(r, c)).join(' | ')} |`);
  lines.splice(1, 0, `|${cols.map(() => '---').join('|')}|`);
  return lines.join('\n');
}

export const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined ? `${fmt((100 * a) / b)} %` : '');

export interface Latency {
  rate: number;
  count: number;
  /** Push → queryable, ms, sorted. */
  latencies: number[];
  /** Push → 2xx, ms, sorted. */
  acks: number[];
}

export interface Measured {
  ceilingRate?: number;
  ceilingRuns: number[];
  /**
   * `--store-rounds`: per round, the ceiling's and the service's bulk rate, each on a fresh store, and
   * the bulk run's CPU per record: receiver and workers, influxd; and influxd's on the ceiling's writes.
   */
  storeRounds: Array<{ ceiling: number; bulk: number; serviceUs: number; influxdUs: number; ceilingInfluxdUs: number; ref?: number; refServiceUs?: number; refInfluxdUs?: number }>;
  bulkRate?: number;
  rtRate?: number;
  /** With `--ab`, each realtime round: bare Hono's accept rate, this build's and the ref's end-to-end rates. */
  rtRounds: Array<{ bare: number; receiver: number; ref: number }>;
  /** Accept rates of each round: bare Hono, the receiver, and with `--ab` the ref's receiver. */
  acceptRounds: Array<{ bare: number; receiver: number; ref?: number }>;
  rtLatency?: Latency;
  bulkLatency?: Latency;
  bytesPerRecord?: number;
  /** Run in the pinned topology (--pin), where the bulk target is 90 % of the ceiling (80 % shared). */
  pinned?: boolean;
  /** JSON.parse of the same bulk pushes, core-µs per record. */
  jsonParseUsPerRecord?: number;
  /** gzip (zlib's default level) of the worker's 5000-line write bodies: CPU per line and bytes kept. */
  gzip?: { usPerLine: number; keptShare: number };
  jobDataBytes?: number;
  /** Jobs the receiver queued in phase 2a, by payload form. */
  bulkJobs?: { text: number; deflated: number };
  /** Per phase: records, wall seconds, CPU seconds per process. */
  cpu: Array<{ phase: string; records: number; seconds: number; cpu: Map<string, number> }>;
}

type CpuEntry = Measured['cpu'][number];
/** The service's processes of this build (the receiver and workers), and of the ref's (`--ab`). */
export const ours = (name: string): boolean => !name.includes('(ref)') && (name === 'receiver' || name.startsWith('worker'));
export const refs = (name: string): boolean => name === 'receiver (ref)' || name.startsWith('worker (ref)');
/** Core-µs per record that the processes `which` spent in one metered phase. */
export function cpuUs(c: CpuEntry, which: (name: string) => boolean): number {
  return ([...c.cpu].filter(([name]) => which(name)).reduce((sum, [, sec]) => sum + sec, 0) * 1e6) / c.records;
}

export interface Rss {
  now: number;
  peak: number;
}

/** The accept round with the median ratio, so its two rates are what that ratio compares. */
function medianRound(m: Measured): { bare: number; receiver: number } | undefined {
  const byRatio = [...m.acceptRounds].sort((a, b) => a.receiver / a.bare - b.receiver / b.bare);
  return byRatio[Math.floor((byRatio.length - 1) / 2)];
}

/** The table's rows, for what this run measured. */
export function resultRows(m: Measured, receiverRss: Rss, workerRss: Rss[]): Row[] {
  const rows: Row[] = [];
  const ceilingRef = m.ceilingRate === undefined ? 'ceiling not measured' : `ceiling ${fmt(m.ceilingRate)}/s`;
  if (m.ceilingRate !== undefined) {
    rows.push({
      n: '1',
      what: `Storage ceiling: the same records as line protocol (src/ingest/flatten), written straight to InfluxDB through the same /api/v2/write front, 5000-line batches, ${P.ceilingConcurrency} concurrent, until queryable; the higher of a run before and a run after 2a`,
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
      target: m.pinned ? '≥ 90 %' : '≥ 80 %',
      ok: m.ceilingRate === undefined ? undefined : m.bulkRate >= (m.pinned ? 0.9 : 0.8) * m.ceilingRate,
    });
  }
  if (m.storeRounds.length > 0) {
    const sr = m.storeRounds;
    const med = (f: (r: (typeof sr)[number]) => number) => median(sr.map(f));
    rows.push({
      n: '2a rounds',
      what: `End to end, bulk (${P.bulkSize}-record pushes, ${P.bulkConcurrency} at a time) against the ceiling (1), ${sr.length} rounds, each run on a fresh influxd, alternated; medians of the per-round ratios`,
      value: `bulk ${fmt(med((r) => r.bulk))} records/s`,
      reference: `ceiling ${fmt(med((r) => r.ceiling))} records/s (rounds bulk / ceiling: ${sr.map((r) => fmt(r.bulk / r.ceiling, 3)).join(', ')})`,
      ratio: fmt(med((r) => r.bulk / r.ceiling), 3),
      target: m.pinned ? '≥ 0.90' : '≥ 0.80',
      ok: med((r) => r.bulk / r.ceiling) >= (m.pinned ? 0.9 : 0.8),
    });
    rows.push({
      n: '6b rounds',
      what: 'Service CPU per bulk record (receiver and workers) against influxd’s on the same points, per store round; medians of the per-round ratios',
      value: `${fmt(med((r) => r.serviceUs), 1)} core-µs/record`,
      reference: `influxd ${fmt(med((r) => r.influxdUs), 1)} core-µs/record (${fmt(med((r) => r.ceilingInfluxdUs), 1)} on the ceiling's writes; rounds: ${sr.map((r) => fmt(r.serviceUs / r.influxdUs, 2)).join(', ')})`,
      ratio: `${fmt(med((r) => r.serviceUs / r.influxdUs), 2)} ×`,
      target: '≤ 0.5 ×',
      ok: med((r) => r.serviceUs / r.influxdUs) <= 0.5,
    });
    const ab = sr.filter((r): r is (typeof sr)[number] & { ref: number; refServiceUs: number; refInfluxdUs: number } => r.ref !== undefined);
    if (ab.length > 0) {
      const medAb = (f: (r: (typeof ab)[number]) => number) => median(ab.map(f));
      rows.push({
        n: '2a A/B',
        what: `The same bulk run, this build against the ref's (--ab), ${ab.length} rounds, each on a fresh influxd; medians of the per-round ratios`,
        value: `this / ceiling ${fmt(medAb((r) => r.bulk / r.ceiling), 3)}; service ${fmt(medAb((r) => r.serviceUs), 1)} core-µs/record`,
        reference: `ref / ceiling ${fmt(medAb((r) => r.ref / r.ceiling), 3)}; ref's service ${fmt(medAb((r) => r.refServiceUs), 1)} core-µs/record (rounds this / ref: ${ab.map((r) => fmt(r.bulk / r.ref, 3)).join(', ')})`,
        ratio: `this / ref ${fmt(medAb((r) => r.bulk / r.ref), 3)}; CPU ${fmt(medAb((r) => r.serviceUs / r.refServiceUs), 3)}`,
        target: '≥ 0.97 of the ref',
        ok: medAb((r) => r.bulk / r.ref) >= 0.97,
      });
    }
  }
  const bareRate = medianRound(m)?.bare;
  if (m.rtRate !== undefined) {
    rows.push({
      n: '2b',
      what: `End to end, realtime: single records from ${P.senders} concurrent senders, until queryable`,
      value: `${fmt(m.rtRate)} records/s`,
      reference: bareRate === undefined ? ceilingRef : `bare Hono accepts ${fmt(bareRate)} req/s (3); ${ceilingRef}`,
      ratio: bareRate === undefined ? ratio(m.rtRate, m.ceilingRate) : ratio(m.rtRate, bareRate),
      target: bareRate === undefined ? '' : '≥ 60 % of bare',
      ...(bareRate === undefined ? {} : { ok: m.rtRate >= 0.6 * bareRate }),
    });
  }
  if (m.rtRounds.length > 0) {
    const rt = m.rtRounds;
    const med = (f: (r: (typeof rt)[number]) => number) => median(rt.map(f));
    rows.push({
      n: '2b A/B',
      what: `The same, this build against the ref's (--ab), ${rt.length} rounds: bare Hono's accept rate, then the two end to end in turns; medians of the per-round ratios`,
      value: `this / bare ${fmt(med((r) => r.receiver / r.bare), 3)}`,
      reference: `ref / bare ${fmt(med((r) => r.ref / r.bare), 3)} (rounds this / ref: ${rt.map((r) => fmt(r.receiver / r.ref, 3)).join(', ')})`,
      ratio: `this / ref ${fmt(med((r) => r.receiver / r.ref), 3)}`,
      target: '≥ 0.60 of bare; ≥ 0.97 of the ref',
      ok: med((r) => r.receiver / r.bare) >= 0.6 && med((r) => r.receiver / r.ref) >= 0.97,
    });
  }
  const bulkCpu = m.cpu.find((c) => c.phase === 'bulk');
  if (bulkCpu && m.jsonParseUsPerRecord !== undefined) {
    const perRecord = cpuUs(bulkCpu, ours);
    rows.push({
      n: '6',
      what: 'Service CPU per bulk record (receiver and workers, phase 2a) against the floor: JSON.parse of the same pushes',
      value: `${fmt(perRecord, 1)} core-µs/record`,
      reference: `JSON.parse ${fmt(m.jsonParseUsPerRecord, 2)} core-µs/record`,
      ratio: `${fmt(perRecord / m.jsonParseUsPerRecord, 1)} ×`,
      target: '≤ 4 ×',
      ok: perRecord <= 4 * m.jsonParseUsPerRecord,
    });
  }
  if (bulkCpu?.cpu.get('influxd')) {
    const perRecord = cpuUs(bulkCpu, ours);
    const influxdPerRecord = cpuUs(bulkCpu, (name) => name === 'influxd');
    rows.push({
      n: '6b',
      what: 'Service CPU per bulk record (receiver and workers, phase 2a) against influxd’s CPU per record of the same points, same phase',
      value: `${fmt(perRecord, 1)} core-µs/record`,
      reference: `influxd ${fmt(influxdPerRecord, 1)} core-µs/record${m.bulkJobs ? `; jobs deflated: ${m.bulkJobs.deflated} of ${m.bulkJobs.text + m.bulkJobs.deflated}` : ''}`,
      ratio: `${fmt(perRecord / influxdPerRecord, 2)} ×`,
      target: '≤ 0.5 ×',
      ok: perRecord <= 0.5 * influxdPerRecord,
    });
  }
  if (m.gzip) {
    rows.push({
      n: '7',
      what: 'gzip of the worker’s 5000-line InfluxDB write bodies (INFLUX_CONTENT_ENCODING=gzip), zlib’s default level',
      value: `${fmt(m.gzip.usPerLine, 2)} core-µs/line`,
      reference: `bodies shrink to ${fmt(m.gzip.keptShare * 100, 1)} % of their bytes`,
      ratio: `${fmt(1 / m.gzip.keptShare, 1)} × fewer bytes`,
      target: '',
    });
  }
  const mid = medianRound(m);
  if (mid) {
    const rounds = m.acceptRounds.map((r) => ratio(r.receiver, r.bare)).join(', ');
    rows.push({
      n: '3',
      what: `Receiver: realtime pushes answered 202, each after Redis confirmed its enqueue, ${P.senders} senders (${CLIENT === 'wrk' ? 'wrk' : 'the load generator'}${m.pinned ? ' on CPU 1' : ''}), no worker running; the median of ${m.acceptRounds.length} alternating rounds`,
      value: `${fmt(mid.receiver)} req/s`,
      reference: `bare Hono ${fmt(mid.bare)} req/s (rounds: ${rounds})`,
      ratio: ratio(mid.receiver, mid.bare),
      target: '≥ 60 %',
      ok: mid.receiver >= 0.6 * mid.bare,
    });
    const ab = m.acceptRounds.filter((r): r is { bare: number; receiver: number; ref: number } => r.ref !== undefined);
    if (ab.length > 0) {
      const med = (f: (r: (typeof ab)[number]) => number) => median(ab.map(f));
      rows.push({
        n: '3 A/B',
        what: `The same, this build against the ref's (--ab), ${ab.length} rounds: bare, then the two in turns; medians of the per-round ratios`,
        value: `this / bare ${fmt(med((r) => r.receiver / r.bare), 3)}`,
        reference: `ref / bare ${fmt(med((r) => r.ref / r.bare), 3)} (rounds this / ref: ${ab.map((r) => fmt(r.receiver / r.ref, 3)).join(', ')})`,
        ratio: `this / ref ${fmt(med((r) => r.receiver / r.ref), 3)}`,
        target: '≥ 0.97 of the ref',
        ok: med((r) => r.receiver / r.ref) >= 0.97,
      });
    }
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

  return rows;
}

/** Where the CPU went, per phase: core-milliseconds per 1000 records (per 1000 requests for accept). */
export function cpuTable(rows: Measured['cpu']): string {
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

