/**
 * Two builds side by side, for interleaved A/B rounds (stagesAb.ts; `npm run bench -- --ab <ref>`):
 * a git ref checked out beside the working tree, as a worktree under .bench/ab sharing node_modules,
 * and the medians both report. On this machine one run swings by tens of percent, so a claim is the
 * median of per-round ratios of rounds that alternate the builds.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

/** The tree of `ref` (created once per commit), and the commit it is. */
export function refTree(ref: string): { dir: string; sha: string } {
  const sha = execFileSync('git', ['rev-parse', ref], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(ROOT, '.bench', 'ab', sha.slice(0, 12));
  if (!existsSync(dir)) {
    mkdirSync(join(ROOT, '.bench', 'ab'), { recursive: true });
    execFileSync('git', ['worktree', 'add', '--detach', dir, sha], { cwd: ROOT, stdio: 'ignore' });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  }
  return { dir, sha };
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}
