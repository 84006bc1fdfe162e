/**
 * The client against answers meant to hurt it (issue #46, item 4): redirects to another host, bodies
 * far larger than asked for (plain, chunked and compressed), lists of too many items, and megabyte
 * texts. Every server is a real node:http one on 127.0.0.1.
 */
import { failureOf, serversClosedAfterEach } from './servers.testkit.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_READINGS, DEFAULT_MAX_VEHICLES, UpstreamClient, type UpstreamClientOptions } from './client.js';
import {
  UPSTREAM_TEXT_MAX,
  UpstreamAnswerTooLargeError,
  UpstreamError,
  UpstreamProtocolError,
  UpstreamTransportError,
  boundedText,
} from './errors.js';

const TOKEN = 'secret-token-7f3a';
const MiB = 1024 * 1024;

interface Recorder {
  url: string;
  /** Connections opened to the server, whatever was sent on them. */
  connections: number;
  /** Requests received, with their bodies. */
  requests: Array<{ method: string; url: string; body: string }>;
}

const servers = serversClosedAfterEach();


/** A server on 127.0.0.1 that records every connection and request, and answers with `handle`. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<Recorder> {
  const recorder: Recorder = { url: '', connections: 0, requests: [] };
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      recorder.requests.push({ method: req.method ?? '', url: req.url ?? '', body });
      handle(req, res, body);
    });
  });
  server.on('connection', () => recorder.connections++);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  recorder.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return recorder;
}

function envelope(data: unknown, status: 'SUCCESS' | 'FAILURE' = 'SUCCESS', err = '', msg = ''): string {
  return JSON.stringify({ status, data, err, msg });
}

function client(url: string, opts: Partial<UpstreamClientOptions> = {}): UpstreamClient {
  return new UpstreamClient({ baseUrl: url, token: TOKEN, retries: 0, backoffMs: 5, ...opts });
}


/** The rejection of `call()`, and how far the resident set size rose above its start while it ran (sampled). */
async function failureAndRssGrowth(call: () => Promise<unknown>): Promise<{ error: Error; growth: number }> {
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 1);
  try {
    const error = await failureOf(call());
    return { error, growth: Math.max(peak, process.memoryUsage.rss()) - before };
  } finally {
    clearInterval(sampler);
  }
}

