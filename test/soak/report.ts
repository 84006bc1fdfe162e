/**
 * A soak's samples as CSV and as a picture (hand-written SVG: memory of the processes, Redis, the
 * accepted rate and the queue backlog over time), and the figures the targets of #23 are read from: max RSS per process, the heap trend
 * (mean of the last ten minutes against minutes 5–15), Redis used_memory min and max.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ProcessSample } from './sample.js';

export interface SoakSample {
  /** ISO time of the sample. */
  at: string;
  /** Seconds since the feed started. */
  elapsedS: number;
  /** Records the feed saw acknowledged so far. */
  acknowledged: number;
  /** Of those, per second over the interval since the previous sample. */
  ratePerS: number;
  /** The receiver's telematics_records_accepted_total. */
  accepted: number | null;
  queueWaiting: number | null;
  queueActive: number | null;
  queueDelayed: number | null;
  redisUsedMiB: number | null;
  /** The soak process itself: the feed and the checker. */
  soak: ProcessSample;
  /** Acknowledged records the checker holds (not yet found in InfluxDB), and those it verified so far. */
  checkerPending: number;
  verified: number;
  /** Each service process by role: receiver, worker-1, worker-2, … (a worker's replacement keeps its label). */
  procs: Record<string, ProcessSample>;
}

export interface Trend {
  earlyMeanMiB: number;
  lateMeanMiB: number;
  /** (late − early) / early, in %. */
  changePct: number;
}

export interface SoakFigures {
  /** Highest RSS seen per service process, and of the soak process. */
  maxRssMiB: Record<string, number | null>;
  /** Heap used: the late window's mean against the early one's, per process; null without samples in both. */
  heapTrend: Record<string, Trend | null>;
  trendWindows: { earlyMin: [number, number]; lateMin: [number, number]; scaled: boolean; note: string };
  redisUsedMiB: { min: number; max: number } | null;
  /** Mean accepted rate over the samples after the first. */
  meanRatePerS: number;
  maxCheckerPending: number;
}

const round = (v: number, digits = 1): number => Math.round(v * 10 ** digits) / 10 ** digits;
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The trend windows of a run of `durationMin` minutes: minutes 5–15 and the last 10; for a run
 * shorter than an hour both scaled by duration / 60 (a 3-minute run: 0.25–0.75 and 2.5–3).
 */
export function trendWindows(durationMin: number): SoakFigures['trendWindows'] {
  if (durationMin >= 60) {
    return { earlyMin: [5, 15], lateMin: [round(durationMin - 10, 2), round(durationMin, 2)], scaled: false, note: 'minutes 5–15 against the last 10 minutes' };
  }
  const k = durationMin / 60;
  return {
    earlyMin: [round(5 * k, 2), round(15 * k, 2)],
    lateMin: [round(durationMin - 10 * k, 2), round(durationMin, 2)],
    scaled: true,
    note: `a ${round(durationMin, 2)}-minute run: the hour's windows (minutes 5–15, the last 10) scaled by ${round(k, 3)}`,
  };
}

export function figures(samples: readonly SoakSample[], durationMin: number): SoakFigures {
  const labels = processLabels(samples);
  const windows = trendWindows(durationMin);
  const inWindow = (s: SoakSample, [from, to]: [number, number]) => s.elapsedS / 60 >= from && s.elapsedS / 60 <= to;
  const series = (pick: (s: SoakSample) => ProcessSample | undefined, field: keyof ProcessSample, win?: [number, number]): number[] =>
    samples.flatMap((s) => {
      const v = pick(s)?.[field];
      return v !== null && v !== undefined && (!win || inWindow(s, win)) ? [v] : [];
    });
  const pickers: Array<[string, (s: SoakSample) => ProcessSample | undefined]> = [...labels.map((l): [string, (s: SoakSample) => ProcessSample | undefined] => [l, (s) => s.procs[l]]), ['soak', (s) => s.soak]];
  const maxRssMiB: Record<string, number | null> = {};
  const heapTrend: Record<string, Trend | null> = {};
  for (const [label, pick] of pickers) {
    const rss = series(pick, 'rssMiB');
    maxRssMiB[label] = rss.length ? round(Math.max(...rss)) : null;
    const early = series(pick, 'heapUsedMiB', windows.earlyMin);
    const late = series(pick, 'heapUsedMiB', windows.lateMin);
    heapTrend[label] =
      early.length && late.length
        ? { earlyMeanMiB: round(mean(early)), lateMeanMiB: round(mean(late)), changePct: round(((mean(late) - mean(early)) / mean(early)) * 100) }
        : null;
  }
  const redis = samples.flatMap((s) => (s.redisUsedMiB === null ? [] : [s.redisUsedMiB]));
  const rates = samples.slice(1).map((s) => s.ratePerS);
  return {
    maxRssMiB,
    heapTrend,
    trendWindows: windows,
    redisUsedMiB: redis.length ? { min: round(Math.min(...redis), 2), max: round(Math.max(...redis), 2) } : null,
    meanRatePerS: rates.length ? Math.round(mean(rates)) : 0,
    maxCheckerPending: samples.reduce((m, s) => Math.max(m, s.checkerPending), 0),
  };
}

