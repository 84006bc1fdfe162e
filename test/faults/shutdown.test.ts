/**
 * Issue #46 item 9, "Stopping is bounded": whatever a stopping process waits for, it exits within
 * SHUTDOWN_GRACE, naming what did not finish; a second signal ends it at once. The hangs are real
 * ones: Redis gone (a BullMQ worker's close waits for its blocking connection's `end`, which ioredis
 * never emits for a connection closed while it reconnects), an InfluxDB that took a write and never
 * answers it, and keep-alive connections on the admin port.
 */
import { holdListener } from '../harness/keepalive.js';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { startRedis, type LocalRedis } from '../../src/devstack/redis.js';
import { spawnService, type ServiceProcess } from '../harness/proc.js';
import { waitUntil } from '../harness/wait.js';
import { TOKEN } from '../harness/stack.js';
import { randomBytes } from 'node:crypto';

const GRACE_MS = 3_000;
/** What a process may take past SHUTDOWN_GRACE to exit: logging and process.exit, on a loaded machine. */
const MARGIN_MS = 2_000;

/**
 * An InfluxDB for the workers: answers `/ping` (so the service is ready), and takes writes: answered
 * 204 at once, or, with `hang`, read and never answered (the connection held open).
 */
interface FakeInflux {
  url: string;
  writes: number;
  hang: boolean;
  close(): Promise<void>;
}

async function fakeInflux(): Promise<FakeInflux> {
  const held: ServerResponse[] = [];
  const state = { writes: 0, hang: false };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/ping') || req.url?.startsWith('/health')) {
      res.writeHead(204).end();
      return;
    }
    req.resume();
    req.on('end', () => {
      state.writes++;
      if (state.hang) held.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
}


/** The admin listener's URL, from the process's `telematics-ingest started` line. */
async function adminUrlOf(p: ServiceProcess): Promise<string> {
  let url = '';
  await waitUntil(async () => {
    url = /"admin":"([^"]+)"/.exec(p.output())?.[1] ?? '';
    return url !== '';
  }, 10_000, 'the admin URL logged');
  return url;
}

/** Pushes `n` valid GPS records; the number accepted. */
async function push(url: string, n: number, seed: string): Promise<number> {
  const t = Date.now() - 60_000;
  const bulkData = Array.from({ length: n }, (_, i) => ({ vehicleno: `SD-${seed}-${i % 5}`, type: 'gps', data: { lat: 12.9 + i / 1e4, lng: 77.5, alti: 900, speed: 10, ignstatus: 1, time: t + i * 1_000 } }));
  const res = await fetch(`${url}/push/bulk`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ bulkData }) });
  return ((await res.json()) as { data?: { accepted?: number } }).data?.accepted ?? -1;
}

/** Sends `signal`; resolves with the exit code and how long the process took to exit. */
function signalAndTime(p: ServiceProcess, signal: NodeJS.Signals): Promise<{ code: number | null; ms: number }> {
  const t = Date.now();
  return new Promise((resolve) => {
    p.child.once('close', (code) => resolve({ code, ms: Date.now() - t }));
    p.child.kill(signal);
  });
}

/** The log line saying the shutdown did not finish, as JSON. */
function deadlineLine(out: string): { unfinished?: string[]; msg?: string } | undefined {
  const line = out.split('\n').find((l) => l.includes('"unfinished"') && l.includes('did not finish'));
  return line ? (JSON.parse(line) as { unfinished?: string[]; msg?: string }) : undefined;
}

let redis: LocalRedis;
let influx: FakeInflux;
const procs: ServiceProcess[] = [];
const holds: Array<{ stop(): void }> = [];

beforeAll(async () => {
  influx = await fakeInflux();
});
afterEach(async () => {
  for (const h of holds.splice(0)) h.stop();
  for (const p of procs.splice(0)) await p.stop('SIGKILL');
  await redis?.stop({ signal: 'SIGKILL' });
  influx.hang = false;
});
afterAll(async () => influx?.close());

