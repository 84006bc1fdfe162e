import { recordsOf as recordsOfRows } from '../../ingest/flatten/points.js';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../log/index.js';
import type { NewQuarantineEntry } from '../../ingest/queue/quarantine.js';
import { quarantineInMemory } from '../../ingest/queue/quarantine.testkit.js';
import { pushRoutes } from '../../ingest/receive/app.js';
import { parseSenders } from '../../config/senders.js';
import { fieldNames } from '../../telemetry/fields.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { type FailedRecord, type FeedOptions, type RejectedRecord, runFeed } from './feed.js';
import type { PushRecord } from './records.js';
const CAN_FIELDS = fieldNames('can');

interface Received {
  path: string;
  auth: string | null;
  body: unknown;
  at: number;
}

type Answer = (req: Received, n: number) => Response | Promise<Response>;

/** 202 with the receiver's acknowledgement; `rejected` lists indexes refused. */
function ack(count: number, rejected: Array<{ index: number; error: string }> = []): Response {
  const body = {
    status: 'SUCCESS',
    data: { deliveryId: 'd-1', accepted: count - rejected.length, rejected },
    err: '',
    msg: 'accepted',
  };
  return Response.json(body, { status: 202 });
}

const recordsOf = (req: Received): unknown[] =>
  req.path === '/push/bulk' ? (req.body as { bulkData: unknown[] }).bulkData : [req.body];

