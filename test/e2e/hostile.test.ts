/**
 * Careless and hostile senders against the real receiver: every push costs bounded work, gets a
 * clear 4xx naming what was wrong, and loses nothing valid beside it.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, TEST_TOKEN, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ MAX_RECORDS_PER_PUSH: '6000', HTTP_REQUEST_TIMEOUT: '2s', HTTP_HEADERS_TIMEOUT: '2s' });
});
afterAll(async () => svc?.close());

const can = (i: number, v = 'HOST-1') => ({ vehicleno: v, type: 'can', data: { time: T0 + i, soc: i } });

/** A raw HTTP/1.1 exchange, for what fetch will not send. */
function raw(request: string | Buffer, opts: { trickle?: boolean; waitMs?: number } = {}): Promise<{ text: string; ms: number }> {
  const { port } = new URL(svc.url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), '127.0.0.1');
    let text = '';
    sock.on('data', (d) => (text += d.toString('latin1')));
    sock.on('close', () => resolve({ text, ms: Date.now() - started }));
    sock.on('error', reject);
    if (opts.trickle) {
      sock.write(request);
      const timer = setInterval(() => sock.writable && sock.write('['), 300);
      sock.on('close', () => clearInterval(timer));
    } else sock.write(request);
    if (opts.waitMs) setTimeout(() => sock.end(), opts.waitMs);
  });
}

