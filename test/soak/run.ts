/**
 * npm run soak -- [--duration 5m] [--rate 2000] [--workers 3] [--vehicles 200] [--bulk-size 200] [--mode mixed]
 *                 [--kill-every 10s | 0] [--seed 1] [--sample-every 1m] [--invalid-ratio 0] [--settle 2m]
 *                 [--check-window 30s] [--env KEY=VALUE,…] [--out docs/soak]
 *
 * Progress on stderr (one line per sample), the JSON report on stdout, the samples as
 * <out>/soak-<time>.csv and .svg (and the report as .json beside them). Exits 0 when every check
 * passed (zero loss, the counts agree), 1 otherwise.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { DURATION_HINT, parseDuration } from '../../src/config/duration.js';
import type { FeedMode } from '../../src/upstream/emulator/feed.js';
import { csvHeader, csvRow, writeSamples } from './report.js';
import { packVerdicts } from './packs.js';
import { runSoak, type SoakReport } from './soak.js';

const ms = (v: string): number => {
  const d = parseDuration(v);
  if (d === undefined) throw new Error(`not a duration: ${v}; ${DURATION_HINT}`);
  return d;
};

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5m' },
    rate: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '3' },
    vehicles: { type: 'string', default: '200' },
    'bulk-size': { type: 'string', default: '200' },
    mode: { type: 'string', default: 'mixed' },
    'kill-every': { type: 'string', default: '10s' },
    seed: { type: 'string', default: '1' },
    'sample-every': { type: 'string' },
    'invalid-ratio': { type: 'string', default: '0' },
    settle: { type: 'string', default: '2m' },
    'check-window': { type: 'string', default: '30s' },
    env: { type: 'string', default: '' },
    out: { type: 'string', default: 'docs/soak' },
  },
});

const mode = values.mode as FeedMode;
if (!['bulk', 'realtime', 'mixed'].includes(mode)) throw new Error(`--mode must be bulk, realtime or mixed, not ${values.mode}`);
const env = Object.fromEntries(
  values.env
    .split(',')
    .filter((kv) => kv.trim() !== '')
    .map((kv) => {
      const i = kv.indexOf('=');
      if (i < 1) throw new Error(`--env takes KEY=VALUE,…; got ${kv}`);
      return [kv.slice(0, i).trim(), kv.slice(i + 1)];
    }),
);
const say = (line: string) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const startedAt = new Date();
const base = join(values.out, `soak-${startedAt.toISOString().slice(0, 16).replace(/:/g, '-')}`);
// The CSV grows a line per sample as the run goes, so that an interrupted run keeps what it sampled.
const labels = ['receiver', ...Array.from({ length: Number(values.workers) }, (_, i) => `worker-${i + 1}`)];
mkdirSync(dirname(base), { recursive: true });
writeFileSync(`${base}.csv`, `${csvHeader(labels)}\n`);
say(`samples go to ${base}.csv as they are taken`);
const { report, samples } = await runSoak({
  durationMs: ms(values.duration),
  rate: Number(values.rate),
  workers: Number(values.workers),
  vehicles: Number(values.vehicles),
  bulkSize: Number(values['bulk-size']),
  mode,
  invalidRatio: Number(values['invalid-ratio']),
  killEveryMs: ms(values['kill-every']),
  seed: Number(values.seed),
  ...(values['sample-every'] ? { sampleEveryMs: ms(values['sample-every']) } : {}),
  settleMs: ms(values.settle),
  checkWindowMs: ms(values['check-window']),
  env,
  log: say,
  onSample: (s) => appendFileSync(`${base}.csv`, `${csvRow(s, labels)}\n`),
});

const o = report.options;
const title = `Soak ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC: ${values.duration} at ${o.rate} records/s, ${o.vehicles} vehicles, ${o.mode} (bulk ${o.bulkSize}), ${o.workers} worker process(es), ${o.killEveryMs > 0 ? `a worker killed every ~${values['kill-every']}` : 'no kills'}`;
const f = report.figures;
const subtitle = [
  `Redis appendonly ${report.redis.appendonly}, appendfsync ${report.redis.appendfsync}. ${report.acknowledged} records acknowledged, ${report.verified} verified in InfluxDB; missing ${report.missing}, wrong ${report.wrong}, extra ${report.extra}. ${report.ok ? 'All checks passed.' : 'A CHECK FAILED.'}`,
  `Max RSS (MiB): ${Object.entries(f.maxRssMiB).map(([k, v]) => `${k} ${v ?? '–'}`).join(', ')}. Redis used_memory ${f.redisUsedMiB ? `${f.redisUsedMiB.min}–${f.redisUsedMiB.max} MiB` : '–'}.`,
  `Heap trend (${f.trendWindows.note}): ${Object.entries(f.heapTrend).map(([k, t]) => `${k} ${t ? `${t.changePct > 0 ? '+' : ''}${t.changePct} %` : '–'}`).join(', ')}.`,
];
const files = writeSamples(base, samples, title, subtitle);
writeFileSync(`${base}.json`, `${JSON.stringify({ ...report, files }, null, 2)}\n`);

process.stdout.write(`${JSON.stringify({ ...report, files: { ...files, json: `${base}.json` } }, null, 2)}\n`);
printFigures(report, files);
process.exit(report.ok ? 0 : 1);

function printFigures(r: SoakReport, out: { csv: string; svg: string }): void {
  say(`samples: ${r.samples} → ${out.csv}, ${out.svg}`);
  for (const [k, v] of Object.entries(r.figures.maxRssMiB)) say(`max RSS ${k}: ${v ?? '–'} MiB`);
  for (const [k, t] of Object.entries(r.figures.heapTrend)) {
    say(`heap trend ${k}: ${t ? `${t.earlyMeanMiB} → ${t.lateMeanMiB} MiB (${t.changePct > 0 ? '+' : ''}${t.changePct} %)` : 'no samples in both windows'}`);
  }
  say(`heap trend windows: ${r.figures.trendWindows.note} (early ${r.figures.trendWindows.earlyMin.join('–')} min, late ${r.figures.trendWindows.lateMin.join('–')} min)`);
  say(`redis used_memory: ${r.figures.redisUsedMiB ? `min ${r.figures.redisUsedMiB.min} MiB, max ${r.figures.redisUsedMiB.max} MiB` : '–'}`);
  say(`accepted rate: mean ${r.figures.meanRatePerS} records/s; the checker held at most ${r.figures.maxCheckerPending} records`);
  const ev = r.vehicleEvents;
  if (ev)
    say(
      `vehicle events derived: ${ev.events} in all (the counter's series summed), ${ev.trips} trips, ${ev.chargingSessions} charging sessions, ${ev.ignitionsOn} ignitions on, ${ev.stops} stops, ${ev.idling} idlings, ${ev.overspeeds} overspeeds, ${ev.movedWhileOff} moved while off, ${ev.geofencesEntered} geofences entered, ${ev.batterySwaps} battery swaps, ${ev.socLow} batteries low, ${ev.socDrains} drains while parked, ${ev.fuelDrops} fuel drops, ${ev.refuels} refuels; ${ev.late} records late, ${ev.duplicate} seen twice`,
    );
  if (r.packs) say(packVerdicts(r.packs).counts);
  for (const t of r.targets) say(`target ${t.met === null ? 'n/a ' : t.met ? 'met ' : 'MISSED'} ${t.name}: ${t.detail}`);
  for (const c of r.checks) say(`check ${c.ok === null ? 'n/a ' : c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  say(r.ok ? 'zero loss, counts agree' : 'A CHECK FAILED');
}