const acceptAll: Answer = (req) => ack(recordsOf(req).length);

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** Serves `app` on a free port of 127.0.0.1 until the end of the test. */
async function serveApp(app: Hono): Promise<string> {
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve({ server: s, port: info.port }));
  });
  closers.push(
    () =>
      new Promise<void>((done) => {
        server.close(() => done());
        if ('closeAllConnections' in server) server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${port}`;
}

/** A stand-in for the receiver whose answers each test chooses. */
async function receiver(answer: Answer): Promise<{ url: string; requests: Received[] }> {
  const requests: Received[] = [];
  const app = new Hono();
  app.post('/push/:kind', async (c) => {
    const req: Received = { path: c.req.path, auth: c.req.header('authorization') ?? null, body: await c.req.json(), at: Date.now() };
    requests.push(req);
    return answer(req, requests.length);
  });
  return { url: await serveApp(app), requests };
}

const fast: Partial<FeedOptions> = { rate: Infinity, backoffMs: 5, maxBackoffMs: 20, seed: 5, vehicles: 4 };

describe('bulk deliveries', () => {
  it('retries after a 503 and acknowledges the records once the receiver takes them', async () => {
    const rx = await receiver((req, n) => (n === 1 ? new Response('busy', { status: 503 }) : acceptAll(req, n)));
    const result = await runFeed({ ...fast, url: rx.url, token: 'push-secret', count: 10, bulkSize: 10, keep: true });
    expect(rx.requests.map((r) => r.path)).toEqual(['/push/bulk', '/push/bulk']);
    expect(rx.requests[1]?.body).toEqual(rx.requests[0]?.body);
    expect(rx.requests.map((r) => r.auth)).toEqual(['Bearer push-secret', 'Bearer push-secret']);
    expect(result.retries).toBe(1);
    expect(result.records.acknowledged).toEqual(recordsOf(rx.requests[1] as Received));
    expect(result).toMatchObject({ sent: 10, deliveries: 1, acknowledged: 10, failedDeliveries: 0, rejected: 0, failed: 0, unconfirmed: 0, errors: [], otherErrors: 0 });
  });

  it('acknowledges exactly the records not listed as rejected', async () => {
    const rx = await receiver((req) => ack(recordsOf(req).length, [{ index: 1, error: 'lat out of range' }, { index: 3, error: 'no time' }]));
    const acked: PushRecord[] = [];
    const refused: RejectedRecord[] = [];
    const result = await runFeed({
      ...fast, url: rx.url, count: 6, bulkSize: 6, keep: true,
      onAck: (records) => acked.push(...records),
      onReject: (records) => refused.push(...records),
    });
    const sent = recordsOf(rx.requests[0] as Received);
    expect(result.records.acknowledged).toEqual([sent[0], sent[2], sent[4], sent[5]]);
    expect(acked).toEqual(result.records.acknowledged);
    expect(result.records.rejected).toEqual([
      { record: sent[1], injected: false, error: 'lat out of range', status: 202 },
      { record: sent[3], injected: false, error: 'no time', status: 202 },
    ]);
    expect(refused).toEqual(result.records.rejected);
    expect(result).toMatchObject({
      acknowledged: 4,
      rejected: 2,
      rejectedInjected: 0,
      errors: [
        { error: 'lat out of range', outcome: 'rejected', count: 1 },
        { error: 'no time', outcome: 'rejected', count: 1 },
      ],
    });
  });

  it('does not retry a 4xx other than 408 and 429, and reports its records rejected', async () => {
    const rx = await receiver(() => Response.json({ status: 'FAILURE', data: null, err: 'unauthorized', msg: 'bad token' }, { status: 401 }));
    const result = await runFeed({ ...fast, url: rx.url, count: 3, bulkSize: 3, keep: true });
    expect(rx.requests).toHaveLength(1);
    expect(result.acknowledged).toBe(0);
    expect(result.records.rejected.map((r) => [r.error, r.status])).toEqual([
      ['unauthorized: bad token', 401],
      ['unauthorized: bad token', 401],
      ['unauthorized: bad token', 401],
    ]);
    expect(result).toMatchObject({ rejected: 3, errors: [{ error: 'unauthorized: bad token', outcome: 'rejected', count: 3 }] });
    expect(result.retries).toBe(0);
  });

  it('honours Retry-After on a 429', async () => {
    const rx = await receiver((req, n) => (n === 1 ? new Response(null, { status: 429, headers: { 'retry-after': '1' } }) : acceptAll(req, n)));
    const result = await runFeed({ ...fast, url: rx.url, count: 2, bulkSize: 2 });
    const [first, second] = rx.requests;
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect(result.acknowledged).toBe(2);
  });

  it('gives up after maxAttempts and reports the delivery failed', async () => {
    const rx = await receiver(() => new Response(null, { status: 503 }));
    const failed: FailedRecord[] = [];
    const result = await runFeed({ ...fast, url: rx.url, count: 2, bulkSize: 2, maxAttempts: 3, onFail: (records) => failed.push(...records) });
    expect(rx.requests).toHaveLength(3);
    expect(result.failedDeliveries).toBe(1);
    expect(result.retries).toBe(2);
    expect(failed.map((f) => f.error)).toEqual(['HTTP 503', 'HTTP 503']);
    expect(result).toMatchObject({ acknowledged: 0, failed: 2, errors: [{ error: 'HTTP 503', outcome: 'failed', count: 2 }] });
    expect(result.records).toBeUndefined();
  });

  it('retries a delivery that timed out', async () => {
    const rx = await receiver(async (req, n) => {
      if (n === 1) await new Promise((r) => setTimeout(r, 300));
      return acceptAll(req, n);
    });
    const result = await runFeed({ ...fast, url: rx.url, count: 2, bulkSize: 2, timeoutMs: 100 });
    expect(result.retries).toBe(1);
    expect(result.acknowledged).toBe(2);
  });

  it('reports a network error as a failed delivery', async () => {
    const rx = await receiver(acceptAll);
    await Promise.all(closers.splice(0).map((c) => c()));
    const result = await runFeed({ ...fast, url: rx.url, count: 1, bulkSize: 1, maxAttempts: 2 });
    expect(result.failedDeliveries).toBe(1);
    expect(result.errors).toEqual([{ error: expect.stringMatching(/^network error/), outcome: 'failed', count: 1 }]);
  });

  it('counts a 2xx without the documented acknowledgement as unconfirmed, not acknowledged', async () => {
    const rx = await receiver(() => new Response('ok', { status: 200 }));
    const result = await runFeed({ ...fast, url: rx.url, count: 4, bulkSize: 4, keep: true });
    expect(result.acknowledged).toBe(0);
    expect(result.unconfirmed).toBe(4);
    expect(result.records.unconfirmed).toHaveLength(4);
  });
});

describe('records', () => {
  it('mix vehicles and both types in a bulk, with the spec\'s shapes', async () => {
    const rx = await receiver(acceptAll);
    const result = await runFeed({ ...fast, url: rx.url, count: 200, bulkSize: 100, keep: true });
    const sent = rx.requests.flatMap(recordsOf) as PushRecord[];
    expect(sent).toHaveLength(200);
    expect(new Set(sent.map((r) => r.vehicleno)).size).toBe(4);
    for (const bulk of rx.requests) {
      const types = new Set(recordsOf(bulk).map((r) => (r as PushRecord).type));
      expect(types).toEqual(new Set(['gps', 'can']));
    }
    const canFields = new Set(['time', ...CAN_FIELDS]);
    for (const r of sent) {
      expect(Object.keys(r)).toEqual(['vehicleno', 'type', 'data']);
      expect(Number.isInteger(r.data.time)).toBe(true);
      if (r.type === 'gps') expect(Object.keys(r.data)).toEqual(['lat', 'lng', 'alti', 'speed', 'ignstatus', 'time']);
      else for (const k of Object.keys(r.data)) expect(canFields).toContain(k);
    }
    expect(result.records.acknowledged).toEqual(sent);
  });

  it('never give one vehicle two records of a type in the same millisecond', async () => {
    const rx = await receiver(acceptAll);
    // A stopped clock: every record would get the same time without the per-vehicle guard.
    const result = await runFeed({ ...fast, url: rx.url, count: 300, bulkSize: 100, now: () => 1_748_779_200_000, keep: true });
    const keys = result.records.acknowledged.map((r) => `${r.vehicleno}/${r.type}/${r.data.time}`);
    expect(new Set(keys).size).toBe(300);
  });

  it('are paced at the requested rate', async () => {
    const rx = await receiver(acceptAll);
    const started = Date.now();
    await runFeed({ ...fast, url: rx.url, count: 20, bulkSize: 5, rate: 100 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(rx.requests).toHaveLength(4);
  });

  it('stop by themselves after durationMs', async () => {
    const rx = await receiver(acceptAll);
    const result = await runFeed({ ...fast, url: rx.url, durationMs: 300, rate: 50, bulkSize: 5 });
    expect(result.sent).toBeGreaterThanOrEqual(10);
    expect(result.sent).toBeLessThanOrEqual(15);
  });
});

describe('realtime and mixed', () => {
  it('send one bare record per realtime delivery; a 400 invalid_record rejects it without retry', async () => {
    const rx = await receiver((req, n) =>
      (req.body as { type?: unknown }).type === 'gps' && (req.body as { data?: unknown }).data !== 'n/a'
        ? acceptAll(req, n)
        : Response.json({ status: 'FAILURE', data: null, err: 'invalid_record', msg: 'not a gps record' }, { status: 400 }),
    );
    const result = await runFeed({ ...fast, url: rx.url, mode: 'realtime', count: 12, keep: true });
    expect(rx.requests).toHaveLength(12);
    expect(rx.requests.every((r) => r.path === '/push/realtime')).toBe(true);
    expect(rx.requests.every((r) => !('bulkData' in (r.body as object)))).toBe(true);
    expect(result.records.acknowledged.every((r) => r.type === 'gps')).toBe(true);
    expect(result.records.rejected.every((r) => r.error === 'invalid_record: not a gps record' && r.status === 400)).toBe(true);
    expect(result.acknowledged + result.rejected).toBe(12);
    expect(result.rejected).toBeGreaterThan(0);
    expect(result.errors).toEqual([{ error: 'invalid_record: not a gps record', outcome: 'rejected', count: result.rejected }]);
    expect(result.retries).toBe(0);
  });

  it('mixed mode uses both kinds of delivery', async () => {
    const rx = await receiver(acceptAll);
    const result = await runFeed({ ...fast, url: rx.url, mode: 'mixed', count: 60, bulkSize: 10 });
    expect(new Set(rx.requests.map((r) => r.path))).toEqual(new Set(['/push/bulk', '/push/realtime']));
    expect(result.acknowledged).toBe(60);
  });

  it('injects invalid records at the requested ratio, and reports them separately', async () => {
    const rx = await receiver((req) => {
      const records = recordsOf(req);
      const rejected = records.flatMap((r, index) => {
        const rec = r as { vehicleno?: unknown; type?: unknown; data?: { time?: unknown; lat?: unknown; soc?: unknown } | string };
        const ok =
          typeof rec.vehicleno === 'string' &&
          (rec.type === 'gps' || rec.type === 'can') &&
          typeof rec.data === 'object' &&
          Number.isInteger(rec.data.time) &&
          rec.data.lat !== 'north' &&
          rec.data.soc !== 'full';
        return ok ? [] : [{ index, error: 'invalid' }];
      });
      return ack(records.length, rejected);
    });
    const result = await runFeed({ ...fast, url: rx.url, count: 200, bulkSize: 50, invalidRatio: 0.25, keep: true });
    expect(result.injectedInvalid).toBeGreaterThan(25);
    expect(result.injectedInvalid).toBeLessThan(75);
    expect(result.rejected).toBe(result.injectedInvalid);
    expect(result.rejectedInjected).toBe(result.injectedInvalid);
    expect(result.records.rejected.every((r) => r.injected)).toBe(true);
    expect(result.acknowledgedInvalid).toBe(0);
    expect(result.acknowledged).toBe(200 - result.injectedInvalid);
    expect(result.records.acknowledged).toHaveLength(result.acknowledged);
  });
});

describe('against the project\'s receiver (src/ingest/receive)', () => {
  it('every generated record passes its validation, every injected invalid one is quarantined', async () => {
    const enqueued: TelemetryRecord[] = [];
    const quarantined: NewQuarantineEntry[] = [];
    const routes = pushRoutes(
      { partitions: 1, enqueueRows: async (rows) => void enqueued.push(...rows.flatMap(recordsOfRows)), enqueueRowsOnce: async (rows) => void enqueued.push(...rows.flatMap(recordsOfRows)) },
      quarantineInMemory(quarantined),
      { senders: parseSenders(['feed:feed-token-0123456789'], []).senders, signatureToleranceMs: 300_000, bodyLimit: 5_000_000, maxRecords: 10_000, quarantineRawLimit: 10_000, flatten: { temperatureSentinels: [] }, retryAfterSeconds: 1, log: createLogger('silent') },
    );
    const url = await serveApp(routes);
    const result = await runFeed({ ...fast, url, token: 'feed-token-0123456789', mode: 'mixed', count: 600, bulkSize: 50, vehicles: 20, invalidRatio: 0.1, keep: true });
    expect(result.injectedInvalid).toBeGreaterThan(20);
    expect(result.acknowledgedInvalid).toBe(0);
    expect(result.rejected).toBe(result.injectedInvalid);
    expect(result.rejectedInjected).toBe(result.injectedInvalid);
    expect(result.acknowledged).toBe(600 - result.injectedInvalid);
    expect(quarantined).toHaveLength(result.injectedInvalid);
    expect(enqueued.map((r) => `${r.vehicleno}/${r.type}/${r.time}`).sort()).toEqual(
      result.records.acknowledged.map((r) => `${r.vehicleno}/${r.type}/${r.data.time}`).sort(),
    );
  });
});
