import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { influxQuery } from '../harness/influx.js';
import { testEnv, uniqueName, waitUntil } from '../harness/service.js';
import { spawnService, type ServiceProcess } from '../harness/proc.js';
import { T0 } from '../harness/time.js';

const TOKEN = 'process-test-token-abcdef0123456789';
const db = uniqueName('proc');
let env: Record<string, string>;
let receiver: ServiceProcess;
let worker: ServiceProcess;

beforeAll(async () => {
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  env = testEnv(db, { PUSH_TOKENS: TOKEN, LOG_LEVEL: 'debug', LOG_SUMMARY_INTERVAL: '1s' });
  [receiver, worker] = await Promise.all([spawnService('receiver', env), spawnService('worker', env)]);
});
afterAll(async () => {
  await receiver?.stop('SIGKILL');
  await worker?.stop('SIGKILL');
});

it('runs receiver and worker as separate processes, and neither logs nor answers a token', async () => {
  const rec = { vehicleno: 'PROC-1', type: 'can', data: { time: T0, soc: 42.5 } };
  const ok = await fetch(`${receiver.url}/push/realtime?token=${TOKEN}`, { method: 'POST', body: JSON.stringify(rec) });
  expect(ok.status).toBe(202);
  const bad = await fetch(`${receiver.url}/push/realtime`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}-wrong` },
    body: JSON.stringify(rec),
  });
  expect(bad.status).toBe(401);
  expect(await bad.text()).not.toContain(TOKEN);

  await waitUntil(async () => (await influxQuery(db, `SELECT soc FROM can`)).length === 1, 15_000, 'point written by the worker process');
  expect(await influxQuery(db, `SELECT soc, vehicleno FROM can`)).toEqual([{ time: T0, soc: 42.5, vehicleno: 'PROC-1' }]);

  // The worker's readiness includes InfluxDB; the receiver's does not.
  expect(await (await fetch(`${worker.url}/readyz`)).json()).toMatchObject({ data: { redis: true, influxdb: true } });
  expect(await (await fetch(`${receiver.url}/readyz`)).json()).toMatchObject({ data: { redis: true } });

  // Level names, a 401 logged with its reason and source, and the summary line each process writes.
  await waitUntil(async () => /"written":1,.*"msg":"summary"/.test(worker.output()) && /"received":1,/.test(receiver.output()), 5_000, 'summary lines');
  const logs = receiver.output() + worker.output();
  expect(logs).toContain('"msg":"telematics-ingest started"');
  expect(logs).toMatch(/"level":"info".*"why":"unknown token","source":"127\.0\.0\.1".*"msg":"push refused: unauthorized"/);
  const summary = receiver.output().split('\n').find((l) => l.includes('"received":1,'))!;
  expect(JSON.parse(summary)).toMatchObject({ level: 'info', msg: 'summary', received: 1, rejected: 0, backlogJobs: expect.any(Number), lagSeconds: expect.any(Number) });
  expect(JSON.parse(worker.output().split('\n').find((l) => l.includes('"msg":"summary"') && l.includes('"written":1'))!)).toMatchObject({ written: 1 });
  expect(logs).not.toContain(TOKEN);
  expect(logs).not.toContain(inject('influxToken'));
});

it('exits 0 on SIGTERM', async () => {
  expect(await receiver.stop('SIGTERM')).toBe(0);
  expect(await worker.stop('SIGTERM')).toBe(0);
  expect(receiver.output()).toContain('"msg":"telematics-ingest stopped"');
});

it('refuses to start without a push token, naming the setting', async () => {
  await expect(spawnService('receiver', { ...env, PUSH_TOKENS: '' })).rejects.toThrow(
    /PUSH_TOKENS: set at least one token, or PUSH_AUTH=none to accept unauthenticated pushes on purpose/,
  );
});
