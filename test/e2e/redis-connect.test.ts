/**
 * The connection factory against real servers: Redis over mutual TLS (a test CA and a client
 * certificate) as an ACL user granted only the commands the README lists, and Redis behind Sentinel.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, stopProcess, waitFor } from '../../src/devstack/process.js';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { startTestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const dir = mkdtempSync(join(tmpdir(), 'telematics-redis-tls-'));
const file = (name: string) => join(dir, name);
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
const children: ChildProcess[] = [];
const start = (bin: string, args: string[]) => {
  const c = spawn(bin, args, { stdio: 'ignore' });
  children.push(c);
  return c;
};
afterAll(async () => {
  for (const c of children.reverse()) await stopProcess(c).catch(() => {});
});

const push = async (env: Record<string, string>, vehicleno: string) => {
  const svc = await startTestService(env);
  try {
    const res = await svc.post('/push/realtime', { vehicleno, type: 'can', data: { time: T0, soc: 42 } });
    expect(res.status).toBe(202);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = '${vehicleno}'`, 1)).toEqual([{ time: T0, soc: 42 }]);
  } finally {
    await svc.close();
  }
};

describe('mutual TLS, as a user with only the listed commands', () => {
  let port: number;
  beforeAll(async () => {
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=test CA');
    writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
    for (const name of ['server', 'client']) {
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
      ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', ...(name === 'server' ? ['-extfile', 'server.ext'] : []));
    }
    port = await freePort();
    const acl = ['user default off', 'user app on >app-password-0123 ~* &* -@all +@read +@write +@list +@sortedset +@hash +@stream +@string +@scripting +@keyspace +@transaction +@connection +info +config|get'];
    writeFileSync(file('users.acl'), `${acl.join('\n')}\n`);
    start('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', file('server.pem'), '--tls-key-file', file('server.key'), '--tls-ca-cert-file', file('ca.pem'), '--tls-auth-clients', 'yes', '--aclfile', file('users.acl'), '--save', '', '--appendonly', 'no', '--dir', dir]);
    await waitFor('redis over TLS', async () => {
      const r = new Redis({ host: '127.0.0.1', port, username: 'app', password: 'app-password-0123', tls: { ca: execFileSync('cat', [file('ca.pem')]), cert: execFileSync('cat', [file('client.pem')]), key: execFileSync('cat', [file('client.key')]) }, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      const ok = await r.connect().then(() => r.ping().then((p) => p === 'PONG'), () => false);
      r.disconnect();
      return ok;
    }, 10_000);
  });

  it('carries pushes to InfluxDB through rediss:// with a client certificate', async () => {
    await push({ REDIS_URL: `rediss://127.0.0.1:${port}`, REDIS_USERNAME: 'app', REDIS_PASSWORD: 'app-password-0123', REDIS_TLS_CA: file('ca.pem'), REDIS_TLS_CERT: file('client.pem'), REDIS_TLS_KEY: file('client.key') }, 'TLS-R1');
  }, 60_000);
});

describe('Sentinel', () => {
  let primary: LocalRedis;
  let sentinelPort: number;
  beforeAll(async () => {
    primary = await startRedis({ appendonly: true });
    sentinelPort = await freePort();
    writeFileSync(file('sentinel.conf'), [`port ${sentinelPort}`, 'bind 127.0.0.1', `dir ${dir}`, `sentinel monitor tele 127.0.0.1 ${primary.port} 1`, 'sentinel down-after-milliseconds tele 2000'].join('\n') + '\n');
    start('redis-sentinel', [file('sentinel.conf')]);
    await waitFor('sentinel', async () => {
      const s = new Redis({ host: '127.0.0.1', port: sentinelPort, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      const ok = await s.connect().then(async () => ((await s.call('SENTINEL', 'get-master-addr-by-name', 'tele')) as string[] | null)?.[1] === String(primary.port), () => false);
      s.disconnect();
      return ok;
    }, 15_000);
  });
  afterAll(async () => primary?.stop());

  it('carries pushes to InfluxDB through the primary Sentinel names', async () => {
    await push({ REDIS_URL: 'redis://unused:1', REDIS_SENTINELS: `127.0.0.1:${sentinelPort}`, REDIS_SENTINEL_MASTER: 'tele' }, 'SENT-1');
  }, 60_000);
});

describe('REDIS_WAIT_REPLICAS', () => {
  let primary: LocalRedis;
  let replica: ChildProcess;
  let replicaPort: number;
  beforeAll(async () => {
    primary = await startRedis({ appendonly: true });
    replicaPort = await freePort();
    replica = start('redis-server', ['--port', String(replicaPort), '--bind', '127.0.0.1', '--replicaof', '127.0.0.1', String(primary.port), '--save', '', '--appendonly', 'no', '--dir', dir]);
    await waitFor('the replica in sync', async () => {
      const p = new Redis(primary.url);
      const info = await p.info('replication').catch(() => '');
      p.disconnect();
      return /connected_slaves:1/.test(info) && /state=online/.test(info);
    }, 15_000);
  });
  afterAll(async () => primary?.stop());

  it('answers 2xx only once a replica holds the records, and 503 when none confirms in time', async () => {
    const svc = await startTestService({ REDIS_URL: primary.url, REDIS_WAIT_REPLICAS: '1', ENQUEUE_TIMEOUT: '1s' });
    try {
      const ok = await svc.post('/push/realtime', { vehicleno: 'WAIT-1', type: 'can', data: { time: T0, soc: 1 } });
      expect(ok.status).toBe(202);
      // The job is on the replica already: what the primary confirmed survives its loss.
      const onReplica = new Redis({ port: replicaPort, host: '127.0.0.1' });
      expect(Number(await onReplica.get(`bull:${svc.cfg.QUEUE_NAME}:id`))).toBeGreaterThanOrEqual(1);
      onReplica.disconnect();
      await stopProcess(replica);
      const refused = await svc.post('/push/realtime', { vehicleno: 'WAIT-1', type: 'can', data: { time: (T0 + 1), soc: 2 } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBeTruthy();
      expect(await refused.json()).toMatchObject({ err: 'unavailable', msg: expect.stringContaining('only 0 of 1 Redis replica(s) confirmed the enqueue (REDIS_WAIT_REPLICAS)') });
    } finally {
      await svc.close();
    }
  }, 60_000);
});