async function start(extra: Record<string, string> = {}): Promise<ServiceProcess> {
  redis = await startRedis();
  const p = await spawnService('all', {
    REDIS_URL: redis.url,
    INFLUX_URL: influx.url,
    INFLUX_TOKEN: 'x',
    INFLUX_BUCKET: 'shutdown',
    QUEUE_NAME: `q-${randomBytes(4).toString('hex')}`,
    PUSH_TOKENS: TOKEN,
    LOG_LEVEL: 'info',
    SHUTDOWN_GRACE: `${GRACE_MS}ms`,
    ...extra,
  });
  procs.push(p);
  return p;
}

it('SIGTERM with Redis gone (SIGKILLed) and a keep-alive admin client: exits 1 within SHUTDOWN_GRACE, naming what did not finish', async () => {
  const p = await start();
  expect(await push(p.url, 20, 'a')).toBe(20);
  holds.push(holdListener(await adminUrlOf(p)));
  await redis.stop({ signal: 'SIGKILL' });
  // Long enough for every connection to see it gone and be reconnecting.
  await new Promise((r) => setTimeout(r, 1_000));
  const { code, ms } = await signalAndTime(p, 'SIGTERM');
  expect(ms, p.output()).toBeLessThan(GRACE_MS + MARGIN_MS);
  // The workers' close cannot finish without Redis (see above): the deadline ends it, and says so.
  expect(code, p.output()).toBe(1);
  const line = deadlineLine(p.output());
  expect(line?.unfinished, p.output()).toContain('workers');
  expect(line?.msg).toContain('workers');
  // The listeners closed first, keep-alive client or not.
  expect(line?.unfinished).not.toContain('admin listener');
}, 30_000);

it('SIGTERM while InfluxDB holds a write unanswered: exits 1 within SHUTDOWN_GRACE, naming the workers', async () => {
  const p = await start({ INFLUX_TIMEOUT: '60s' });
  influx.hang = true;
  const before = influx.writes;
  expect(await push(p.url, 20, 'b')).toBe(20);
  await waitUntil(async () => influx.writes > before, 10_000, 'a write under way');
  const { code, ms } = await signalAndTime(p, 'SIGTERM');
  expect(ms, p.output()).toBeLessThan(GRACE_MS + MARGIN_MS);
  expect(ms).toBeGreaterThanOrEqual(GRACE_MS - 100); // it did wait for the job, as long as it was given
  expect(code, p.output()).toBe(1);
  expect(deadlineLine(p.output())?.unfinished, p.output()).toEqual(['workers']);
}, 30_000);

it('a second signal while stopping exits at once, saying what was left', async () => {
  const p = await start({ INFLUX_TIMEOUT: '60s', SHUTDOWN_GRACE: '20s' });
  influx.hang = true;
  const before = influx.writes;
  expect(await push(p.url, 20, 'c')).toBe(20);
  await waitUntil(async () => influx.writes > before, 10_000, 'a write under way');
  const exited = signalAndTime(p, 'SIGTERM');
  await waitUntil(async () => p.output().includes('"msg":"shutting down"'), 5_000, 'shutting down');
  // A signal within a second of the first is taken for the same one, relayed (npm start, tsx).
  p.child.kill('SIGINT');
  await new Promise((r) => setTimeout(r, 1_300));
  expect(p.child.exitCode).toBeNull();
  const t = Date.now();
  p.child.kill('SIGINT');
  const { code } = await exited;
  expect(Date.now() - t).toBeLessThan(MARGIN_MS);
  expect(code).toBe(130);
  expect(p.output()).toMatch(/SIGINT while shutting down already: exiting now, unfinished: workers/);
}, 30_000);

it('SIGTERM with nothing in flight and a keep-alive admin client: exits 0 at once', async () => {
  const p = await start();
  expect(await push(p.url, 20, 'd')).toBe(20);
  await waitUntil(async () => influx.writes > 0, 10_000, 'the write');
  holds.push(holdListener(await adminUrlOf(p)));
  await new Promise((r) => setTimeout(r, 500));
  const { code, ms } = await signalAndTime(p, 'SIGTERM');
  expect(code, p.output()).toBe(0);
  // The half-sent request head on the admin port is cut after the requests' grace (half SHUTDOWN_GRACE here).
  expect(ms, p.output()).toBeLessThan(GRACE_MS / 2 + MARGIN_MS);
}, 30_000);
