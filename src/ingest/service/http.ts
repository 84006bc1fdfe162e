import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

export interface RunningHttp {
  /** Base URL to reach it on (loopback when it listens on every address). */
  url: string;
  /** Stops taking connections; requests already inside finish and are answered. */
  close(): Promise<void>;
}

export async function serveHttp(app: Hono, hostname: string, port: number): Promise<RunningHttp> {
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port, hostname }, () => resolve(s as Server));
  });
  const { port: bound } = server.address() as AddressInfo;
  const host = hostname === '0.0.0.0' || hostname === '::' ? '127.0.0.1' : hostname;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