describe('redirects', () => {
  it.each([301, 302, 303, 307, 308])('a %i to another host is refused, and the other host is sent nothing', async (code) => {
    const elsewhere = await serve((_req, res) => res.end(envelope([{ vehicleno: 'STOLEN' }])));
    const service = await serve((_req, res) => {
      res.writeHead(code, { location: `${elsewhere.url}/collect/path?from=${TOKEN}` });
      res.end('moved');
    });
    const e = await failureOf(client(service.url, { retries: 2 }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamProtocolError);
    expect(e).toMatchObject({ httpStatus: code, operation: 'listvehicles' });
    expect(e.message).toContain(`HTTP ${code} redirect (Location on ${elsewhere.url}) refused`);
    expect(e.message).not.toContain('/collect/path');
    expect(e.message).not.toContain(TOKEN);
    expect(elsewhere.connections).toBe(0);
    expect(elsewhere.requests).toEqual([]);
    // Asked once: a redirect is the service's answer, not a failure to try again.
    expect(service.requests).toHaveLength(1);
  });

  it('a command redirected is refused and its token goes nowhere else', async () => {
    const elsewhere = await serve((_req, res) => res.end(envelope('done')));
    const service = await serve((_req, res) => {
      res.writeHead(307, { location: `${elsewhere.url}/api/standard/changepassword` });
      res.end();
    });
    const e = await failureOf(client(service.url).changePassword({ username: 'demo', newPassword: 'n3w-passw0rd' }));
    expect(e).toMatchObject({ name: 'UpstreamProtocolError', httpStatus: 307 });
    expect(elsewhere.connections).toBe(0);
  });

  it('an answer a fetch passed in reached by following a redirect is refused', async () => {
    const elsewhere = await serve((_req, res) => res.end(envelope([{ vehicleno: 'STOLEN' }])));
    const service = await serve((_req, res) => {
      res.writeHead(307, { location: `${elsewhere.url}/api/standard/listvehicles` });
      res.end();
    });
    const following: typeof fetch = (input, init) => fetch(input, { ...init, redirect: 'follow' });
    const e = await failureOf(client(service.url, { fetch: following }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamProtocolError);
    expect(e.message).toContain(`answer from ${elsewhere.url} after a redirect the fetch passed in followed, refused`);
  });

  it('a redirect to the same origin is refused too, and one without Location is named so', async () => {
    const service = await serve((req, res) => {
      if (req.url === '/api/standard/listvehicles') res.writeHead(308, { location: '/v2/api/standard/listvehicles' });
      else if (req.url === '/api/standard/getfuelused') res.writeHead(302);
      else res.writeHead(200);
      res.end(envelope([]));
    });
    const same = await failureOf(client(service.url).listVehicles());
    expect(same.message).toContain(`HTTP 308 redirect (Location on ${service.url}) refused`);
    const bare = await failureOf(client(service.url).getFuelUsed({ vehicleno: 'X', from: 0, to: 1 }));
    expect(bare.message).toContain('HTTP 302 redirect (no Location) refused');
    expect(service.requests.map((r) => r.url)).toEqual(['/api/standard/listvehicles', '/api/standard/getfuelused']);
  });
});

describe('answer bytes', () => {
  it('stops reading a chunked answer without Content-Length as soon as it passes the cap', async () => {
    const total = 50 * MiB;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let written = 0;
    const service = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      let stopped = false;
      res.on('close', () => (stopped = true));
      const pump = (): void => {
        while (!stopped && written < total) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!stopped) res.end();
      };
      pump();
    });
    const { error, growth } = await failureAndRssGrowth(() => client(service.url, { maxAnswerBytes: MiB }).listVehicles());
    expect(error).toBeInstanceOf(UpstreamAnswerTooLargeError);
    expect(error).toMatchObject({ limit: 'maxAnswerBytes', cap: MiB, httpStatus: 200 });
    // Read: the cap and at most the chunk that passed it.
    const count = (error as UpstreamAnswerTooLargeError).count;
    expect(count).toBeGreaterThan(MiB);
    expect(count).toBeLessThan(MiB + 256 * 1024);
    expect(error.message).toContain(`answer larger than maxAnswerBytes (${MiB} bytes): reading stopped after ${count} bytes`);
    // What left the server: the read plus what the sockets' buffers took, far from the 50 MiB offered.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).toBeLessThan(8 * MiB);
    expect(growth).toBeLessThan(32 * MiB);
  });

  it('takes an answer of exactly the cap and refuses one byte more', async () => {
    const cap = 64 * 1024;
    const body = envelope([{ vehicleno: 'A' }]);
    let pad = cap - Buffer.byteLength(body);
    const service = await serve((_req, res) => res.end(body + ' '.repeat(pad)));
    expect(await client(service.url, { maxAnswerBytes: cap }).listVehicles()).toEqual([{ vehicleno: 'A' }]);
    pad++;
    expect(await failureOf(client(service.url, { maxAnswerBytes: cap }).listVehicles())).toMatchObject({ limit: 'maxAnswerBytes', cap, count: cap + 1 });
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
  ] as const)('counts the decoded bytes of a %s answer', async (encoding, compress) => {
    // A valid answer, padded: only its decoded size is over the cap, its compressed size far under.
    const decoded = Buffer.from(envelope([{ vehicleno: 'A' }]) + ' '.repeat(8 * MiB));
    const compressed = compress(decoded);
    expect(compressed.length).toBeLessThan(64 * 1024);
    const small = compress(Buffer.from(envelope([{ vehicleno: 'B' }])));
    const service = await serve((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
      res.end(req.url === '/api/standard/listvehicles' ? compressed : small);
    });
    const e = await failureOf(client(service.url, { maxAnswerBytes: MiB }).listVehicles());
    expect(e).toMatchObject({ name: 'UpstreamAnswerTooLargeError', limit: 'maxAnswerBytes', cap: MiB });
    expect((e as UpstreamAnswerTooLargeError).count).toBeGreaterThan(MiB);
    // The same decoding lets a small compressed answer through.
    expect(await client(service.url, { maxAnswerBytes: MiB }).mobilize({ vehicleno: 'B', type: 'can' })).toMatchObject({ data: [{ vehicleno: 'B' }] });
  });

  it('refuses a gzip bomb without inflating it', async () => {
    // 128 MiB of spaces, about 130 KB compressed.
    const bomb = gzipSync(Buffer.alloc(128 * MiB, 0x20), { level: 9 });
    const service = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(bomb);
    });
    const { error, growth } = await failureAndRssGrowth(() => client(service.url, { maxAnswerBytes: MiB }).listVehicles());
    expect(error).toMatchObject({ name: 'UpstreamAnswerTooLargeError', limit: 'maxAnswerBytes' });
    expect((error as UpstreamAnswerTooLargeError).count).toBeLessThan(MiB + 256 * 1024);
    expect(growth).toBeLessThan(32 * MiB);
  });

  it('still times out an answer whose body trickles in', async () => {
    const service = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":"SUCCESS",');
      const timer = setInterval(() => res.write(' '), 20);
      res.on('close', () => clearInterval(timer));
    });
    const e = await failureOf(client(service.url, { timeoutMs: 200 }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamTransportError);
    expect(e).toMatchObject({ kind: 'timeout' });
  });
});

