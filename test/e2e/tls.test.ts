/** The push listener over HTTPS, and with mutual TLS: certificates made by openssl for the test. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { startService, type RunningService } from '../../src/ingest/service/index.js';
import { createLogger } from '../../src/log/index.js';
import { influxQuery } from '../harness/influx.js';
import { TEST_TOKEN, testEnv, uniqueName, waitUntil } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const dir = mkdtempSync(join(tmpdir(), 'telematics-tls-'));
const file = (name: string) => join(dir, name);
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/** A CA, a server certificate for 127.0.0.1 it signed, and a client certificate it signed. */
function makeCertificates(): void {
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=test CA');
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const [name, cn] of [['server', '127.0.0.1'], ['client', 'fleet-a']] as const) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', ...(name === 'server' ? ['-extfile', 'server.ext'] : []));
  }
}

let svc: RunningService;
let db: string;
beforeAll(async () => {
  makeCertificates();
  db = uniqueName('tls');
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const cfg = loadConfig(
    testEnv(db, { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', TLS_CERT: file('server.pem'), TLS_KEY: file('server.key'), TLS_CLIENT_CA: file('ca.pem') }),
  );
  svc = await startService(cfg, createLogger('silent'));
  await waitUntil(async () => (await post('/readyz', undefined, true)).status === 200, 15_000, 'service ready over TLS');
});
afterAll(async () => svc?.close());

function post(path: string, body: string | undefined, withClientCert: boolean): Promise<{ status: number; body: string }> {
  const url = new URL(path, svc.url);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: body === undefined ? 'GET' : 'POST',
        ca: readFileSync(file('ca.pem')),
        ...(withClientCert ? { cert: readFileSync(file('client.pem')), key: readFileSync(file('client.key')) } : {}),
        headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

it('serves pushes over HTTPS to a sender with a client certificate the CA signed, and refuses one without', async () => {
  expect(svc.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  const rec = { vehicleno: 'TLS-1', type: 'can', data: { time: T0, soc: 77 } };
  const ok = await post('/push/realtime', JSON.stringify(rec), true);
  expect(ok.status).toBe(202);
  await expect(post('/push/realtime', JSON.stringify(rec), false)).rejects.toThrow();
  await waitUntil(async () => (await influxQuery(db, 'SELECT soc FROM can')).length === 1, 15_000, 'the TLS push stored');
  expect(await influxQuery(db, 'SELECT soc, vehicleno FROM can')).toEqual([{ time: T0, soc: 77, vehicleno: 'TLS-1' }]);
});
