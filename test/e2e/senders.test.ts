/**
 * Senders as the README's sender's guide describes them: named tokens (plain or as a SHA-256 digest),
 * Standard Webhooks signatures made by the `standardwebhooks` library and by the feed, idempotency keys,
 * and per-sender rate limits shared through Redis.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../src/telemetry/signature.js';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { startTestService, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const FLEET_TOKEN = 'fleet-a-token-0123456789';
const HASHED_TOKEN = 'fleet-b-token-abcdefghij';
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const OLD_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const SIGNER_ONLY = `whsec_${randomBytes(24).toString('base64')}`;

let svc: TestService;
let queue: Queue;
beforeAll(async () => {
  svc = await startTestService({
    PUSH_TOKENS: `fleet-a:${FLEET_TOKEN},fleet-b:sha256:${createHash('sha256').update(HASHED_TOKEN).digest('hex')},signer:signer-token-0123456789`,
    PUSH_SIGNING_SECRETS: `signer:${SECRET},signer:${OLD_SECRET},hooks:${SIGNER_ONLY}`,
    RATE_LIMIT_RECORDS: '0',
  });
  queue = new Queue(svc.cfg.QUEUE_NAME, { connection: { url: svc.cfg.REDIS_URL } });
});
afterAll(async () => {
  await queue?.close();
  await svc?.close();
});

const can = (i: number, v: string, withTime = true) => ({ vehicleno: v, type: 'can', data: withTime ? { time: T0 + i, soc: i } : { soc: i } });
const push = (body: string, headers: Record<string, string>) =>
  fetch(`${svc.url}/push/bulk`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('named senders', () => {
  it('take a named token and a token given as its SHA-256 digest, and the quarantine names the sender', async () => {
    expect((await push(JSON.stringify({ bulkData: [can(1, 'NS-1')] }), { authorization: `Bearer ${FLEET_TOKEN}` })).status).toBe(202);
    const res = await push(JSON.stringify({ bulkData: [can(2, 'NS-1'), { bad: true }] }), { 'x-api-key': HASHED_TOKEN });
    expect(res.status).toBe(202);
    const id = res.headers.get('x-delivery-id');
    const entry = (await svc.quarantine.list({ count: 10_000 })).find((e) => e.deliveryId === id);
    expect(entry).toMatchObject({ sender: 'fleet-b', index: 1 });
    expect((await push('{"bulkData":[]}', { authorization: `Bearer sha256:${createHash('sha256').update(HASHED_TOKEN).digest('hex')}` })).status).toBe(401);
  });
});

describe('signed deliveries', () => {
  const body = (i: number) => JSON.stringify({ bulkData: [can(i, 'SIG-1')] });
  const now = () => new Date();

  it('accept pushes signed by the standardwebhooks library and by the feed, with the current or the old secret', async () => {
    const std = new StandardWebhook(SECRET);
    const b1 = body(10);
    expect((await push(b1, { authorization: 'Bearer signer-token-0123456789', 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': std.sign('msg_1', now(), b1) })).status).toBe(202);
    const stdOld = new StandardWebhook(OLD_SECRET);
    const b2 = body(11);
    const ts2 = now();
    expect((await push(b2, { authorization: 'Bearer signer-token-0123456789', 'webhook-id': 'msg_2', 'webhook-timestamp': String(Math.floor(ts2.getTime() / 1000)), 'webhook-signature': stdOld.sign('msg_2', ts2, b2) })).status).toBe(202);
    const b3 = body(12);
    const ts3 = Math.floor(Date.now() / 1000);
    expect((await push(b3, { 'webhook-id': 'msg_3', 'webhook-timestamp': String(ts3), 'webhook-signature': `v1,bm9wZQ== ${sign(SIGNER_ONLY, 'msg_3', ts3, b3)}` })).status).toBe(202);
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'SIG-1'`, 3)).toEqual([10, 11, 12].map((i) => ({ time: T0 + i, soc: i })));
  });

  it('refuse an unsigned push from a signing sender, a tampered body, a stale timestamp and an unknown secret', async () => {
    const b = body(20);
    const ts = Math.floor(Date.now() / 1000);
    const signed = (secret: string, at = ts, payload = b) => ({ 'webhook-id': 'msg_x', 'webhook-timestamp': String(at), 'webhook-signature': sign(secret, 'msg_x', at, payload) });
    const cases: Array<[Record<string, string>, string]> = [
      [{ authorization: 'Bearer signer-token-0123456789' }, 'sender signer signs its deliveries: webhook-signature is missing'],
      [{ authorization: 'Bearer signer-token-0123456789', ...signed(SECRET, ts, body(21)) }, 'signature not accepted: no v1 signature matches a signing secret of this sender'],
      [{ authorization: 'Bearer signer-token-0123456789', ...signed(SECRET, ts - 600) }, 'signature not accepted: webhook-timestamp is more than 300 s from now (a replay, or a clock off)'],
      [signed(`whsec_${randomBytes(24).toString('base64')}`), 'signature not accepted: no v1 signature matches a signing secret of this sender'],
    ];
    for (const [headers, msg] of cases) {
      const res = await push(b, headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ err: 'invalid_signature', msg });
    }
  });
});

describe('idempotency keys', () => {
  it('answer a retried delivery with its first answer and store a CAN record without time once', async () => {
    const b = JSON.stringify({ bulkData: [can(30, 'IDEM-1', false), { nope: 1 }] });
    const headers = { authorization: `Bearer ${FLEET_TOKEN}`, 'idempotency-key': 'delivery-30' };
    const first = await push(b, headers);
    const firstBody = await first.text();
    expect(first.status).toBe(202);
    await new Promise((r) => setTimeout(r, 20)); // a retry later: a receive-time stamp would differ
    const again = await push(b, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-delivery-id')).toBe(first.headers.get('x-delivery-id'));
    expect(await again.text()).toBe(firstBody);
    // Another sender's delivery with the same key is its own.
    expect((await push(JSON.stringify({ bulkData: [can(31, 'IDEM-1')] }), { 'x-api-key': HASHED_TOKEN, 'idempotency-key': 'delivery-30' })).headers.get('idempotent-replayed')).toBeNull();
    const rows = await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'IDEM-1'`, 2);
    await new Promise((r) => setTimeout(r, 300));
    expect((await svc.query(`SELECT soc FROM can WHERE vehicleno = 'IDEM-1'`)).map((r) => r.soc)).toEqual(rows.map((r) => r.soc));
    expect(rows.map((r) => r.soc).sort()).toEqual([30, 31]);
    const entries = (await svc.quarantine.list({ count: 10_000 })).filter((e) => e.deliveryId === first.headers.get('x-delivery-id'));
    expect(entries).toHaveLength(1);
  });

  it('enqueues once when a retry races the first delivery', async () => {
    const b = JSON.stringify({ bulkData: [can(40, 'IDEM-2', false)] });
    const headers = { authorization: `Bearer ${FLEET_TOKEN}`, 'idempotency-key': 'race-40' };
    // Staggered by a few ms, so that were any enqueued twice its receive-time stamp would differ.
    const later = (ms: number) => new Promise<Response>((r) => setTimeout(() => r(push(b, headers)), ms));
    const answers = await Promise.all([push(b, headers), later(3), later(6)]);
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202]);
    await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'IDEM-2'`, 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(await svc.query(`SELECT count(soc) FROM can WHERE vehicleno = 'IDEM-2'`)).toEqual([{ time: 0, count: 1 }]);
  });

  it('refuses a key that is not printable ASCII', async () => {
    const res = await push('{"bulkData":[]}', { authorization: `Bearer ${FLEET_TOKEN}`, 'idempotency-key': 'x'.repeat(300) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ err: 'invalid_idempotency_key' });
  });
});

describe('rate limits', () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startTestService({ PUSH_TOKENS: `slow:${FLEET_TOKEN},other:${HASHED_TOKEN}`, RATE_LIMIT_RECORDS: '50' });
  });
  afterAll(async () => limited?.close());

  it('answers 429 with Retry-After over a sender’s rate, per sender, and 413 for a push no bucket can hold', async () => {
    const post = (n: number, token: string) => limited.post('/push/bulk', { bulkData: Array.from({ length: n }, (_, i) => can(i, 'RL')) }, { token });
    expect((await post(60, FLEET_TOKEN)).status).toBe(202);
    const over = await post(60, FLEET_TOKEN);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await over.json()).toMatchObject({ err: 'rate_limited', msg: 'slow is over its rate limit (RATE_LIMIT_RECORDS=50); retry after the delay given' });
    expect((await post(60, HASHED_TOKEN)).status).toBe(202);
    const huge = await post(101, FLEET_TOKEN);
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ err: 'too_many_records' });
  });
});

describe('the emulator feed as a signing sender', () => {
  it('signs every delivery so that a signature-only sender is accepted, and its retries carry one webhook-id', async () => {
    const result = await runFeed({ url: svc.url, signingSecret: SIGNER_ONLY, mode: 'mixed', count: 300, bulkSize: 50, rate: Infinity, vehicles: 5, seed: 3, invalidRatio: 0 });
    expect(result.failed).toBe(0);
    expect(result.rejected).toBe(0);
    expect(result.acknowledged).toBe(300);
  });
});
