/**
 * A feed's memory is bounded by its fleet and the deliveries in flight, never by how long it runs
 * (#23): it counts what the receiver answered, and keeps records only when asked.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { runFeed } from './feed.js';

// A full collection on demand, without starting the test process with --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after a full collection. */
function retainedHeap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const MB = 1024 * 1024;

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((done) => {
          s.close(() => done());
          s.closeAllConnections();
        }),
    ),
  );
});

/**
 * A bare node:http stand-in for the receiver: `answer` gets the body's text and returns the 202
 * acknowledgement's `rejected` list, or 'hang' to leave the request unanswered. `open()` is the number
 * of requests being answered right now, `peak` the most at once.
 */
async function receiver(answer: (body: string, path: string) => Array<{ index: number; error: string }> | 'hang' = () => []) {
  let open = 0;
  const stats = { peak: 0, requests: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    open++;
    stats.requests++;
    stats.peak = Math.max(stats.peak, open);
    res.once('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const rejected = answer(body, req.url ?? '');
      if (rejected === 'hang') return;
      const records = body.split('"vehicleno"').length - 1;
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'SUCCESS', data: { deliveryId: `d-${stats.requests}`, accepted: records - rejected.length, rejected }, err: '', msg: 'accepted' }));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats, open: () => open };
}

describe('feed memory', () => {
  it('a long bulk feed keeps counts, not records: its retained heap stays flat', async () => {
    const rx = await receiver();
    const count = 60_000;
    let acked = 0;
    const before = retainedHeap();
    const result = await runFeed({
      url: rx.url, mode: 'bulk', bulkSize: 1000, rate: Infinity, count, vehicles: 50, seed: 2,
      onAck: (records) => void (acked += records.length),
    });
    const grown = retainedHeap() - before;
    // The feed before #23 kept every acknowledged record: about 850 bytes of heap each, 50 MB here
    // (it grew without end: out of memory after 40 minutes at 1,500 records/s). What remains now is the
    // fleet's (its cached plans) and the collector's slack.
    expect(grown / MB).toBeLessThan(15);
    expect(acked).toBe(count);
    expect(result).toMatchObject({ sent: count, acknowledged: count, rejected: 0, failed: 0, unconfirmed: 0, acknowledgedInvalid: 0, errors: [] });
    expect(result.records).toBeUndefined();
    expect(JSON.stringify(result).length).toBeLessThan(2_000);
  }, 30_000);

  it('keeps the records only when asked (keep: true)', async () => {
    const rx = await receiver();
    const result = await runFeed({ url: rx.url, mode: 'bulk', bulkSize: 50, rate: Infinity, count: 200, vehicles: 5, keep: true });
    expect(result.acknowledged).toBe(200);
    expect(result.records.acknowledged).toHaveLength(200);
    expect(result.records.rejected).toEqual([]);
  });

  it('counts injected invalid records as expected rejections, with a bounded list of distinct errors', async () => {
    // Each refusal names its index: thousands of distinct texts, of which the result keeps 20.
    const rx = await receiver((body) => {
      const { bulkData } = JSON.parse(body) as { bulkData: Array<{ vehicleno?: unknown; type?: unknown; data?: unknown }> };
      return bulkData.flatMap((r, index) => {
        const d = r.data as { time?: unknown; lat?: unknown; soc?: unknown } | undefined;
        const ok = typeof r.vehicleno === 'string' && (r.type === 'gps' || r.type === 'can') && typeof d === 'object' && Number.isInteger(d.time) && d.lat !== 'north' && d.soc !== 'full';
        return ok ? [] : [{ index, error: `record ${index} is invalid` }];
      });
    });
    let rejectedSeen = 0;
    const result = await runFeed({
      url: rx.url, mode: 'bulk', bulkSize: 500, rate: Infinity, count: 20_000, vehicles: 50, invalidRatio: 0.2, seed: 4,
      onReject: (records) => void (rejectedSeen += records.filter((r) => r.injected).length),
    });
    expect(result.injectedInvalid).toBeGreaterThan(3_000);
    expect(result.rejected).toBe(result.injectedInvalid);
    expect(result.rejectedInjected).toBe(result.injectedInvalid);
    expect(rejectedSeen).toBe(result.injectedInvalid);
    expect(result.acknowledged).toBe(20_000 - result.injectedInvalid);
    expect(result.acknowledgedInvalid).toBe(0);
    expect(result.records).toBeUndefined();
    expect(result.errors).toHaveLength(20);
    expect(result.errors.every((e) => e.outcome === 'rejected' && e.count > 0)).toBe(true);
    expect(result.errors.reduce((n, e) => n + e.count, 0) + result.otherErrors).toBe(result.rejected);
    expect(JSON.stringify(result).length).toBeLessThan(5_000);
  }, 30_000);

  it('a receiver that stops answering: the feed retries within its concurrency, and counts what failed', async () => {
    let silentUntil = 0;
    const rx = await receiver(() => (Date.now() < silentUntil ? 'hang' : []));
    const concurrency = 3;
    const bulkSize = 20;
    let open = 0;
    let peakOpen = 0;
    let peakUnsettled = 0;
    let failedSeen = 0;
    const feed = runFeed({
      url: rx.url, mode: 'bulk', bulkSize, rate: 4_000, durationMs: 1_800, vehicles: 20, concurrency,
      timeoutMs: 100, maxAttempts: 3, backoffMs: 20, maxBackoffMs: 40,
      // Requests under way, counted on the feed's side (the server sees an abandoned one close late).
      fetch: async (input, init) => {
        peakOpen = Math.max(peakOpen, ++open);
        try {
          return await fetch(input, init);
        } finally {
          open--;
        }
      },
      onProgress: (r) => {
        peakUnsettled = Math.max(peakUnsettled, r.sent - r.acknowledged - r.failed - r.rejected - r.unconfirmed - r.acknowledgedInvalid);
      },
      onFail: (records) => void (failedSeen += records.length),
    });
    setTimeout(() => (silentUntil = Date.now() + 800), 300);
    const result = await feed;
    // While it waited, the feed had no more deliveries under way than its concurrency, and made no
    // records beyond theirs (the rate is far above what the silent receiver let through).
    expect(peakOpen).toBeLessThanOrEqual(concurrency);
    expect(peakUnsettled).toBeLessThanOrEqual(concurrency * bulkSize);
    expect(result.retries).toBeGreaterThan(0);
    expect(result.failed).toBeGreaterThan(0);
    expect(result.failed).toBe(result.failedDeliveries * bulkSize);
    expect(failedSeen).toBe(result.failed);
    expect(result.errors).toEqual([{ error: 'timeout', outcome: 'failed', count: result.failed }]);
    expect(result.acknowledged + result.failed).toBe(result.sent);
    expect(result.acknowledged).toBeGreaterThan(0);
  }, 15_000);
});
