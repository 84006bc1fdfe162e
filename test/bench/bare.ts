/**
 * The bare endpoint the receiver is compared with: the same Hono and @hono/node-server, a route
 * that parses the same JSON body and answers 202 with a small JSON envelope, and nothing else
 * (no authentication, validation or queue). Run as its own process: `node --import tsx bare.ts`.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';

const app = new Hono();
app.post('/push/realtime', async (c) => {
  const body = (await c.req.json()) as { vehicleno?: unknown };
  return c.json({ status: 'SUCCESS', data: { accepted: body.vehicleno === undefined ? 0 : 1 }, err: '', msg: 'accepted 1 record(s)' }, 202);
});
app.get('/readyz', (c) => c.json({ status: 'SUCCESS' }));

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' }, () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