/** Service process labels in the order first seen (receiver, worker-1, …). */
export function processLabels(samples: readonly SoakSample[]): string[] {
  const seen = new Set<string>();
  for (const s of samples) for (const l of Object.keys(s.procs)) seen.add(l);
  return [...seen];
}

const num = (v: number | null, digits = 1): string => (v === null ? '' : String(round(v, digits)));

/** The CSV's header line, for service processes `labels` (receiver, worker-1, …). */
export function csvHeader(labels: readonly string[]): string {
  return [
    'time', 'elapsed_s', 'acknowledged', 'rate_per_s', 'accepted', 'queue_waiting', 'queue_active', 'queue_delayed',
    'redis_used_mib', 'soak_rss_mib', 'soak_heap_mib', 'checker_pending', 'verified',
    ...labels.flatMap((l) => [`${l}_rss_mib`, `${l}_heap_mib`, `${l}_old_space_mib`, `${l}_major_gcs`]),
  ].join(',');
}

/** One sample as a CSV line under `csvHeader(labels)`. */
export function csvRow(s: SoakSample, labels: readonly string[]): string {
  return [
    s.at, num(s.elapsedS), String(s.acknowledged), num(s.ratePerS, 0), num(s.accepted, 0), num(s.queueWaiting, 0), num(s.queueActive, 0), num(s.queueDelayed, 0),
    num(s.redisUsedMiB, 2), num(s.soak.rssMiB), num(s.soak.heapUsedMiB), String(s.checkerPending), String(s.verified),
    ...labels.flatMap((l) => [num(s.procs[l]?.rssMiB ?? null), num(s.procs[l]?.heapUsedMiB ?? null), num(s.procs[l]?.oldSpaceMiB ?? null), String(s.procs[l]?.majorGcs ?? '')]),
  ].join(',');
}

export function toCsv(samples: readonly SoakSample[]): string {
  const labels = processLabels(samples);
  return `${[csvHeader(labels), ...samples.map((s) => csvRow(s, labels))].join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// SVG

interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: Array<[number, number | null]>;
}

interface Panel {
  title: string;
  unit: string;
  series: Series[];
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Round tick steps (1, 2, 5 × 10^k) covering [0, max]. */
function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) out.push(round(v, 6));
  if (out[out.length - 1]! < max) out.push(round(out[out.length - 1]! + step, 6));
  return out;
}

const fmt = (v: number): string => (Math.abs(v) >= 1000 ? `${round(v / 1000, 1)}k` : String(round(v, 2)));

function panelSvg(panel: Panel, top: number, width: number, height: number, xMax: number): string {
  const left = 70;
  const right = 230;
  const plotW = width - left - right;
  const plotH = height - 50;
  const y0 = top + 30;
  const values = panel.series.flatMap((s) => s.points.flatMap(([, v]) => (v === null ? [] : [v])));
  const yTicks = ticks(Math.max(0, ...values));
  const yMax = yTicks[yTicks.length - 1]!;
  const xTicks = ticks(xMax, 8);
  const xEnd = xTicks[xTicks.length - 1]!;
  const X = (x: number) => left + (x / xEnd) * plotW;
  const Y = (y: number) => y0 + plotH - (y / yMax) * plotH;
  const parts: string[] = [];
  parts.push(`<text x="${left}" y="${top + 18}" font-size="14" font-weight="bold">${esc(panel.title)}</text>`);
  parts.push(`<rect x="${left}" y="${y0}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`);
  for (const t of yTicks) {
    parts.push(`<line x1="${left}" x2="${left + plotW}" y1="${Y(t)}" y2="${Y(t)}" stroke="#eee"/>`);
    parts.push(`<text x="${left - 6}" y="${Y(t) + 4}" font-size="11" text-anchor="end">${fmt(t)}</text>`);
  }
  for (const t of xTicks) {
    parts.push(`<line x1="${X(t)}" x2="${X(t)}" y1="${y0 + plotH}" y2="${y0 + plotH + 4}" stroke="#999"/>`);
    parts.push(`<text x="${X(t)}" y="${y0 + plotH + 16}" font-size="11" text-anchor="middle">${fmt(t)}</text>`);
  }
  parts.push(`<text x="${left + plotW / 2}" y="${y0 + plotH + 32}" font-size="11" text-anchor="middle">minutes</text>`);
  parts.push(`<text x="${16}" y="${y0 + plotH / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 16 ${y0 + plotH / 2})">${esc(panel.unit)}</text>`);
  panel.series.forEach((s, i) => {
    // A gap (null) breaks the line: a worker being replaced, a scrape that failed.
    const runs: string[] = [];
    let run: string[] = [];
    for (const [x, v] of s.points) {
      if (v === null) {
        if (run.length) runs.push(run.join(' '));
        run = [];
      } else run.push(`${round(X(x), 1)},${round(Y(v), 1)}`);
    }
    if (run.length) runs.push(run.join(' '));
    const dash = s.dashed ? ' stroke-dasharray="5,3"' : '';
    for (const r of runs) {
      parts.push(r.includes(' ')
        ? `<polyline points="${r}" fill="none" stroke="${s.color}" stroke-width="1.5"${dash}/>`
        : `<circle cx="${r.split(',')[0]}" cy="${r.split(',')[1]}" r="2" fill="${s.color}"/>`);
    }
    const ly = y0 + 8 + i * 16;
    parts.push(`<line x1="${left + plotW + 12}" x2="${left + plotW + 36}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`);
    parts.push(`<text x="${left + plotW + 42}" y="${ly + 4}" font-size="11">${esc(s.name)}</text>`);
  });
  return parts.join('\n');
}

