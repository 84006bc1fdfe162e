import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort, stopProcess } from '../../src/devstack/process.js';
import type { Command, LoadResult } from './load.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Proc {
  name: string;
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resident set size now and at its peak (VmRSS, VmHWM), in bytes. */
  rss(): { now: number; peak: number };
  stop(): Promise<void>;
}

async function waitReady(url: string, child: ChildProcess, what: string, out: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}: ${out()}`);
    const ok = await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} not ready within 30 s: ${out()}`);
}

function rssOf(pid: number | undefined): { now: number; peak: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN) * 1024;
    return { now: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { now: NaN, peak: NaN };
  }
}

/**
 * Compiles the service (and the bare endpoint) with tsc, as `npm start` runs it, into a private
 * folder, so the benchmark measures the JavaScript operators run rather than tsx's transform of it
 * (esbuild's keep-names wraps every closure a request creates in a defineProperty call).
 * Returns the compiled paths of `src/cmd/ingest.ts` and `test/bench/bare.ts`. `tree`: another
 * checkout to build (an A/B's ref, ab.ts), with this one's compiler.
 */
export function buildForBench(tree = ROOT): { ingest: string; bare: string } {
  const root = tree.endsWith('/') ? tree : `${tree}/`;
  const out = `${root}.devstack/bench-dist`;
  const tsc = `${ROOT}node_modules/typescript/bin/tsc`;
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', `${out}/src`], { cwd: root, stdio: 'inherit' });
  // The Lua scripts beside the modules that load them, as `npm run build` copies them (a ref older than them has none).
  if (existsSync(`${root}src/redis/scripts`)) cpSync(`${root}src/redis/scripts`, `${out}/src/redis/scripts`, { recursive: true });
  execFileSync(
    process.execPath,
    [tsc, 'test/bench/bare.ts', '--outDir', `${out}/bare`, '--module', 'nodenext', '--target', 'es2022', '--strict', '--skipLibCheck', '--types', 'node'],
    { cwd: root, stdio: 'inherit' },
  );
  return { ingest: `${out}/src/cmd/ingest.js`, bare: `${out}/bare/bare.js` };
}

/** A node process running `script args` (TypeScript through tsx), HTTP on a free port, ready when /readyz answers 200. */
export async function spawnNode(name: string, script: string, args: string[], env: Record<string, string>, nodeArgs: string[] = []): Promise<Proc> {
  const port = await freePort();
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, script, ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, child, name, () => out);
  return {
    name,
    url,
    child,
    output: () => out,
    rss: () => rssOf(child.pid),
    stop: () => stopProcess(child, 'SIGTERM', 30_000),
  };
}

/** The load generator in its own process; `run` sends it one command and waits for its result. */
export interface Loader {
  pid: number | undefined;
  /** Runs `cmd`; `onReady` is called once its requests are built, just before the first is sent. */
  run(cmd: Command, onReady?: () => void): Promise<LoadResult>;
  stop(): void;
}

export function startLoader(env: Record<string, string>): Loader {
  const child = fork(fileURLToPath(new URL('./load.ts', import.meta.url)), [], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let seq = 0;
  const pending = new Map<number, { resolve: (r: LoadResult) => void; reject: (e: Error) => void; onReady?: () => void }>();
  child.on('message', (m: { id: number; result?: LoadResult; error?: string; ready?: true }) => {
    const p = pending.get(m.id);
    if (m.ready) {
      p?.onReady?.();
      child.send({ id: m.id, go: true });
      return;
    }
    pending.delete(m.id);
    if (m.error !== undefined) p?.reject(new Error(`load generator: ${m.error}`));
    else p?.resolve(m.result!);
  });
  child.on('exit', (code) => {
    for (const p of pending.values()) p.reject(new Error(`load generator exited with code ${code}`));
    pending.clear();
  });
  return {
    pid: child.pid,
    run(cmd, onReady) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, onReady });
        child.send({ id, cmd });
      });
    },
    stop() {
      if (child.connected) child.disconnect();
      child.kill('SIGTERM');
    },
  };
}