describe('items per answer', () => {
  const vehicles = (n: number): Array<{ vehicleno: string }> => Array.from({ length: n }, (_, i) => ({ vehicleno: `V${i}` }));
  const readings = (n: number): Array<{ time: number; value: string }> => Array.from({ length: n }, (_, i) => ({ time: 1_748_779_200_000 + i * 1000, value: '12.50' }));

  async function listing(data: unknown): Promise<string> {
    return (await serve((_req, res) => res.end(envelope(data)))).url;
  }

  it('refuses more vehicles than maxVehicles, naming the count and the cap, and takes exactly the cap', async () => {
    const e = await failureOf(client(await listing(vehicles(11)), { maxVehicles: 10 }).listVehicles());
    expect(e).toBeInstanceOf(UpstreamAnswerTooLargeError);
    expect(e).toMatchObject({ limit: 'maxVehicles', cap: 10, count: 11 });
    expect(e.message).toBe('listvehicles: unexpected answer from the service: 11 vehicles, more than maxVehicles (10); refused whole rather than cut');
    expect(await client(await listing(vehicles(10)), { maxVehicles: 10 }).listVehicles()).toHaveLength(10);
  });

  it('refuses more readings than maxReadings, naming the count and the cap, and takes exactly the cap', async () => {
    const q = { vehicleno: 'V0', from: 0, to: Date.now(), inLitres: true };
    const e = await failureOf(client(await listing(readings(6)), { maxReadings: 5 }).getFuelHistory(q));
    expect(e).toMatchObject({ name: 'UpstreamAnswerTooLargeError', limit: 'maxReadings', cap: 5, count: 6 });
    expect(e.message).toContain('6 readings, more than maxReadings (5)');
    expect(await client(await listing(readings(5)), { maxReadings: 5 }).getFuelHistory(q)).toHaveLength(5);
  });

  it('has caps of 100 000 by default', async () => {
    expect([DEFAULT_MAX_VEHICLES, DEFAULT_MAX_READINGS]).toEqual([100_000, 100_000]);
    const e = await failureOf(client(await listing(vehicles(DEFAULT_MAX_VEHICLES + 1))).listVehicles());
    expect(e).toMatchObject({ limit: 'maxVehicles', cap: 100_000, count: 100_001 });
  });

  it('refuses a cap that is not a positive integer instead of having none', () => {
    expect(() => client('http://127.0.0.1:9', { maxAnswerBytes: Number.NaN })).toThrow('maxAnswerBytes must be a positive integer, not NaN');
    expect(() => client('http://127.0.0.1:9', { maxReadings: 0 })).toThrow(RangeError);
  });
});

describe('texts from the service', () => {
  it('cuts a 500-KB msg and err to UPSTREAM_TEXT_MAX characters, saying how long they were', async () => {
    const msg = 'm'.repeat(500_000);
    const err = 'e'.repeat(20_000);
    const service = await serve((_req, res) => res.end(envelope(null, 'FAILURE', err, msg)));
    const e = await failureOf(client(service.url).listVehicles());
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ msg: `${'m'.repeat(300)}… (500000 characters)`, err: `${'e'.repeat(300)}… (20000 characters)` });
    expect(e.message).toBe(`listvehicles failed: ${'e'.repeat(300)}… (20000 characters): ${'m'.repeat(300)}… (500000 characters)`);
    // What a logger serialising the error's own fields would write stays short as well.
    expect(JSON.stringify({ ...e, message: e.message }).length).toBeLessThan(2_000);
  });

  it('shows a few of a hundred thousand schema problems, cut short', async () => {
    const service = await serve((_req, res) => res.end(envelope(Array.from({ length: 100_000 }, (_, i) => ({ id: i })))));
    const e = await failureOf(client(service.url).listVehicles());
    expect(e).toBeInstanceOf(UpstreamProtocolError);
    expect(e.message).toContain('(and 99997 more problems)');
    expect(e.message.length).toBeLessThan(UPSTREAM_TEXT_MAX + 100);
  });

  it('bounds text without splitting a surrogate pair', () => {
    expect(boundedText('x'.repeat(UPSTREAM_TEXT_MAX))).toBe('x'.repeat(UPSTREAM_TEXT_MAX));
    expect(boundedText(`${'x'.repeat(UPSTREAM_TEXT_MAX - 1)}😀tail`)).toBe(`${'x'.repeat(UPSTREAM_TEXT_MAX - 1)}… (${UPSTREAM_TEXT_MAX + 5} characters)`);
  });
});
