import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * The servers the service writes to, as the front answers for them (`profile`). Each stores through
 * the real influxd; what differs is the answer, read from the servers' sources and docs (influxdb 2.7
 * `http/write_handler.go`, influxdb3 `influxdb3_server/src/http.rs`, docs-v2's Cloud Serverless
 * limits and troubleshooting pages):
 *
 * | profile | a bad line among good | too large | limits |
 * |---|---|---|---|
 * | `1.8` | 400 `{code, message}` as 1.x words it (good lines written) | none | none |
 * | `2` | 422 for a type conflict, 400 for a syntax error, `{code, message}` (good lines written) | none | none |
 * | `3-core` (`/api/v2/write` of InfluxDB 3 Core) | 400 `{error}`, no line named | 413 over 10 MiB | 5 databases: the sixth is refused with 400 |
 * | `3-core`, `/api/v3/write_lp` | 400 `{error, data: [{line_number, error_message}]}`, good lines written | 413 over 10 MiB | the same |
 * | `serverless` (Cloud Serverless) | 400 naming each refused "line N" (up to 100), good lines written | 413 over 50 MB | `answerNext`: 429 / 503 with `Retry-After` |
 *
 * One difference the front cannot play: InfluxDB 3 writes nothing of a refused request, while influxd
 * below has written its good lines; a writer that sends them again (as this service's halving does)
 * ends the same on both.
 */
export type InfluxProfile = '1.8' | '2' | '3-core' | 'serverless';

export const PROFILES: Record<InfluxProfile, { maxBytes: number; maxDatabases: number }> = {
  '1.8': { maxBytes: Infinity, maxDatabases: Infinity },
  '2': { maxBytes: Infinity, maxDatabases: Infinity },
  '3-core': { maxBytes: 10 * 1_048_576, maxDatabases: 5 },
  serverless: { maxBytes: 50_000_000, maxDatabases: Infinity },
};

/**
 * What InfluxDB 1.8's compatibility endpoint does, in front of a 1.6 server that lacks it:
 * `/api/v2/write?bucket=db[/rp]&precision=p` becomes `/write?db=db&rp=rp&precision=p`.
 * Errors are answered in 2.x's `{code, message}` shape so the client sees what 2.x would send.
 * `/query` (InfluxQL, the v1-compatible read API that 2.x and 3.x serve too) is passed through as it
 * is, behind the same token, so that readers use the one URL and token the service writes with.
 */
export interface V2Front {
  url: string;
  /** Holds every write this long before passing it on: a slow store, for fault tests and demos. */
  setWriteDelay(ms: number): void;
  /** Holds the next `count` writes `ms` each (on top of any delay): one slow write among fast ones. */
  delayNextWrites(ms: number, count?: number): void;
  /** Write requests received so far; given measurements, those since the first such call whose first point is of one of them. */
  writesStarted(measurements?: readonly string[]): number;
  /** Write requests with a gzip body, and body bytes as they came over the wire, so far. */
  wire(): { gzipped: number; bytes: number };
  /** When (epoch ms) each write request arrived. */
  writeTimes(): readonly number[];
  /** The profile's limits, changed (a test's small body cap; a database limit raised, as an operator fixes it). */
  setLimits(limits: Partial<(typeof PROFILES)[InfluxProfile]>): void;
  /** The next `count` writes are answered `status` with `Retry-After: retryAfterS`, nothing written (a throttled Cloud). */
  answerNext(status: 429 | 503, retryAfterS: number, count?: number): void;
  close(): Promise<void>;
  /** The front's own process, when it runs in one. */
  pid?: number | undefined;
}

const PRECISION: Record<string, string> = { ns: 'ns', us: 'u', ms: 'ms', s: 's' };
/** `/api/v3/write_lp`'s precisions (InfluxDB 3 Core's names; `auto` guesses from the digits, as nanoseconds here). */
const V3_PRECISION: Record<string, string> = { auto: 'ns', nanosecond: 'ns', microsecond: 'u', millisecond: 'ms', second: 's' };

function reply(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ code, message }));
}

/** InfluxDB 3's error shape: `{error}`. */
function replyError(res: ServerResponse, status: number, error: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ error }));
}

/** influxd's `{error}`, or the text as it came. */
function messageOf(text: string): string {
  try {
    return (JSON.parse(text) as { error?: string }).error ?? text;
  } catch {
    return text;
  }
}

