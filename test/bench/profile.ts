/**
 * Summarizes a V8 .cpuprofile (from `node --cpu-prof`, e.g. `BENCH_CPU_PROF=/tmp/prof npm run bench`):
 * self time per function and per package, the biggest first.
 *   tsx test/bench/profile.ts /tmp/prof/CPU.*.cpuprofile [top]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const file = process.argv[2]!;
const top = Number(process.argv[3] ?? 30);
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

const pkg = (url: string): string => {
  const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith('node:')) return 'node:internal';
  if (url.includes('/src/')) return `src/${url.split('/src/')[1]!.split('/')[0]}`;
  return url ? 'other' : '(native/vm)';
};

const fn = new Map<string, number>();
const pk = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  const cf = n.callFrame;
  const short = cf.url.replace(/^.*node_modules\//, '').replace(/^.*\/work\/main\//, '');
  const key = `${cf.functionName || '(anonymous)'} ${short}:${cf.lineNumber + 1}`;
  fn.set(key, (fn.get(key) ?? 0) + t);
  pk.set(pkg(cf.url), (pk.get(pkg(cf.url)) ?? 0) + t);
}
const show = (m: Map<string, number>, n: number) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, t]) => `${((100 * t) / total).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`).join('\n');
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled\n\nby package:\n${show(pk, 15)}\n\nby function (self):\n${show(fn, top)}`);
