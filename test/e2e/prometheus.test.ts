/**
 * What an operator reads: the real Prometheus scrapes a receiver and a worker run as separate
 * processes, and its counters equal what was sent, accepted, rejected and written.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/devstack/process.js';
import { influxQuery } from '../harness/influx.js';
import { spawnService, type ServiceProcess } from '../harness/proc.js';
import { startPrometheus, type LocalPrometheus } from '../harness/prometheus.js';
import { TEST_TOKEN, testEnv, uniqueName, waitUntil } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const db = uniqueName('prom');
let receiver: ServiceProcess;
let worker: ServiceProcess;
let prom: LocalPrometheus;
let ports: number[];

beforeAll(async () => {
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const env = testEnv(db, { PUSH_TOKENS: `fleet-a:${TEST_TOKEN}`, METRICS_SAMPLE_INTERVAL: '500ms', LOG_LEVEL: 'warn' });
  ports = [await freePort(), await freePort()];
  [receiver, worker] = await Promise.all([
    spawnService('receiver', { ...env, ADMIN_PORT: String(ports[0]), ADMIN_HOST: '127.0.0.1' }),
    spawnService('worker', { ...env, ADMIN_PORT: String(ports[1]), ADMIN_HOST: '127.0.0.1' }),
  ]);
  prom = await startPrometheus(ports.map((p) => `127.0.0.1:${p}`));
}, 60_000);
afterAll(async () => {
  await prom?.stop();
  await receiver?.stop('SIGKILL');
  await worker?.stop('SIGKILL');
});

it('counts pushes, records accepted and rejected, and points written, as Prometheus reads them', async () => {
  const post = (path: string, body: unknown, token = TEST_TOKEN) =>
    fetch(`${receiver.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  let n = 0;
  const can = () => ({ vehicleno: 'PROM-1', type: 'can', data: { time: T0 + n++, soc: 50 } });
  const gps = () => ({ vehicleno: 'PROM-1', type: 'gps', data: { lat: 1, lng: 2, alti: 3, speed: 4, ignstatus: 1, time: T0 + n++ } });
  for (let i = 0; i < 3; i++) {
    const res = await post('/push/bulk', { bulkData: [...Array.from({ length: 6 }, can), ...Array.from({ length: 4 }, gps), { vehicleno: 'PROM-1', type: 'gps', data: {} }, 'junk'] });
    expect(res.status).toBe(202);
  }
  for (let i = 0; i < 5; i++) expect((await post('/push/realtime', can())).status).toBe(202);
  expect((await post('/push/realtime', can(), 'wrong-token-0123456789')).status).toBe(401);
  expect((await post('/push/realtime', { vehicleno: 'PROM-1', type: 'can', data: { soc: 'x' } })).status).toBe(400);
  await waitUntil(async () => (await influxQuery(db, 'SELECT count(soc) FROM can'))[0]?.count === 23, 20_000, 'the CAN points written');

  const value = async (q: string) => (await prom.query(q))[0]?.value;
  const expected: Record<string, number> = {
    'sum(telematics_pushes_total{status="202"})': 8,
    'sum(telematics_pushes_total{status="401", sender="none"})': 1,
    'sum(telematics_pushes_total{status="400", sender="fleet-a"})': 1,
    'sum(telematics_records_received_total)': 3 * 12 + 5 + 1,
    'sum(telematics_records_accepted_total{type="can"})': 23,
    'sum(telematics_records_accepted_total{type="gps"})': 12,
    'sum(telematics_records_rejected_total)': 3 * 2 + 1,
    'sum(telematics_records_rejected_total{reason="not_a_record"})': 3,
    'sum(telematics_points_written_total{measurement="can"})': 23,
    'sum(telematics_points_written_total{measurement="gps"})': 12,
    'sum(telematics_points_refused_total)': 0,
    'sum(telematics_write_requests_total{outcome="ok", status_class="2xx"}) > 0': 1,
    'telematics_quarantine_entries{job="telematics"} >= 7': 1,
    'count(telematics_build_info)': 2,
    'count(up == 1)': 2,
  };
  // A comparison (`> 0`) yields its series only while true: counted as 1 then, else 0.
  const isFilter = (q: string) => / >=? \d+$/.test(q);
  const read = async () => {
    const got: Record<string, number | undefined> = {};
    for (const q of Object.keys(expected)) {
      const v = await value(q);
      got[q] = isFilter(q) ? (v === undefined ? 0 : 1) : v;
    }
    return got;
  };
  let got: Record<string, number | undefined> = {};
  await waitUntil(async () => JSON.stringify((got = await read())) === JSON.stringify(expected), 20_000, 'Prometheus to read the counters').catch(() => undefined);
  expect(got).toEqual(expected);
  // The lag operators scale on is exported (nothing waits now) and the receive → written latency was observed.
  expect(await value('max(telematics_queue_oldest_waiting_age_seconds)')).toBe(0);
  expect(await value('sum(telematics_receive_to_written_seconds_count)')).toBeGreaterThanOrEqual(4);
}, 60_000);

it('evaluates every PromQL expression of the pipeline-health dashboard without error, each with data', async () => {
  const dash = JSON.parse(readFileSync('deploy/grafana/dashboards/pipeline.json', 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  // Grafana's macros as Grafana substitutes them for a short range.
  const grafana = (expr: string) => expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '5m');
  const emptyNow = async () => {
    const empty: string[] = [];
    for (const p of dash.panels) {
      for (const t of p.targets) if ((await prom.query(grafana(t.expr))).length === 0) empty.push(`${p.title}: ${t.expr}`);
    }
    return empty;
  };
  // A rate needs two scrapes inside its window: give Prometheus a few more seconds of them.
  let empty: string[] = [];
  await waitUntil(async () => (empty = await emptyNow()).length === 0, 20_000, 'every panel to have data').catch(() => undefined);
  expect(empty).toEqual([]);
});