/** Memory, Redis, accepted rate and queue backlog over time, one panel each, with `title` and `subtitle` lines above. */
export function toSvg(samples: readonly SoakSample[], title: string, subtitle: readonly string[] = []): string {
  const labels = processLabels(samples);
  const x = (s: SoakSample) => s.elapsedS / 60;
  const memory: Series[] = [];
  const procs: Array<[string, (s: SoakSample) => ProcessSample | undefined]> = [...labels.map((l): [string, (s: SoakSample) => ProcessSample | undefined] => [l, (s) => s.procs[l]]), ['feed (soak process)', (s) => s.soak]];
  procs.forEach(([name, pick], i) => {
    const color = PALETTE[i % PALETTE.length]!;
    memory.push({ name: `${name} RSS`, color, points: samples.map((s) => [x(s), pick(s)?.rssMiB ?? null]) });
    memory.push({ name: `${name} heap`, color, dashed: true, points: samples.map((s) => [x(s), pick(s)?.heapUsedMiB ?? null]) });
  });
  const panels: Panel[] = [
    { title: 'Memory of the processes: RSS (solid) and V8 heap in use (dashed)', unit: 'MiB', series: memory },
    { title: 'Redis used_memory', unit: 'MiB', series: [{ name: 'used_memory', color: '#ff7f0e', points: samples.map((s) => [x(s), s.redisUsedMiB]) }] },
    { title: 'Accepted rate (records acknowledged per second, over each interval)', unit: 'records/s', series: [{ name: 'acknowledged/s', color: '#2ca02c', points: samples.slice(1).map((s) => [x(s), s.ratePerS]) }] },
    {
      title: 'Queue backlog and checker',
      unit: 'jobs / records',
      series: [
        { name: 'jobs waiting', color: '#d62728', points: samples.map((s) => [x(s), s.queueWaiting]) },
        { name: 'jobs active', color: '#9467bd', points: samples.map((s) => [x(s), s.queueActive]) },
        { name: 'records awaiting check', color: '#7f7f7f', dashed: true, points: samples.map((s) => [x(s), s.checkerPending]) },
      ],
    },
  ];
  const width = 1100;
  const memoryHeight = Math.max(320, 60 + memory.length * 16);
  const heights = [memoryHeight, 160, 200, 200];
  const head = 30 + subtitle.length * 16;
  const xMax = Math.max(1 / 60, ...samples.map(x));
  let top = head;
  const body = panels.map((p, i) => {
    const svg = panelSvg(p, top, width, heights[i]!, xMax);
    top += heights[i]! + 10;
    return svg;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${top}" viewBox="0 0 ${width} ${top}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="20" y="22" font-size="16" font-weight="bold">${esc(title)}</text>`,
    ...subtitle.map((l, i) => `<text x="20" y="${40 + i * 16}" font-size="12">${esc(l)}</text>`),
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Writes `<base>.csv` and `<base>.svg`; returns their paths. */
export function writeSamples(base: string, samples: readonly SoakSample[], title: string, subtitle: readonly string[] = []): { csv: string; svg: string } {
  mkdirSync(dirname(base), { recursive: true });
  const csv = `${base}.csv`;
  const svg = `${base}.svg`;
  writeFileSync(csv, toCsv(samples));
  writeFileSync(svg, toSvg(samples, title, subtitle));
  return { csv, svg };
}
