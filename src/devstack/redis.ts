import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'node:net';
import { freePort, spawnServer, stopProcess, waitFor, which } from './process.js';

export interface LocalRedis {
  url: string;
  port: number;
  dir: string;
  /**
   * Stops the server (SIGKILL after `timeoutMs`, 10 s by default; at once when it is gone already);
   * with `keepData` the directory survives for a restart on the same port.
   */
  stop(opts?: { signal?: NodeJS.Signals; keepData?: boolean; timeoutMs?: number }): Promise<void>;
  /** Starts it again on the same port and directory (AOF replays when it was on). */
  restart(): Promise<void>;
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    sock.setTimeout(1_000);
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (b) => {
      resolve(b.toString().startsWith('+PONG'));
      sock.destroy();
    });
    sock.on('error', () => resolve(false));
    sock.on('timeout', () => {
      resolve(false);
      sock.destroy();
    });
  });
}

/**
 * A private redis-server on a free loopback port, configured as BullMQ requires (noeviction). With `appendonly`, every write is fsynced before Redis answers (`appendfsync always`), so an
 * acknowledged push survives even a SIGKILL of Redis or a power loss. With `ownGroup`, a Ctrl-C in the
 * terminal does not reach it: the caller stops it (see `spawnServer`).
 */
export async function startRedis(opts: { appendonly?: boolean; maxmemory?: string; ownGroup?: boolean } = {}): Promise<LocalRedis> {
  const bin = which('redis-server');
  if (!bin) throw new Error('redis-server not found: apt-get install -y redis-server');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'telematics-redis-'));
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    '--appendonly', opts.appendonly ? 'yes' : 'no', '--appendfsync', 'always',
    '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning',
    ...(opts.maxmemory ? ['--maxmemory', opts.maxmemory] : []),
  ];
  const spawnIt = () => spawnServer(bin, args, { ownGroup: opts.ownGroup === true });
  let child = spawnIt();
  await waitFor(`redis-server on port ${port}`, () => ping(port), 15_000, child);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    async stop({ signal = 'SIGTERM', keepData = false, timeoutMs = 10_000 } = {}) {
      await stopProcess(child, signal, timeoutMs);
      if (!keepData) rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      child = spawnIt();
      await waitFor(`redis-server on port ${port}`, () => ping(port), 15_000, child);
    },
  };
}