describe('bounded work per push', () => {
  it('refuses a push of more records than MAX_RECORDS_PER_PUSH with 413 naming it', async () => {
    const res = await svc.post('/push/bulk', { bulkData: Array.from({ length: 6001 }, (_, i) => i) });
    expect(res.status).toBe(413);
    expect(res.headers.get('x-delivery-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await res.json()).toMatchObject({ err: 'too_many_records', msg: 'push of 6001 records exceeds MAX_RECORDS_PER_PUSH (6000); split it' });
  });

  it('answers a bulk of thousands of non-records compactly, keeps its valid records, and quarantines it in bounded entries', async () => {
    const valid = [can(1), can(2)];
    const bulkData = [valid[0], ...Array.from({ length: 5000 }, () => 'junk'), valid[1]];
    const before = (await svc.quarantine.list({ count: 10_000 })).length;
    const res = await svc.post('/push/bulk', { bulkData });
    expect(res.status).toBe(202);
    const text = await res.text();
    // Each rejected record beyond the first 100 costs the answer its index and a one-word error.
    expect(text.length).toBeLessThan(100 * 300 + 4900 * 40);
    const body = JSON.parse(text) as { data: { accepted: number; rejected: Array<{ index: number; error: string }> } };
    expect(body.data.accepted).toBe(2);
    expect(body.data.rejected).toHaveLength(5000);
    expect(body.data.rejected.map((r) => r.index)).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    expect(body.data.rejected[0]!.error).toBe('expected a push record {"vehicleno", "type", "data"}, got "junk"');
    expect(body.data.rejected[100]!.error).toBe('invalid');
    const entries = (await svc.quarantine.list({ count: 10_000 })).slice(before);
    expect(entries).toHaveLength(101);
    expect(entries[100]).toMatchObject({ index: -1, reason: '4900 more rejected record(s), from index 101; the whole push is kept here', truncated: false, raw: JSON.stringify({ bulkData }) });
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'HOST-1'`, 2)).toEqual(valid.map((r) => ({ time: r.data.time, soc: r.data.soc })));
  });

  it('takes a push nested thousands of levels deep as one invalid record, never a 5xx, and stores what is valid beside it', async () => {
    const deep = `{"vehicleno":"HOST-2","type":"can","data":{"soc":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const res = await svc.post('/push/bulk', `{"bulkData":[${JSON.stringify(can(3, 'HOST-2'))},${deep}]}`);
    expect(res.status).toBe(202);
    const body = (await res.json()) as { data: { accepted: number; rejected: unknown[] } };
    expect(body.data).toMatchObject({ accepted: 1, rejected: [{ index: 1, error: 'nested deeper than 32 levels; a push record nests 2' }] });
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'HOST-2'`, 1)).toEqual([{ time: T0 + 3, soc: 3 }]);
  });

  it('keeps every refused record it answered 202 for: the quarantine drops nothing to make room', async () => {
    const before = (await svc.quarantine.list({ count: 100_000 })).length;
    for (let i = 0; i < 12; i++) {
      const res = await svc.post('/push/bulk', { bulkData: Array.from({ length: 100 }, () => ({ vehicleno: 'Q', type: 'gps', data: {} })) });
      expect(res.status).toBe(202);
    }
    expect((await svc.quarantine.list({ count: 100_000 })).length - before).toBe(1200);
  });
});

describe('strict text', () => {
  it('refuses invalid UTF-8 with 400 and quarantines the bytes', async () => {
    const bytes = Buffer.concat([Buffer.from('{"vehicleno":"KA'), Buffer.from([0xff, 0xfe]), Buffer.from('","type":"can","data":{"soc":1}}')]);
    const res = await svc.post('/push/realtime', new Uint8Array(bytes));
    expect(res.status).toBe(400);
    const id = res.headers.get('x-delivery-id');
    expect(await res.json()).toMatchObject({ err: 'invalid_text', msg: 'body is not valid UTF-8; send JSON encoded as UTF-8' });
    const entry = (await svc.quarantine.list({ count: 100_000 })).find((e) => e.deliveryId === id);
    expect(entry?.raw).toBe(`base64:${bytes.toString('base64')}`);
  });

  it('refuses a number beyond the range of a double saying so, and stores the record beside it', async () => {
    const res = await svc.post('/push/bulk', `{"bulkData":[${JSON.stringify(can(7, 'HOST-4'))},{"vehicleno":"HOST-4","type":"can","data":{"time":${T0 + 8},"soc":1e400}}]}`);
    expect(res.status).toBe(202);
    expect(((await res.json()) as { data: unknown }).data).toMatchObject({
      accepted: 1,
      rejected: [{ index: 1, error: 'data.soc: expected a finite number or numeric string, got a number out of range of a double (read as Infinity)' }],
    });
    expect(await svc.waitForRows(`SELECT soc FROM can WHERE vehicleno = 'HOST-4'`, 1)).toEqual([{ time: T0 + 7, soc: 7 }]);
  });

  it('refuses a declared charset other than UTF-8 with 415', async () => {
    const res = await svc.post('/push/realtime', can(1), { headers: { 'content-type': 'application/json; charset=ISO-8859-1' } });
    expect(res.status).toBe(415);
    expect(res.headers.get('x-delivery-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await res.json()).toMatchObject({ err: 'unsupported_media_type', msg: 'charset iso-8859-1 is not accepted; send JSON encoded as UTF-8' });
    expect((await svc.post('/push/realtime', can(5), { headers: { 'content-type': 'application/json; charset="UTF-8"' } })).status).toBe(202);
  });
});

describe('the contract', () => {
  it('carries X-Delivery-Id on a 401, and takes X-Api-Key beside an unrelated Basic header', async () => {
    const denied = await svc.post('/push/realtime', can(1), { token: null });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('x-delivery-id')).toMatch(/^[0-9a-f-]{36}$/);
    const res = await svc.post('/push/realtime', can(6, 'HOST-3'), { token: null, headers: { authorization: 'Basic dXNlcjpwYXNz', 'x-api-key': TEST_TOKEN } });
    expect(res.status).toBe(202);
  });

  it('cuts a body trickled byte by byte with 408 well within a minute', async () => {
    const head = `POST /push/bulk HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`;
    const { text, ms } = await raw(head, { trickle: true });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(ms).toBeLessThan(6_000);
  });

  it('refuses a body declared over the limit before sending 100 Continue', async () => {
    const head = `POST /push/bulk HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${20 * 1_048_576}\r\n\r\n`;
    const { text } = await raw(head, { waitMs: 1_000 });
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).not.toContain('100 Continue');
    expect(text).toContain('"err":"payload_too_large"');
  });
});
