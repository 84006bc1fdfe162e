/**
 * The stages bench (stages.ts) of two builds, interleaved: `npx tsx test/bench/stagesAb.ts <git ref> [rounds] [pushes]`
 * checks out the ref beside the working tree (a git worktree under .bench/ab, sharing node_modules),
 * then runs the ref's stages.ts and the working tree's in alternation, `rounds` times each, and prints
 * every round's core-µs per record and the medians of the per-round ratios (this tree / the ref). On a
 * noisy machine a single run swings by tens of percent; alternating rounds shares the noise out.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { median, refTree, ROOT } from './ab.js';

const [ref = 'HEAD', roundsArg = '7', pushesArg = '20'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const root = ROOT;
const { dir: other, sha } = refTree(ref);
// Both builds measured on the same records: the ref's stages run on this tree's bench data (data.ts,
// e.g. BENCH_PRECISION=full, which an older ref may not know); the code measured is the ref's own.
copyFileSync(join(root, 'test/bench/data.ts'), join(other, 'test/bench/data.ts'));

/**
 * The rows compared, by the start of their names: stages.ts prints each as `  <name>  <µs>` (a name with
 * no two spaces in a row). The pack work's rows are per CAN record; a ref that prints none of them (before
 * #49) shows – there.
 */
const ROWS = [
  'receiver: scan (bytes to rows, one pass)',
  'receiver stages, scanning',
  'worker stages',
  'worker: vehicle events (read the inputs, derive, write; state cached)',
  'of which derive + write (state cached, as while a vehicle stays with one process)',
  'worker: pack values on arrival',
  'worker: pack detectors',
];
const SINCE_49 = new Set(ROWS.slice(-2));

function run(dir: string, ref: boolean): number[] {
  const r = spawnSync('npx', ['tsx', 'test/bench/stages.ts', pushesArg], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`stages.ts in ${dir} failed: ${r.stderr}`);
  return ROWS.map((name) => {
    const line = r.stdout.split('\n').find((l) => l.trim().startsWith(name));
    if (!line && ref && SINCE_49.has(name)) return NaN;
    if (!line) throw new Error(`stages.ts in ${dir} printed no row ${name}`);
    const figure = /^.*?\s{2,}(-?\d+(?:\.\d+)?)/.exec(line.slice(line.indexOf(name) + name.length));
    return Number(figure?.[1]);
  });
}
const shown = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–').padStart(6);

const ratios: number[][] = ROWS.map(() => []);
process.stdout.write(`stages A/B: this tree against ${ref} (${sha.slice(0, 12)}), ${rounds} rounds alternated, ${pushesArg} pushes of 1000 records; core-µs per record\n`);
for (let r = 0; r < rounds; r++) {
  // Alternate which goes first, so neither always runs on a warmer or quieter machine.
  let a: number[], b: number[];
  if (r % 2 === 0) {
    a = run(other, true);
    b = run(root, false);
  } else {
    b = run(root, false);
    a = run(other, true);
  }
  ROWS.forEach((name, i) => {
    const ratio = b[i]! / a[i]!;
    if (Number.isFinite(ratio)) ratios[i]!.push(ratio);
    process.stdout.write(`  round ${r + 1}  ${name.padEnd(42)} ref ${shown(a[i]!)}  this ${shown(b[i]!)}  ratio ${Number.isFinite(ratio) ? ratio.toFixed(3) : '–'}\n`);
  });
}
process.stdout.write('medians of the per-round ratios (this / ref):\n');
ROWS.forEach((name, i) => process.stdout.write(`  ${name.padEnd(42)} ${ratios[i]!.length > 0 ? median(ratios[i]!).toFixed(3) : '– (the ref prints no such row)'}\n`));
