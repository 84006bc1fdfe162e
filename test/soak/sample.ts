/**
 * What a soak samples of the processes it runs: RSS from /proc, the V8 heap and the counters from a
 * process's /metrics (prom-client's default metrics and the service's own), Redis `INFO memory`.
 */
import { readFileSync } from 'node:fs';

const MiB = 1024 * 1024;

/** VmRSS of a process in MiB, or null when it is gone. */
export function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** One line of Prometheus' text format. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus' text format (what prom-client serves): comments skipped, labels unescaped. */
export function parsePrometheus(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of a metric's samples whose labels include `match`; null when there is none. */
export function metricSum(samples: readonly PromSample[], name: string, match: Record<string, string> = {}): number | null {
  let sum: number | null = null;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(match).some(([k, v]) => s.labels[k] !== v)) continue;
    sum = (sum ?? 0) + s.value;
  }
  return sum;
}

/** A process's /metrics, parsed; null when it does not answer within `timeoutMs`. */
export async function scrape(adminUrl: string, timeoutMs = 5_000): Promise<PromSample[] | null> {
  try {
    const res = await fetch(`${adminUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return null;
    return parsePrometheus(await res.text());
  } catch {
    return null;
  }
}

/** What one service process looks like at a sample. */
export interface ProcessSample {
  rssMiB: number | null;
  heapUsedMiB: number | null;
  /**
   * Old space in use and major (mark-compact) GCs so far: heap in use counts garbage until a major GC
   * collects it, so a rise that ends at a major GC is GC timing, and one that survives it is retained.
   */
  oldSpaceMiB?: number | null;
  majorGcs?: number | null;
}

export function processSample(pid: number | undefined, metrics: readonly PromSample[] | null): ProcessSample {
  const heap = metrics ? metricSum(metrics, 'nodejs_heap_size_used_bytes') : null;
  const old = metrics ? metricSum(metrics, 'nodejs_heap_space_size_used_bytes', { space: 'old' }) : null;
  const major = metrics ? metricSum(metrics, 'nodejs_gc_duration_seconds_count', { kind: 'major' }) : null;
  return { rssMiB: rssMiB(pid), heapUsedMiB: heap === null ? null : heap / MiB, oldSpaceMiB: old === null ? null : old / MiB, majorGcs: major };
}

/** A field of `INFO` (e.g. used_memory) as a number. */
export function infoField(info: string, field: string): number | null {
  const m = new RegExp(`^${field}:(\\S+)`, 'm').exec(info);
  return m ? Number(m[1]) : null;
}

export { MiB };
