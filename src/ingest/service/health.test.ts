import { Writable } from 'node:stream';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PushRefused } from '../receive/answer.js';
import { createApp, healthRoutes } from './health.js';

/** The app with routes that fail each way, and the log lines it writes, parsed. */
function appWithLog() {
  const lines: Array<Record<string, unknown>> = [];
  // As createLogger formats levels (by name), into lines kept here.
  const log = pino({ level: 'info', formatters: { level: (label) => ({ level: label }) } }, new Writable({ write: (chunk, _e, cb) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), cb()) }));
  const push = new Hono();
  push.post('/bug', () => {
    throw new Error('redis at 10.0.0.7:6379 said NOAUTH for user telematics');
  });
  push.post('/refused', () => {
    throw new PushRefused(429, 'rate_limited', 'fleet-a is over its rate limit', 3);
  });
  push.get('/teapot', () => {
    throw new HTTPException(418, { message: 'short and stout' });
  });
  return { app: createApp({ push, health: healthRoutes([]) }, log), lines };
}

describe('the app answers errors that reach it', () => {
  it('answers an unexpected error 500 with the delivery id and nothing of its message, and logs it with its stack under that id', async () => {
    const { app, lines } = appWithLog();
    const res = await app.request('/bug', { method: 'POST' });
    expect(res.status).toBe(500);
    const id = res.headers.get('x-delivery-id');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ status: 'FAILURE', data: null, err: 'internal', msg: `internal error; logged under delivery id ${id}` });
    expect(text).not.toMatch(/redis|NOAUTH|10\.0\.0\.7|telematics/);

    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toMatchObject({ level: 'error', msg: 'unexpected error; answered 500', deliveryId: id, method: 'POST', path: '/bug' });
    const err = line.err as { type: string; message: string; stack: string };
    expect(err.message).toBe('redis at 10.0.0.7:6379 said NOAUTH for user telematics');
    expect(err.stack).toMatch(/^Error: redis at 10\.0\.0\.7:6379 said NOAUTH for user telematics\n\s+at .*health\.test\.ts/);
  });

  it('answers a PushRefused as a push refusal: its status, envelope, Retry-After and a delivery id; nothing logged', async () => {
    const { app, lines } = appWithLog();
    const res = await app.request('/refused', { method: 'POST' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('x-delivery-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await res.json()).toEqual({ status: 'FAILURE', data: null, err: 'rate_limited', msg: 'fleet-a is over its rate limit' });
    expect(lines).toEqual([]);
  });

  it("answers another HTTPException with its own status and response", async () => {
    const { app, lines } = appWithLog();
    const res = await app.request('/teapot');
    expect(res.status).toBe(418);
    expect(await res.text()).toBe('short and stout');
    expect(lines).toEqual([]);
  });

  it('still answers an unknown route 404 in the envelope', async () => {
    const { app } = appWithLog();
    const res = await app.request('/nowhere');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ status: 'FAILURE', data: null, err: 'not_found', msg: 'no route for GET /nowhere' });
  });
});
