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

/** Spawns a server process that dies with us; stderr is kept for error messages. */
export function spawnServer(bin: string, args: string[]): ChildProcess & { output: () => string } {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return Object.assign(child, { output: () => out });
}

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
