import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

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
  /** Write requests received so far; given measurements, those since the first such call whose first point is of one of them. */
  writesStarted(measurements?: readonly string[]): number;
  /** Write requests with a gzip body, and body bytes as they came over the wire, so far. */
  wire(): { gzipped: number; bytes: number };
  close(): Promise<void>;
  /** The front's own process, when it runs in one. */
  pid?: number | undefined;
}

const PRECISION: Record<string, string> = { ns: 'ns', us: 'u', ms: 'ms', s: 's' };

function reply(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ code, message }));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startV2Front(opts: { upstream: string; token?: string; port?: number }): Promise<V2Front> {
  let writeDelay = 0;
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
      if (!isQuery && (u.pathname !== '/api/v2/write' || req.method !== 'POST')) return reply(res, 404, 'not found', 'path not found');
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
      const bucket = u.searchParams.get('bucket');
      if (!bucket) return reply(res, 400, 'invalid', 'bucket is required');
      const precision = PRECISION[u.searchParams.get('precision') ?? 'ns'];
      if (!precision) return reply(res, 400, 'invalid', 'invalid precision');
      const [db, rp] = bucket.split('/', 2);
      const q = new URLSearchParams({ db: db ?? bucket, precision });
      if (rp) q.set('rp', rp);
      const body = await readBody(req);
      writes++;
      // Only once a caller asked by measurement: a gzipped body is inflated for it, work a bench's front must not do.
      if (counting) {
        const plain = req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
        const first = /^((?:[^\\, ]|\\.)*)/.exec(plain.toString('utf8', 0, 256))![1]!;
        byMeasurement.set(first, (byMeasurement.get(first) ?? 0) + 1);
      }
      bytes += body.length;
      if (req.headers['content-encoding'] === 'gzip') gzipped++;
      if (writeDelay > 0) await new Promise((r) => setTimeout(r, writeDelay));
      const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
      const enc = req.headers['content-encoding'];
      if (typeof enc === 'string') headers['content-encoding'] = enc;
      const up = await fetch(`${opts.upstream}/write?${q}`, { method: 'POST', headers, body: new Uint8Array(body) }).catch(() => undefined);
      if (!up) return reply(res, 502, 'unavailable', 'influxd is not reachable');
      if (up.status === 204) {
        res.writeHead(204);
        return res.end();
      }
      const text = await up.text();
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        // influxd answers JSON; anything else is passed on as it came
      }
      reply(res, up.status, up.status === 404 ? 'not found' : up.status >= 500 ? 'internal error' : 'invalid', message);
    })().catch((err: unknown) => reply(res, 500, 'internal error', String(err)));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    setWriteDelay: (ms) => {
      writeDelay = ms;
    },
    writesStarted: (measurements) => {
      if (measurements === undefined) return writes;
      counting = true;
      return measurements.reduce((n, m) => n + (byMeasurement.get(m) ?? 0), 0);
    },
    wire: () => ({ gzipped, bytes }),
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
