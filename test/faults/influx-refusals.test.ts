/**
 * InfluxDB 3 Core refusing the service's database (a sixth one beyond Core's five) for a while, through
 * the whole service: the refusal is the request's, not the records', so nothing is quarantined and every
 * acknowledged record lands once the operator fixes the store.
 */
import { afterAll, expect, inject, it } from 'vitest';
import { startV2Front, type V2Front } from '../../src/devstack/v2front.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';

let front: V2Front | undefined;
let svc: TestService | undefined;
afterAll(async () => {
  await svc?.close();
  await front?.close();
});

it('a refusal of the request is retried until the store is fixed: no record quarantined, every one lands', async () => {
  front = await startV2Front({ upstream: inject('influxRawUrl'), token: inject('influxToken'), profile: '3-core' });
  front.setLimits({ maxDatabases: 0 });
  svc = await startTestService({ INFLUX_URL: front.url, ADMIN_AUTH: 'none', EVENTS: 'off' });
  const T = Date.now() - 60_000;
  for (let b = 0; b < 4; b++) {
    const bulkData = Array.from({ length: 500 }, (_, i) => ({ vehicleno: `REFUSED-${i % 25}`, type: 'can', data: { time: T + b * 500 + i, soc: 40 + (i % 50), battery_voltage: 51.25 } }));
    expect((await svc.post('/push/bulk', { bulkData })).status).toBe(202);
  }
  // Refused for a few seconds: counted as refusals of the request, retried, nothing quarantined or stored.
  const refusedRequests = async () => {
    const text = await (await fetch(`${svc!.adminUrl}/metrics`)).text();
    return Number(/^telematics_write_requests_total\{outcome="request_refused",status_class="4xx"\} (\d+)/m.exec(text)?.[1] ?? 0);
  };
  await waitUntil(async () => (await refusedRequests()) >= 3, 15_000, 'the store to refuse the requests a few times');
  expect(await svc.quarantine.list({ count: 10 })).toEqual([]);
  expect(await svc.query('SELECT count(soc) FROM can')).toEqual([]);

  // The operator raises the limit: every acknowledged record lands, once.
  front.setLimits({ maxDatabases: 10 });
  await waitUntil(async () => ((await svc!.query('SELECT count(soc) FROM can'))[0]?.count ?? 0) === 2_000, 30_000, 'every record to land');
  expect(await svc.quarantine.list({ count: 10 })).toEqual([]);
}, 60_000);