/** The lines a store refuses, found by halving (each part written again: points are idempotent), with its words. */
async function refusedLines(lines: readonly string[], write: (part: readonly string[]) => Promise<string | undefined>, offset = 0): Promise<Array<[number, string]>> {
  const error = await write(lines);
  if (error === undefined) return [];
  if (lines.length === 1) return [[offset, error]];
  const half = Math.ceil(lines.length / 2);
  return [...(await refusedLines(lines.slice(0, half), write, offset)), ...(await refusedLines(lines.slice(half), write, offset + half))];
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startV2Front(opts: { upstream: string; token?: string; port?: number; profile?: InfluxProfile }): Promise<V2Front> {
  const profile = opts.profile ?? '1.8';
  const limits = { ...PROFILES[profile] };
  const databases = new Set<string>();
  const createDatabase = (name: string) => fetch(`${opts.upstream}/query`, { method: 'POST', body: new URLSearchParams({ q: `CREATE DATABASE "${name.replace(/"/g, '\\"')}"` }) });
  const times: number[] = [];
  let throttle: { status: number; retryAfterS: number; count: number } | undefined;
  let writeDelay = 0;
  const slowNext = { ms: 0, count: 0 };
  let writes = 0;
  const byMeasurement = new Map<string, number>();
  let counting = false;
  let gzipped = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? '/', 'http://front');
      if (u.pathname === '/ping' || u.pathname === '/health') {
        const up = await fetch(`${opts.upstream}/ping`).catch(() => undefined);
        if (!up) return reply(res, 503, 'unavailable', 'influxd is not reachable');
        res.writeHead(u.pathname === '/ping' ? 204 : 200, { 'content-type': 'application/json' });
        return res.end(u.pathname === '/ping' ? undefined : JSON.stringify({ status: 'pass' }));
      }
      const isQuery = u.pathname === '/query' && (req.method === 'GET' || req.method === 'POST');
      // InfluxDB 3's own write endpoint, where the profile is a 3.x server.
      const v3 = u.pathname === '/api/v3/write_lp' && profile === '3-core';
      if (!isQuery && ((u.pathname !== '/api/v2/write' && !v3) || req.method !== 'POST')) return reply(res, 404, 'not found', 'path not found');
      if (opts.token && req.headers.authorization !== `Token ${opts.token}`) {
        return reply(res, 401, 'unauthorized', 'unauthorized access');
      }
      if (isQuery) {
        const body = req.method === 'POST' ? new Uint8Array(await readBody(req)) : undefined;
        const type = req.headers['content-type'];
        const up = await fetch(`${opts.upstream}/query${u.search}`, { method: req.method, ...(typeof type === 'string' ? { headers: { 'content-type': type } } : {}), ...(body ? { body } : {}) }).catch(() => undefined);
        if (!up) return reply(res, 502, 'unavailable', 'influxd is not reachable');
        res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
        return res.end(Buffer.from(await up.arrayBuffer()));
      }
      const bucket = u.searchParams.get(v3 ? 'db' : 'bucket');
      if (!bucket) return v3 ? replyError(res, 400, 'db is required') : reply(res, 400, 'invalid', 'bucket is required');
      const precision = v3 ? V3_PRECISION[u.searchParams.get('precision') ?? 'auto'] : PRECISION[u.searchParams.get('precision') ?? 'ns'];
      if (!precision) return v3 ? replyError(res, 400, 'invalid precision') : reply(res, 400, 'invalid', 'invalid precision');
      const [db, rp] = bucket.split('/', 2);
      const q = new URLSearchParams({ db: db ?? bucket, precision });
      if (rp) q.set('rp', rp);
      const body = await readBody(req);
      writes++;
      times.push(Date.now());
      if (throttle !== undefined && throttle.count > 0) {
        throttle.count--;
        res.writeHead(throttle.status, { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(throttle.retryAfterS) });
        return res.end(JSON.stringify({ code: throttle.status === 429 ? 'too many requests' : 'unavailable', message: 'org exceeded its write rate; try again later' }));
      }
      const plainSize = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).length;
      if (plainSize > limits.maxBytes) {
        return profile === '3-core' ? replyError(res, 413, `request body of ${plainSize} bytes is larger than the limit of ${limits.maxBytes}`) : reply(res, 413, 'request too large', `the request body of ${plainSize} bytes exceeds the maximum of ${limits.maxBytes}`);
      }
      if (profile === '3-core' && !databases.has(db ?? bucket)) {
        if (databases.size >= limits.maxDatabases) return replyError(res, 400, `update to schema would exceed number of databases limit of ${limits.maxDatabases}`);
        // InfluxDB 3 makes a database at its first write.
        await createDatabase(db ?? bucket);
      }
      // Only once a caller asked by measurement: a gzipped body is inflated for it, work a bench's front must not do.
      if (counting) {
        const plain = req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
        const first = /^((?:[^\\, ]|\\.)*)/.exec(plain.toString('utf8', 0, 256))![1]!;
        byMeasurement.set(first, (byMeasurement.get(first) ?? 0) + 1);
      }
      bytes += body.length;
      if (req.headers['content-encoding'] === 'gzip') gzipped++;
      if (writeDelay > 0) await new Promise((r) => setTimeout(r, writeDelay));
      if (slowNext.count > 0) {
        slowNext.count--;
        await new Promise((r) => setTimeout(r, slowNext.ms));
      }
      const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
      const enc = req.headers['content-encoding'];
      if (typeof enc === 'string') headers['content-encoding'] = enc;
      const write = (b: Uint8Array<ArrayBuffer>, h: Record<string, string> = headers) => fetch(`${opts.upstream}/write?${q}`, { method: 'POST', headers: h, body: b }).catch(() => undefined);
      let up = await write(new Uint8Array(body));
      // InfluxDB 3 never answers a write "database not found": influxd 1.6.7 has been seen to, under load,
      // right after the CREATE above; it is made again and the write tried again, as 3 would have taken it.
      for (let again = 0; profile === '3-core' && up?.status === 404 && again < 5; again++) {
        await new Promise((r) => setTimeout(r, 50 * (again + 1)));
        await createDatabase(db ?? bucket).catch(() => undefined);
        up = await write(new Uint8Array(body));
      }
      if (!up) return reply(res, 502, 'unavailable', 'influxd is not reachable');
      if (up.status === 204) {
        if (profile === '3-core') databases.add(db ?? bucket);
        res.writeHead(204);
        return res.end();
      }
      const message = messageOf(await up.text());
      if (up.status !== 400) return reply(res, up.status, up.status === 404 ? 'not found' : up.status >= 500 ? 'internal error' : 'invalid', message);
      if (profile === '2') return /type conflict/.test(message) ? reply(res, 422, 'unprocessable entity', `failure writing points to database: ${message}`) : reply(res, 400, 'invalid', message);
      if (profile === '3-core' && !v3) return replyError(res, 400, message.replace(/ dropped=\d+$/, ''));
      if (profile === 'serverless' || v3) {
        // Cloud and 3.x's write_lp name the refused lines (the rest written): the front finds them as influxd sees them.
        const plain = req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
        const lines = plain.toString('utf8').split('\n').filter((l) => l !== '');
        const bad = await refusedLines(lines, async (part) => {
          const r = await write(new Uint8Array(Buffer.from(`${part.join('\n')}\n`)), { 'content-type': 'text/plain; charset=utf-8' });
          return r === undefined ? 'influxd is not reachable' : r.status === 204 ? undefined : messageOf(await r.text());
        });
        const words = (e: string) => e.replace(/ dropped=\d+$/, '').replace(/^partial write: /, '');
        if (v3) {
          res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' });
          return res.end(JSON.stringify({ error: 'partial write of line protocol occurred', data: bad.map(([i, e]) => ({ original_line: lines[i], line_number: i + 1, error_message: words(e) })) }));
        }
        const named = bad.slice(0, 100).map(([i, e]) => `line ${i + 1}: ${words(e)}`);
        return reply(res, 400, 'invalid', `partial write has occurred, errors encountered on line(s): ${named.join('; ')}`);
      }
      reply(res, 400, 'invalid', message);
    })().catch((err: unknown) => reply(res, 500, 'internal error', String(err)));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setWriteDelay: (ms) => {
      writeDelay = ms;
    },
    delayNextWrites: (ms, count = 1) => {
      slowNext.ms = ms;
      slowNext.count = count;
    },
    writesStarted: (measurements) => {
      if (measurements === undefined) return writes;
      counting = true;
      return measurements.reduce((n, m) => n + (byMeasurement.get(m) ?? 0), 0);
    },
    wire: () => ({ gzipped, bytes }),
    writeTimes: () => times,
    setLimits: (l) => Object.assign(limits, l),
    answerNext: (status, retryAfterS, count = 1) => {
      throttle = { status, retryAfterS, count };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * `node --import tsx src/devstack/v2front.ts <upstream> <token> <port>`: the front in a process of its
 * own, as the benchmark's pinned topology runs it (on influxd's core, not the service's).
 */
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const [upstream, token, port] = process.argv.slice(2);
  const front = await startV2Front({ upstream: upstream!, ...(token ? { token } : {}), port: Number(port) });
  process.stdout.write(`${front.url}\n`);
  process.once('SIGTERM', () => void front.close().then(() => process.exit(0)));
}
