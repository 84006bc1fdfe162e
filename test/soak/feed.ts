/**
 * The feed's own memory over a long run, as a user meets it: `telematics feed` (the CLI, a process of
 * its own) against a receiver that acknowledges everything at once, so that nothing but the feed sets
 * the pace. Every `--sample-every` the feed's RSS (from /proc) and the records acknowledged since the
 * last sample; at the end the targets of issue 23: RSS at most 300 MB, growth between 30 s and 2 min at
 * most 40 MB, the rate steady within 5 % (each sample's rate against the run's mean, after 30 s).
 *
 *   npm run soak:feed -- [--rate 20000] [--duration 3m] [--bulk-size 200] [--mode bulk] [--vehicles 5000]
 *                        [--sample-every 5s] [--csv docs/soak/feed.csv]
 * Exits 1 when a target is missed or the feed fails.
 */
import { spawn } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDurationFlag } from '../../src/cli/args.js';
import { success } from '../../src/telemetry/envelope.js';
import { rssMiB } from './sample.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '20000' },
    duration: { type: 'string', default: '3m' },
    'bulk-size': { type: 'string', default: '200' },
    mode: { type: 'string', default: 'bulk' },
    vehicles: { type: 'string', default: '5000' },
    'sample-every': { type: 'string', default: '5s' },
    csv: { type: 'string' },
  },
});
const durationMs = parseDurationFlag(values.duration, '--duration', 'soak:feed');
const everyMs = parseDurationFlag(values['sample-every'], '--sample-every', 'soak:feed');
const say = (line: string) => process.stderr.write(`[feed-soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

// The acknowledging receiver: counts the records of each delivery and answers as the service does.
let acked = 0;
let deliveries = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { bulkData?: unknown[] };
    const n = Array.isArray(body.bulkData) ? body.bulkData.length : 1;
    acked += n;
    deliveries++;
    const answer = JSON.stringify(success({ deliveryId: `d${deliveries}`, accepted: n, rejected: [] }, `accepted ${n} record(s)`));
    res.writeHead(202, { 'content-type': 'application/json', 'x-delivery-id': `d${deliveries}` }).end(answer);
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const args = ['--import', 'tsx', 'src/cmd/telematics.ts', 'feed', '--url', url, '--mode', values.mode, '--rate', values.rate, '--bulk-size', values['bulk-size'], '--duration', values.duration, '--vehicles', values.vehicles, '--concurrency', '8', '--json'];
say(`telematics ${args.slice(3).join(' ')}`);
const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PUSH_TOKEN: 'feed-soak-token-0123456789' } });
let stdout = '';
child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
child.stderr.resume();
const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? 1)));

interface Sample { atS: number; rssMiB: number; records: number; rate: number }
const samples: Sample[] = [];
const t0 = Date.now();
let last = 0;
const timer = setInterval(() => {
  if (child.exitCode !== null) return;
  const atS = (Date.now() - t0) / 1000;
  const records = acked - last;
  last = acked;
  const s = { atS, rssMiB: rssMiB(child.pid) ?? NaN, records, rate: records / (everyMs / 1000) };
  samples.push(s);
  say(`${atS.toFixed(0)} s: feed RSS ${s.rssMiB.toFixed(0)} MiB, ${Math.round(s.rate)} records/s acknowledged`);
}, everyMs);
const code = await exited;
clearInterval(timer);
server.close();

const at = (s: number) => samples.reduce((best, x) => (Math.abs(x.atS - s) < Math.abs(best.atS - s) ? x : best), samples[0]!);
const steady = samples.filter((s) => s.atS > 30 && s.atS < durationMs / 1000 - everyMs / 1000);
const mean = steady.reduce((a, s) => a + s.rate, 0) / Math.max(1, steady.length);
const worst = steady.reduce((w, s) => Math.max(w, Math.abs(s.rate - mean) / mean), 0);
const maxRss = Math.max(...samples.map((s) => s.rssMiB));
const growth = durationMs >= 120_000 ? at(120).rssMiB - at(30).rssMiB : NaN;
const summary = (() => {
  try {
    return JSON.parse(stdout) as Record<string, unknown>;
  } catch {
    return undefined;
  }
})();
const checks = {
  'feed exited 0 and printed its summary': code === 0 && summary !== undefined,
  'RSS ≤ 300 MB throughout': maxRss * 1.048576 <= 300,
  'RSS growth 30 s → 2 min ≤ 40 MB': Number.isNaN(growth) || growth * 1.048576 <= 40,
  'rate steady within 5 % of the mean after 30 s': worst <= 0.05,
};
if (values.csv) {
  mkdirSync(dirname(values.csv), { recursive: true });
  writeFileSync(values.csv, `seconds,feed_rss_mib,records_acknowledged,records_per_second\n${samples.map((s) => `${s.atS.toFixed(1)},${s.rssMiB.toFixed(1)},${s.records},${s.rate.toFixed(0)}`).join('\n')}\n`);
}
const report = {
  rate: Number(values.rate), durationMs, mode: values.mode, bulkSize: Number(values['bulk-size']), acknowledged: acked, deliveries,
  feedSummary: summary, maxRssMiB: Math.round(maxRss), rssAt30sMiB: Math.round(at(30).rssMiB), rssAt2mMiB: durationMs >= 120_000 ? Math.round(at(120).rssMiB) : null,
  meanRate: Math.round(mean), worstDeviation: `${(worst * 100).toFixed(1)} %`, checks,
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
process.exit(Object.values(checks).every(Boolean) ? 0 : 1);
