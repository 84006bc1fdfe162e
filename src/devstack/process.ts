import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync } from 'node:fs';

/** A port the kernel just handed out; another process could take it, so callers retry on clash. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export function which(bin: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin', '/usr/local/bin'])) {
    const p = `${dir}/${bin}`;
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Makes sure the Debian packages behind the local stack are there: installs them when run
 * as root (a fresh Debian machine), otherwise says what to install.
 */
export function ensureDebianPackages(needs: Array<{ bin: string; pkg: string }>, log: (m: string) => void): void {
  const missing = needs.filter((n) => !which(n.bin));
  if (missing.length === 0) return;
  const pkgs = missing.map((m) => m.pkg).join(' ');
  if (process.getuid?.() !== 0) {
    throw new Error(`missing ${missing.map((m) => m.bin).join(', ')}: install with "sudo apt-get install -y ${pkgs}"`);
  }
  log(`installing Debian packages: ${pkgs}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', ...missing.map((m) => m.pkg)]]) {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed with status ${r.status}`);
  }
}

export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode} while starting`);
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms`);
}

/** Children spawned in a process group of their own, killed when this process exits (`spawnServer`'s `ownGroup`). */
const grouped = new Set<ChildProcess>();
let killOnExit = false;

/**
 * Spawns a server process; stderr is kept for error messages. It is in this process's group, so a
 * Ctrl-C in the terminal reaches it too, unless `ownGroup`: then only this process stops it (in the
 * order it chooses: `npm run up` stops the service before its Redis), and it is killed (SIGKILL) when
 * this process exits, however it exits: by the kernel where util-linux's `setpriv` sets its
 * parent-death signal (a SIGKILL of this process included: tsx sends one to a child slow to confirm
 * a Ctrl-C), else as this process exits.
 */
export function spawnServer(bin: string, args: string[], opts: { ownGroup?: boolean } = {}): ChildProcess & { output: () => string } {
  const setpriv = opts.ownGroup ? which('setpriv') : undefined;
  // setpriv execs the server: the pid is the server's.
  const child = setpriv
    ? spawn(setpriv, ['--pdeathsig', 'KILL', '--', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    : spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: opts.ownGroup === true });
  if (opts.ownGroup) {
    grouped.add(child);
    child.once('exit', () => grouped.delete(child));
    if (!killOnExit) {
      killOnExit = true;
      process.on('exit', () => {
        for (const c of grouped) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      });
    }
  }
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return Object.assign(child, { output: () => out });
}

/** Stops `child` with `signal`, with SIGKILL after `timeoutMs`; at once when it is gone already. */
export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}
