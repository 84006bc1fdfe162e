import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnServer, stopProcess, waitFor, which } from './process.js';
import { startV2Front, type InfluxProfile, type V2Front } from './v2front.js';

/**
 * A private InfluxDB 1.x (Debian's `influxdb`) with a /api/v2/write front, so the service talks
 * to it exactly as to InfluxDB 2.x, 3.x or Cloud, while reads use InfluxQL on the real server.
 */
export interface LocalInflux {
  /** What the service's INFLUX_URL points at: the v2 front. */
  url: string;
  /** The real influxd, for InfluxQL reads. */
  rawUrl: string;
  token: string;
  /** The /api/v2/write front, with its fault-injection controls. */
  front: V2Front;
  createDatabase(name: string): Promise<void>;
  query<T = Record<string, unknown>>(db: string, q: string): Promise<T[]>;
  /** Stops influxd only (the front keeps answering, with 502): an outage as the service sees it. */
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  /** Stops the front and influxd (SIGKILL after `timeoutMs`, 10 s by default; at once when it is gone already). */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
}

interface InfluxSeries {
  name: string;
  tags?: Record<string, string>;
  columns: string[];
  /** Absent for a series with no rows (SHOW SHARDS of a database without shards). */
  values?: unknown[][];
}
interface InfluxQueryResponse {
  results?: Array<{ series?: InfluxSeries[]; error?: string }>;
  error?: string;
}

/** InfluxQL against a 1.x server; rows flattened with their series' tags, times in epoch ms. */
export async function influxQL<T = Record<string, unknown>>(rawUrl: string, db: string, q: string): Promise<T[]> {
  return (await influxQLStatements<T>(rawUrl, db, q))[0] ?? [];
}

/** The rows of each statement of `q` (statements separated by `;`), as `influxQL` gives them. */
export async function influxQLStatements<T = Record<string, unknown>>(rawUrl: string, db: string, q: string): Promise<T[][]> {
  const res = await fetch(`${rawUrl}/query?db=${encodeURIComponent(db)}&epoch=ms`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ q }).toString(),
  });
  const body = (await res.json()) as InfluxQueryResponse;
  const err = body.error ?? body.results?.find((r) => r.error)?.error;
  if (!res.ok || err) throw new Error(`InfluxQL ${q}: ${err ?? res.status}`);
  return (body.results ?? []).map((result) => {
    const rows: T[] = [];
    for (const s of result.series ?? []) {
      for (const values of s.values ?? []) {
        const row: Record<string, unknown> = { ...s.tags };
        s.columns.forEach((c, i) => {
          row[c] = values[i];
        });
        rows.push(row as T);
      }
    }
    return rows;
  });
}

/**
 * A private influxd and its /api/v2/write front. With `pinCpus` (`taskset -c` form) influxd and the
 * front run on those cores, the front in a process of its own (the benchmark's pinned topology);
 * such a front cannot be slowed or counted from here (`setWriteDelay`, `writesStarted`). With
 * `ownGroup`, a Ctrl-C in the terminal does not reach influxd: the caller stops it (see `spawnServer`).
 */
export async function startInflux(opts: { token?: string; pinCpus?: string; profile?: InfluxProfile; ownGroup?: boolean } = {}): Promise<LocalInflux> {
  const bin = which('influxd');
  if (!bin) throw new Error('influxd not found: apt-get install -y influxdb');
  const dir = mkdtempSync(join(tmpdir(), 'telematics-influx-'));
  const [httpPort, rpcPort] = [await freePort(), await freePort()];
  const conf = join(dir, 'influxdb.conf');
  writeFileSync(
    conf,
    [
      'reporting-enabled = false',
      `bind-address = "127.0.0.1:${rpcPort}"`,
      '[meta]',
      `  dir = "${dir}/meta"`,
      '[data]',
      `  dir = "${dir}/data"`,
      `  wal-dir = "${dir}/wal"`,
      '  query-log-enabled = false',
      '[monitor]',
      '  store-enabled = false',
      '[http]',
      `  bind-address = "127.0.0.1:${httpPort}"`,
      '  log-enabled = false',
      '[logging]',
      '  level = "warn"',
      '',
    ].join('\n'),
  );
  const rawUrl = `http://127.0.0.1:${httpPort}`;
  const ping = async () => (await fetch(`${rawUrl}/ping`)).status === 204;
  const group = { ownGroup: opts.ownGroup === true };
  const pinned = (cmd: string, args: string[]) => (opts.pinCpus ? spawnServer('taskset', ['-c', opts.pinCpus, cmd, ...args], group) : spawnServer(cmd, args, group));
  let child = pinned(bin, ['run', '-config', conf]);
  await waitFor('influxd', ping, 30_000, child);
  const token = opts.token ?? 'devstack-influx-token';
  const front: V2Front = opts.pinCpus ? await frontProcess(pinned, rawUrl, token) : await startV2Front({ upstream: rawUrl, token, ...(opts.profile ? { profile: opts.profile } : {}) });

  const query = <T,>(db: string, q: string) => influxQL<T>(rawUrl, db, q);

  return {
    url: front.url,
    rawUrl,
    token,
    front,
    async createDatabase(name) {
      await query(name, `CREATE DATABASE "${name.replace(/"/g, '\\"')}"`);
    },
    query,
    async stopServer() {
      await stopProcess(child);
    },
    async startServer() {
      child = pinned(bin, ['run', '-config', conf]);
      await waitFor('influxd', ping, 30_000, child);
    },
    async stop({ timeoutMs = 10_000 } = {}) {
      await front.close();
      await stopProcess(child, 'SIGTERM', timeoutMs);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The front in a process of its own (see v2front.ts), reached over HTTP like the in-process one. */
async function frontProcess(spawnPinned: (cmd: string, args: string[]) => ChildProcess, upstream: string, token: string): Promise<V2Front> {
  const port = await freePort();
  const script = fileURLToPath(new URL('./v2front.ts', import.meta.url));
  const child = spawnPinned(process.execPath, ['--import', 'tsx', script, upstream, token, String(port)]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('the /api/v2/write front', async () => (await fetch(`${url}/ping`).catch(() => undefined))?.status === 204, 30_000, child);
  const remote = (what: string) => () => {
    throw new Error(`${what} is not available for a front in its own process`);
  };
  return {
    url,
    setWriteDelay: remote('setWriteDelay'),
    delayNextWrites: remote('delayNextWrites'),
    writesStarted: remote('writesStarted'),
    wire: remote('wire'),
    writeTimes: remote('writeTimes'),
    setLimits: remote('setLimits'),
    answerNext: remote('answerNext'),
    close: () => stopProcess(child),
    pid: child.pid,
  };
}
