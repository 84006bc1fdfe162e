import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { failure } from '../../telemetry/envelope.js';

export interface RunningHttp {
  /** Base URL to reach it on (loopback when it listens on every address). */
  url: string;
  /** Stops taking connections; requests already inside finish and are answered. */
  close(): Promise<void>;
}

/** TLS for the listener: PEM files; with `clientCa`, senders must present a certificate it signed (mutual TLS). */
export interface HttpTls {
  cert: string;
  key: string;
  clientCa?: string;
}

/** What one connection and one request may cost the listener, whoever is on the other end. */
export interface HttpLimits {
  /** A request, body included, must have arrived within this (408 otherwise): a trickled body is cut. */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** Bodies declared larger are refused before `100 Continue` invites them. */
  bodyLimit: number;
}

export async function serveHttp(app: Hono, hostname: string, port: number, limits: HttpLimits, tls?: HttpTls): Promise<RunningHttp> {
  // Node checks request and header deadlines on this interval (30 s by default), so a slow body
  // would otherwise live up to 30 s past its deadline.
  const connectionsCheckingInterval = Math.min(1_000, limits.headersTimeoutMs);
  const server = await new Promise<Server>((resolve) => {
    const s = tls
      ? serve(
          {
            fetch: app.fetch,
            port,
            hostname,
            createServer: createHttpsServer,
            serverOptions: {
              cert: readFileSync(tls.cert),
              key: readFileSync(tls.key),
              ...(tls.clientCa ? { ca: readFileSync(tls.clientCa), requestCert: true, rejectUnauthorized: true } : {}),
              connectionsCheckingInterval,
            },
          },
          () => resolve(s as Server),
        )
      : serve({ fetch: app.fetch, port, hostname, serverOptions: { connectionsCheckingInterval } }, () => resolve(s as Server));
  });
  server.requestTimeout = limits.requestTimeoutMs;
  server.headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  // Node answers `Expect: 100-continue` with 100 on its own; a body declared over the limit is
  // refused first instead, so the sender never starts sending it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length']) > limits.bodyLimit) {
      res.writeHead(413, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify(failure('payload_too_large', `body of ${req.headers['content-length']} bytes exceeds the limit of ${limits.bodyLimit} bytes`)));
      return;
    }
    res.writeContinue();
    server.emit('request', req, res);
  });
  const { port: bound } = server.address() as AddressInfo;
  const host = hostname === '0.0.0.0' || hostname === '::' ? '127.0.0.1' : hostname;
  return {
    url: `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
