/**
 * Random and adversarial pushes (fast-check) at the real receiver, run as operators run it, in a
 * process of its own beside a worker. Whatever arrives: never a 5xx while Redis is up, the process
 * stays up, answers stay small, every valid record of a partly valid bulk is stored, and the event
 * loop keeps answering (a /healthz probe runs throughout and its delays are measured).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { influxQuery } from '../harness/influx.js';
import { spawnService, type ServiceProcess } from '../harness/proc.js';
import { testEnv, uniqueName, waitUntil } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const TOKEN = 'fuzz-test-token-0123456789abcdef';
const db = uniqueName('fuzz');
let receiver: ServiceProcess;
let worker: ServiceProcess;

beforeAll(async () => {
  await influxQuery(db, `CREATE DATABASE "${db}"`);
  const env = testEnv(db, { PUSH_TOKENS: TOKEN, LOG_LEVEL: 'warn' });
  [receiver, worker] = await Promise.all([spawnService('receiver', env), spawnService('worker', env)]);
});
afterAll(async () => {
  await receiver?.stop('SIGKILL');
  await worker?.stop('SIGKILL');
});

/** A valid CAN record with a time and value of its own, so every one can be found in InfluxDB. */
const validRecord = (n: number) => ({ vehicleno: `FUZZ-${n % 7}`, type: 'can', data: { time: T0 + n, soc: n % 100 } });

/** Values a careless or hostile sender puts where a record should be. */
const junk = fc.oneof(
  fc.jsonValue({ maxDepth: 6 }),
  fc.record({ vehicleno: fc.oneof(fc.string(), fc.jsonValue()), type: fc.oneof(fc.constantFrom('gps', 'can'), fc.jsonValue()), data: fc.jsonValue({ maxDepth: 4 }) }),
  fc.record({ vehicleno: fc.string({ unit: 'binary', maxLength: 200 }), type: fc.constant('can'), data: fc.dictionary(fc.string({ maxLength: 140 }), fc.jsonValue({ maxDepth: 2 })) }),
  fc.integer({ min: 1, max: 3000 }).map((d) => JSON.parse('['.repeat(d) + ']'.repeat(d)) as unknown),
);

let nextValid = 0;
const bodies = fc.oneof(
  // A bulk of valid records among junk: every valid one must land.
  fc.array(fc.oneof(fc.constant('valid' as const), junk), { maxLength: 60 }).map((items) => {
    const valid: number[] = [];
    const bulkData = items.map((x) => (x === 'valid' ? ((valid.push(nextValid), validRecord(nextValid++))) : x));
    return { text: JSON.stringify({ bulkData }), valid };
  }),
  junk.map((v) => ({ text: JSON.stringify(v) ?? 'null', valid: [] as number[] })),
  fc.uint8Array({ maxLength: 2000 }).map((b) => ({ text: Buffer.from(b).toString('latin1'), valid: [] as number[] })),
  fc.string({ maxLength: 500 }).map((s) => ({ text: s, valid: [] as number[] })),
);

it('never answers 5xx, stays up and responsive, answers small, and stores every valid record beside junk', async () => {
  const delays: number[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t = performance.now();
      const res = await fetch(`${receiver.url}/healthz`);
      expect(res.status).toBe(200);
      delays.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const stored: number[] = [];
  await fc.assert(
    fc.asyncProperty(bodies, fc.constantFrom('/push', '/push/bulk', '/push/realtime'), fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8'), async ({ text, valid }, path, type) => {
      const res = await fetch(`${receiver.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type }, body: text });
      const answer = await res.text();
      expect(res.status, answer).toBeLessThan(500);
      expect(answer.length).toBeLessThan(2_000 + 120 * 60);
      expect(res.headers.get('x-delivery-id')).toMatch(/^[0-9a-f-]{36}$/);
      if (res.status === 202) stored.push(...valid);
    }),
    { numRuns: 600, seed: 20_261_122 },
  );
  probing = false;
  await probe;

  // The process is still the one that started, and still answers.
  expect(receiver.child.exitCode).toBeNull();
  expect((await fetch(`${receiver.url}/healthz`)).status).toBe(200);
  const sorted = [...delays].sort((a, b) => a - b);
  const p99 = sorted[Math.floor(sorted.length * 0.99)]!;
  expect(sorted.length).toBeGreaterThan(20);
  expect(p99, `healthz p99 ${p99.toFixed(1)} ms over ${sorted.length} probes`).toBeLessThan(250);

  // Every valid record of a bulk that was answered 202 is in InfluxDB, exactly.
  expect(stored.length).toBeGreaterThan(50);
  const want = new Set(stored.map((n) => T0 + n));
  await waitUntil(async () => (await influxQuery(db, 'SELECT count(soc) FROM can'))[0]?.count === want.size, 30_000, 'every valid record stored');
  const rows = await influxQuery(db, 'SELECT soc, vehicleno FROM can');
  expect(rows.map((r) => r.time).sort()).toEqual([...want].sort());
  for (const r of rows) expect(r.soc).toBe((Number(r.time) - T0) % 100);
});
