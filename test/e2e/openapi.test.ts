/** The push API's description (OpenAPI 3.1) is the one served and checked in, and real answers fit it. */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { OPENAPI, openApiJson } from '../../src/ingest/receive/openapi.js';
import { startService, type RunningService } from '../../src/ingest/service/index.js';
import { createLogger } from '../../src/log/index.js';
import { pushRecordSchema } from '../../src/telemetry/schema.js';
import { Fleet } from '../../src/upstream/emulator/fleet.js';
import { canRecordData } from '../../src/upstream/emulator/can.js';
import { Rng } from '../../src/upstream/emulator/prng.js';
import { startTestService, TEST_TOKEN, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

let svc: TestService;
let down: RunningService;
beforeAll(async () => {
  svc = await startTestService({ RATE_LIMIT_PUSHES: '2' });
  // A receiver whose Redis is not there: what it answers is the 503.
  down = await startService(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', REDIS_URL: 'redis://127.0.0.1:1', PUSH_TOKENS: TEST_TOKEN, SERVICE_MODE: 'receiver', ADMIN_PORT: '0' }), createLogger('silent'));
});
afterAll(async () => {
  await svc?.close();
  await down?.close();
});

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'openapi', components: OPENAPI.components });

it('is checked in as docs/openapi.json and served at /openapi.json, the same', async () => {
  expect(readFileSync('docs/openapi.json', 'utf8')).toBe(openApiJson());
  expect(await (await fetch(`${svc.url}/openapi.json`)).text()).toBe(openApiJson());
  expect(JSON.parse(readFileSync('docs/push-record.schema.json', 'utf8'))).toEqual(JSON.parse(JSON.stringify(pushRecordSchema)));
});

it('describes the records the emulator sends as valid push records', () => {
  const valid = ajv.getSchema('openapi#/components/schemas/PushRecord')!;
  const fleet = Fleet.create({ seed: 2, size: 5 });
  const rng = Rng.seeded(4);
  for (let k = 0; k < 200; k++) {
    const v = fleet.vehicles[k % 5]!;
    const t = T0 + k * 1_000;
    const rec = k % 2 ? { vehicleno: v.vehicleno, type: 'gps', data: fleet.gpsAt(v, t) } : { vehicleno: v.vehicleno, type: 'can', data: canRecordData(fleet.canStateAt(v, t), rng) };
    expect(valid(JSON.parse(JSON.stringify(rec))), JSON.stringify(valid.errors)).toBe(true);
  }
  expect(valid({ vehicleno: 'V', type: 'gps', data: { lat: 91, lng: 0, alti: 0, speed: 0, ignstatus: 0, time: T0 } })).toBe(false);
});

it('fits every answer the receiver gives, status by status, with the headers it promises', async () => {
  const rec = { vehicleno: 'OA-1', type: 'can', data: { time: T0, soc: 1 } };
  const seen = new Set<string>();
  const check = async (res: Response) => {
    const status = String(res.status);
    const spec = (OPENAPI.paths['/push/bulk'].post.responses as Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: { $ref: string } }> }>)[status];
    expect(spec, `status ${status} is described`).toBeDefined();
    for (const h of Object.keys(spec!.headers ?? {})) if (h !== 'Idempotent-Replayed') expect(res.headers.get(h), `${status} has ${h}`).not.toBeNull();
    const ref = spec!.content!['application/json']!.schema.$ref;
    const validate = ajv.getSchema(`openapi${ref}`)!;
    const body: unknown = await res.json();
    expect(validate(body), `${status} ${JSON.stringify(body)}: ${JSON.stringify(validate.errors)}`).toBe(true);
    seen.add(status);
  };
  const post = (body: string, init: { token?: string | null; headers?: Record<string, string> } = {}) => svc.post('/push/bulk', body, init);
  await check(await post(JSON.stringify({ bulkData: [rec, { bad: 1 }] })));
  await check(await post('not json'));
  await check(await svc.post('/push/realtime', { vehicleno: 'OA-1', type: 'gps', data: {} }));
  await check(await post(JSON.stringify({ bulkData: [rec] }), { token: null }));
  await check(await post(JSON.stringify({ bulkData: Array.from({ length: 10_001 }, () => 0) })));
  await check(await post(JSON.stringify({ bulkData: [rec] }), { headers: { 'content-type': 'application/xml' } }));
  let limited: Response | undefined;
  for (let i = 0; i < 10 && !limited; i++) {
    const r = await post(JSON.stringify({ bulkData: [rec] }));
    if (r.status === 429) limited = r;
    else await r.body?.cancel();
  }
  await check(limited!);
  await check(await fetch(`${down.url}/push/bulk`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: JSON.stringify({ bulkData: [rec] }) }));
  expect([...seen].sort()).toEqual(['202', '400', '401', '413', '415', '429', '503']);
});
