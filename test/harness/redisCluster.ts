import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, spawnServer, stopProcess, waitFor, which } from '../../src/devstack/process.js';

/** A real Redis Cluster of Debian's redis-server: `masters` masters with `replicas` replicas each, on loopback. */
export interface LocalCluster {
  /** Every node's `127.0.0.1:<port>`, as REDIS_CLUSTER_NODES takes them. */
  seeds: string[];
  /** The masters' ports now (they change on a failover). */
  masterPorts(): Promise<number[]>;
  /** Runs `fn` on a direct connection to one node. */
  onNode<T>(port: number, fn: (node: Redis) => Promise<T>): Promise<T>;
  /** SIGKILLs the node on `port`. */
  kill(port: number): Promise<void>;
  /** Starts a killed node again on its port and directory: it rejoins, a replica of whoever took over. */
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

type Child = ReturnType<typeof spawnServer>;

async function clusterOk(port: number, masters: number, replicas: number): Promise<boolean> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    const info = (await r.cluster('INFO')) as string;
    if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
    const nodes = ((await r.cluster('NODES')) as string).trim().split('\n');
    const up = (role: string) => nodes.filter((l) => l.split(' ')[2]!.includes(role) && !l.includes('fail') && l.includes('connected')).length;
    if (up('master') !== masters || up('slave') !== masters * replicas) return false;
    // A replica counts once it holds its master's data (until then it could not take over).
    const replication = await r.info('replication');
    return !/role:slave/.test(replication) || /master_link_status:up/.test(replication);
  } finally {
    r.disconnect();
  }
}

export async function startRedisCluster(opts: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {}): Promise<LocalCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 1;
  const bin = which('redis-server');
  const cli = which('redis-cli');
  if (!bin || !cli) throw new Error('redis-server and redis-cli not found: apt-get install -y redis-server');
  const root = mkdtempSync(join(tmpdir(), 'telematics-cluster-'));
  const children = new Map<number, Child>();
  const ports: number[] = [];
  while (ports.length < masters * (1 + replicas)) {
    const p = await freePort();
    // A cluster node also listens on port + 10000 (the cluster bus).
    if (p + 10_000 <= 65_535 && !ports.includes(p)) ports.push(p);
  }
  const args = (port: number) => [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', join(root, String(port)), '--save', '',
    '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2_000),
    '--appendonly', 'yes', '--appendfsync', 'always', '--repl-diskless-sync-delay', '0', '--maxmemory-policy', 'noeviction', '--daemonize', 'no', '--loglevel', 'warning',
  ];
  for (const port of ports) {
    mkdirSync(join(root, String(port)));
    children.set(port, spawnServer(bin, args(port)));
  }
  const onNode = async <T>(port: number, fn: (node: Redis) => Promise<T>): Promise<T> => {
    const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      await r.connect();
      return await fn(r);
    } finally {
      r.disconnect();
    }
  };
  for (const port of ports) await waitFor(`cluster node ${port}`, () => onNode(port, async (r) => (await r.ping()) === 'PONG'), 15_000, children.get(port));
  const made = spawnSync(cli, ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`redis-cli --cluster create failed: ${made.stdout}${made.stderr}`);
  await waitFor('cluster state ok and every replica in sync', async () => (await Promise.all(ports.map((p) => clusterOk(p, masters, replicas)))).every(Boolean), 30_000);

  return {
    seeds: ports.map((p) => `127.0.0.1:${p}`),
    async masterPorts() {
      for (const port of ports) {
        if (children.get(port)!.exitCode !== null || children.get(port)!.signalCode !== null) continue;
        const nodes = await onNode(port, async (r) => (await r.cluster('NODES')) as string).catch(() => undefined);
        if (!nodes) continue;
        return nodes
          .trim()
          .split('\n')
          .map((l) => l.split(' '))
          .filter((f) => f[2]!.includes('master') && !f[2]!.includes('fail'))
          .map((f) => Number(f[1]!.split('@')[0]!.split(':')[1]));
      }
      throw new Error('no cluster node answers');
    },
    onNode,
    async kill(port) {
      await stopProcess(children.get(port)!, 'SIGKILL');
    },
    async restart(port) {
      children.set(port, spawnServer(bin, args(port)));
      await waitFor(`cluster node ${port} back`, () => onNode(port, async (r) => (await r.ping()) === 'PONG'), 15_000, children.get(port));
    },
    async stop() {
      await Promise.all([...children.values()].map((c) => stopProcess(c)));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
