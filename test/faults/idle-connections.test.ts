/**
 * Issue #18: connections that never send a request, and bodies trickled in, must not lock senders
 * out. Thousands of idle sockets and a hundred slow bodies hold more connections than
 * HTTP_MAX_CONNECTIONS allows, and every normal push is still answered.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, TEST_TOKEN, waitUntil, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const CAP = 512;
const IDLE = 2_000;
const TRICKLING = 100;
const PUSHES = 50;
const RECORDS_PER_PUSH = 10;

let svc: TestService;
const sockets: Socket[] = [];

beforeAll(async () => {
  // Deadlines far beyond the test's length: no timeout frees a connection here, only shedding can.
  svc = await startTestService({ HTTP_MAX_CONNECTIONS: String(CAP), HTTP_HEADERS_TIMEOUT: '30s', HTTP_REQUEST_TIMEOUT: '30s' });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await svc?.close();
});

interface Held {
  socket: Socket;
  closed: boolean;
  received: string;
}

/** A connection to the receiver, open once the kernel has it; `hello` is written on connect. */
function hold(port: number, hello?: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    const held: Held = { socket, closed: false, received: '' };
    socket.on('data', (d) => (held.received += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => (held.closed = true));
    socket.once('connect', () => {
      if (hello) socket.write(hello);
      resolve(held);
    });
    socket.once('error', reject);
  });
}

async function holdMany(n: number, port: number, hello?: string): Promise<Held[]> {
  const held: Held[] = [];
  for (let i = 0; i < n; i += 100) held.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => hold(port, hello)))));
  return held;
}

const can = (push: number, i: number) => ({ vehicleno: `IDLE-${push}`, type: 'can', data: { time: T0 + i, soc: i } });

it(`answers every push with ${IDLE} idle connections and ${TRICKLING} trickling bodies against HTTP_MAX_CONNECTIONS=${CAP}`, async () => {
  const port = Number(new URL(svc.url).port);

  // Bodies trickled in: a complete head, then a byte of a declared 100 kB every 300 ms.
  const head = `POST /push/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"bulkData":[`;
  const trickling = await holdMany(TRICKLING, port, head);
  const drip = setInterval(() => trickling.forEach((t) => !t.closed && t.socket.write(' ')), 300);
  try {
    // Connected, never a byte: more than the cap can hold.
    const idle = await holdMany(IDLE, port);
    await new Promise((r) => setTimeout(r, 200));

    const answers = await Promise.all(
      Array.from({ length: PUSHES }, async (_, p) => {
        try {
          const res = await svc.post('/push/bulk', { bulkData: Array.from({ length: RECORDS_PER_PUSH }, (_, i) => can(p, i)) }, { signal: AbortSignal.timeout(5_000) });
          await res.arrayBuffer();
          return String(res.status);
        } catch (e) {
          const err = e as Error & { cause?: { code?: string; message?: string } };
          return `${err.message}: ${err.cause?.code ?? ''} ${err.cause?.message ?? ''}`.trim();
        }
      }),
    );
    expect(answers).toEqual(Array.from({ length: PUSHES }, () => '202'));

    // No request in progress was shed to make room: every trickled body is still being read.
    expect(trickling.filter((t) => t.closed)).toHaveLength(0);
    // The idle connections made the room, and the cap held.
    const openIdle = idle.filter((i) => !i.closed).length;
    expect(openIdle).toBeLessThanOrEqual(CAP - TRICKLING);
    // One shed before its request was told so.
    expect(idle.some((i) => i.received.startsWith('HTTP/1.1 408 '))).toBe(true);
    // And the operator sees how many were shed, and why.
    const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    const shed = (reason: string) => Number(new RegExp(`^telematics_http_connections_shed_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
    expect(shed('no_request')).toBeGreaterThanOrEqual(IDLE - (CAP - TRICKLING));
    expect(shed('refused')).toBe(0);
  } finally {
    clearInterval(drip);
  }

  await waitUntil(async () => (await svc.query('SELECT count(soc) FROM can'))[0]?.count === PUSHES * RECORDS_PER_PUSH, 10_000, 'every pushed record stored');
}, 30_000);
