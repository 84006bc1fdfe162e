import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { failure } from '../../telemetry/envelope.js';

export interface RunningHttp {
  /** Base URL to reach it on (loopback when it listens on every address). */
  url: string;
  /**
   * Stops taking connections and closes the idle ones (keep-alive connections between requests, as
   * they become idle); requests already inside have `graceMs` to finish and be answered, then every
   * connection still open is closed, so that no client (a keep-alive agent, a stream) holds it open.
   * Unbounded without `graceMs`.
   */
  close(graceMs?: number): Promise<void>;
}

/** How often a closing listener closes the connections that became idle (answered, waiting for a next request). */
const IDLE_SWEEP_MS = 50;

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
  /** A request's head must have arrived within this of connecting (408 otherwise); over TLS the handshake gets as long again. */
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /**
   * Connections open at once. At the cap a new connection takes the place of the one waiting longest
   * without a request in progress (see `holdConnections`); it is refused only when every one has a request in progress.
   */
  maxConnections: number;
  /** Bodies declared larger are refused before `100 Continue` invites them. */
  bodyLimit: number;
}

/** Why a connection was closed at the cap (`holdConnections`). */
export type ShedReason = 'no_request' | 'idle' | 'refused';

export async function serveHttp(app: Hono, hostname: string, port: number, limits: HttpLimits, tls?: HttpTls, onShed?: (reason: ShedReason) => void): Promise<RunningHttp> {
  // Node checks request and header deadlines on this interval (30 s by default), so a slow body
  // would otherwise live up to 30 s past its deadline.
  const connectionsCheckingInterval = Math.min(1_000, limits.headersTimeoutMs);
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
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
              // HTTP's deadlines start once the handshake is done; a connection silent before it
              // would otherwise be kept for TLS's default of 120 s.
              handshakeTimeout: headersTimeout,
            },
          },
          () => resolve(s as Server),
        )
      : serve({ fetch: app.fetch, port, hostname, serverOptions: { connectionsCheckingInterval } }, () => resolve(s as Server));
  });
  server.requestTimeout = limits.requestTimeoutMs;
  server.headersTimeout = headersTimeout;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  const held = holdConnections(server, limits.maxConnections, Boolean(tls), onShed);
  let closing: Promise<void> | undefined;
  // Node answers `Expect: 100-continue` with 100 on its own; a body declared over the limit is
  // refused first instead, so the sender never starts sending it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length']) > limits.bodyLimit) {
      held.requestStarted(req, res);
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
    close(graceMs?: number) {
      closing ??= new Promise<void>((resolve) => {
        // A request that comes on a kept-alive connection from now on is answered `Connection: close`, and
        // its connection ends with it. (Nothing is added to every request before: the push path pays nothing.)
        server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
          res.shouldKeepAlive = false;
        });
        // Node closes the connections idle at `close()` only: one answered later stays open while its
        // client keeps using it (each answer restarts its keep-alive timeout), and the listener with it.
        const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
        const cut = graceMs === undefined ? undefined : setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearInterval(sweep);
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}

/** What Node itself answers a connection whose request head did not arrive in time. */
const REQUEST_TIMEOUT_RESPONSE = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';

interface Held {
  /** The TCP socket. */
  raw: Socket;
  /** The socket HTTP is spoken on: `raw`, or its TLS socket once the handshake is done. */
  http?: Socket;
  /** Requests whose head has arrived and whose response has not finished. */
  inFlight: number;
  gone: boolean;
}

/**
 * Holds the listener to `max` connections without letting connections that send nothing lock
 * senders out (#18). Node's own `server.maxConnections` destroys each new connection beyond the cap,
 * so a few hundred idle sockets (each kept up to HTTP_HEADERS_TIMEOUT) refuse every sender; here a
 * new connection at the cap closes, in this order:
 *
 * 1. the oldest connection that has not yet sent a complete request head (never sent a byte, a
 *    head trickled in, a TLS handshake not done), answered with Node's own 408 when it speaks HTTP;
 * 2. failing that, the keep-alive connection idle longest between requests, closed silently as its
 *    keep-alive timeout would;
 * 3. failing that (every connection has a request in progress), the new connection itself, as
 *    Node's cap would. A request in progress, a trickled body included, is never cut to make room;
 *    HTTP_REQUEST_TIMEOUT bounds it.
 *
 * A sender that sends its request as it connects is the newest waiting connection for the moment
 * its head is in flight: it is shed only if more connections arrive in that moment than were waiting before it.
 */
function holdConnections(server: Server, max: number, tls: boolean, onShed: (reason: ShedReason) => void = () => {}): { requestStarted(req: IncomingMessage, res: ServerResponse): void } {
  // Insertion-ordered: the first is the one waiting longest.
  const unheaded = new Set<Held>();
  const between = new Set<Held>();
  const bySocket = new WeakMap<Socket, Held>();
  // A TLS socket reaches its TCP socket through the peer both report.
  const handshaking = new Map<string, Held>();
  const peer = (s: Socket) => `${s.remoteAddress}|${s.remotePort}`;
  let open = 0;

  const forget = (h: Held) => {
    if (h.gone) return;
    h.gone = true;
    open--;
    unheaded.delete(h);
    between.delete(h);
  };
  const shed = (h: Held, answer: boolean) => {
    forget(h);
    const s = h.http ?? h.raw;
    if (answer && h.http?.writable) h.http.write(REQUEST_TIMEOUT_RESPONSE);
    s.destroy();
  };

  server.on('connection', (raw: Socket) => {
    if (open >= max) {
      const [oldest] = unheaded;
      const [idlest] = between;
      if (oldest) {
        shed(oldest, true);
        onShed('no_request');
      } else if (idlest) {
        shed(idlest, false);
        onShed('idle');
      } else {
        raw.destroy();
        onShed('refused');
        return;
      }
    }
    const h: Held = { raw, inFlight: 0, gone: false };
    open++;
    unheaded.add(h);
    if (tls) {
      const key = peer(raw);
      handshaking.set(key, h);
      raw.once('close', () => handshaking.get(key) === h && handshaking.delete(key));
    } else {
      h.http = raw;
      bySocket.set(raw, h);
    }
    raw.once('close', () => forget(h));
  });
  if (tls) {
    server.on('secureConnection', (socket: Socket) => {
      const key = peer(socket);
      const h = handshaking.get(key);
      if (!h) return;
      handshaking.delete(key);
      h.http = socket;
      bySocket.set(socket, h);
    });
  }

  const requestStarted = (req: IncomingMessage, res: ServerResponse) => {
    const h = bySocket.get(req.socket);
    if (!h || h.gone) return;
    h.inFlight++;
    unheaded.delete(h);
    between.delete(h);
    res.once('close', () => {
      if (--h.inFlight === 0 && !h.gone) between.add(h);
    });
  };
  server.on('request', requestStarted);
  return { requestStarted };
}
