import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const rec = (time: number) => ({
  vehicleno: 'REDIS-DOWN-1',
  type: 'gps',
  data: { lat: 1, lng: 2, alti: 3, speed: 4, ignstatus: 1, time },
});

let redis: LocalRedis;
let svc: TestService;

beforeAll(async () => {
  redis = await startRedis({ appendonly: true });
  svc = await startTestService({ REDIS_URL: redis.url, ENQUEUE_TIMEOUT: '1s' });
});
afterAll(async () => {
  await svc?.close();
  await redis?.stop();
});

it('answers 503 with Retry-After while Redis is down, never 2xx, and recovers without a restart', async () => {
  expect((await svc.post('/push/realtime', rec(T0))).status).toBe(202);
  await svc.waitForRows(`SELECT lat FROM gps WHERE vehicleno = 'REDIS-DOWN-1'`, 1);

  await redis.stop({ keepData: true });
  const res = await svc.post('/push/realtime', rec(T0 + 1));
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  // The sender can name the delivery that was not stored when it reports it.
  expect(res.headers.get('x-delivery-id')).toMatch(/^[0-9a-f-]{36}$/);
  const body = (await res.json()) as { status: string; err: string; msg: string };
  expect(body.status).toBe('FAILURE');
  expect(body.err).toBe('unavailable');
  expect(body.msg).toMatch(/^push not stored, retry later: /);
  expect((await fetch(`${svc.url}/readyz`)).status).toBe(503);

  await redis.restart();
  await waitUntil(async () => (await fetch(`${svc.url}/readyz`)).status === 200, 20_000, 'readiness after Redis returned');
  expect((await svc.post('/push/realtime', rec(T0 + 2))).status).toBe(202);
  const rows = await svc.waitForRows(`SELECT lat FROM gps WHERE vehicleno = 'REDIS-DOWN-1'`, 2);
  expect(rows.map((r) => r.time)).toEqual([T0, T0 + 2]);
});
