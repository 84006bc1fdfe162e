import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { Logger } from '../../log/index.js';
import { validateRecord } from '../validate/record.js';
import { type TelemetryRecord } from '../../telemetry/record.js';
import type { NewQuarantineEntry } from '../queue/quarantine.js';
import { TokenAuth } from './auth.js';
import { BodyError, checkContentType, readBody } from './body.js';
import { failure, success, type FailureCode, type PushAccepted, type RejectedRecord } from '../../telemetry/envelope.js';

/** What the receiver needs from the queue stage; the real ones are Producer and Quarantine. */
export interface RecordSink {
  enqueue(records: TelemetryRecord[]): Promise<void>;
}
export interface QuarantineSink {
  add(entries: readonly NewQuarantineEntry[]): Promise<void>;
}

/** The load-shedding gate; the real one is queue/Admission. */
export interface AdmissionGate {
  state(): { open: true } | { open: false; status: 429 | 503; reason: string; retryAfterSeconds: number };
}

export interface HealthCheck {
  name: string;
  check: () => Promise<boolean>;
}

export interface ReceiverOptions {
  /** Undefined turns authentication off (PUSH_AUTH=none). */
  tokens: readonly string[] | undefined;
  bodyLimit: number;
  quarantineRawLimit: number;
  retryAfterSeconds: number;
  admission?: AdmissionGate;
  log: Logger;
}

type Shape = 'any' | 'bulk' | 'realtime';
type Status = 400 | 401 | 404 | 413 | 415 | 429 | 500 | 503;

const decoder = new TextDecoder('utf-8', { fatal: false });

class PushFailure extends Error {
  constructor(
    readonly status: Status,
    readonly code: FailureCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The push input: HTTP in, validated records into the queue, the rest into the quarantine.
 * A 2xx is sent only after Redis confirmed both.
 */
export function pushRoutes(records: RecordSink, quarantine: QuarantineSink, opts: ReceiverOptions): Hono {
  const auth = opts.tokens ? new TokenAuth(opts.tokens) : undefined;
  const app = new Hono();

  const bound = (s: string): { raw: string; truncated: boolean } =>
    s.length > opts.quarantineRawLimit
      ? { raw: s.slice(0, opts.quarantineRawLimit), truncated: true }
      : { raw: s, truncated: false };

  // The 202 carries X-Delivery-Id in plain headers rather than through c.header(), which makes Hono
  // build a WHATWG Headers object and takes every 202 off @hono/node-server's fast path for
  // plain-object headers (a seventh of a realtime push's cost). Error answers use c.header().
  const fail = (c: Context, status: Status, code: FailureCode, msg: string, retryAfter = opts.retryAfterSeconds, deliveryId?: string) => {
    if (deliveryId !== undefined) c.header('X-Delivery-Id', deliveryId);
    if (status === 503 || status === 429) c.header('Retry-After', String(retryAfter));
    return c.json(failure(code, msg), status);
  };

  /** Checks that need no body; a push that passes them gets its delivery id and is read. */
  function handle(c: Context, shape: Shape): Response | Promise<Response> {
    if (auth && !auth.check(c.req.raw)) {
      return fail(c, 401, 'unauthorized', 'missing or invalid token: send Authorization: Bearer <token>, X-Api-Key or ?token=');
    }
    const gate = opts.admission?.state();
    if (gate && !gate.open) return fail(c, gate.status, 'overloaded', gate.reason, gate.retryAfterSeconds);
    const badType = checkContentType(c.req.header('content-type') ?? null);
    if (badType) return fail(c, 415, 'unsupported_media_type', badType);
    const deliveryId = randomUUID();
    return receive(c, shape, deliveryId).catch((err: unknown) => unstored(c, err, deliveryId));
  }

  async function receive(c: Context, shape: Shape, deliveryId: string): Promise<Response> {
    // Only quarantine entries and logs need it, and parsing the URL is not free on every push.
    let pathname: string | undefined;
    const routeOf = () => (pathname ??= new URL(c.req.url).pathname);
    const failed = (status: Status, code: FailureCode, msg: string) => fail(c, status, code, msg, opts.retryAfterSeconds, deliveryId);
    const receivedAt = Date.now();
    const keepWhole = async (raw: string, reason: string) =>
      quarantine.add([{ deliveryId, index: -1, reason, ...bound(raw), receivedAt, route: routeOf(), stage: 'receive' }]);

    let bytes: Uint8Array;
    try {
      bytes = await readBody(c.req.raw, opts.bodyLimit);
    } catch (err) {
      if (!(err instanceof BodyError)) throw err;
      if (err.raw) await keepWhole(`base64:${Buffer.from(err.raw).toString('base64')}`, err.message);
      return failed(err.status, err.code, err.message);
    }

    const text = decoder.decode(bytes);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err) {
      const msg = `body is not valid JSON: ${(err as Error).message}`;
      await keepWhole(text, msg);
      return failed(400, 'invalid_json', msg);
    }

    const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
    const isBulk = isObject && 'bulkData' in (body as object);
    let problem: string | undefined;
    if (isBulk && !Array.isArray((body as { bulkData: unknown }).bulkData)) problem = 'bulkData must be an array of push records';
    else if (shape === 'bulk' && !isBulk) problem = 'expected a bulk push {"bulkData":[...]}; send a single record to /push/realtime';
    else if (shape === 'realtime' && isBulk) problem = 'expected a single push record; send {"bulkData":[...]} to /push/bulk';
    else if (!isObject) problem = 'expected a JSON object: a push record or {"bulkData":[...]}';
    if (problem) {
      await keepWhole(text, problem);
      return failed(400, 'invalid_shape', problem);
    }

    const items: unknown[] = isBulk ? (body as { bulkData: unknown[] }).bulkData : [body];
    const valid: TelemetryRecord[] = [];
    const rejected: RejectedRecord[] = [];
    const held: NewQuarantineEntry[] = [];
    for (let i = 0; i < items.length; i++) {
      const r = validateRecord(items[i], receivedAt);
      if (r.ok) valid.push(r.record);
      else {
        rejected.push({ index: i, error: r.error });
        held.push({ deliveryId, index: i, reason: r.error, ...bound(JSON.stringify(items[i]) ?? 'undefined'), receivedAt, route: routeOf(), stage: 'receive' });
      }
    }

    // Only counts are used after the wait: the parsed push and its records are then garbage as soon
    // as the producer has encoded them, not kept through the Redis round trip (fewer survivors for
    // each young-generation collection, which otherwise copies and promotes every push in flight).
    const accepted = valid.length;
    const total = items.length;
    await (held.length === 0 ? records.enqueue(valid) : Promise.all([records.enqueue(valid), quarantine.add(held)]));
    if (rejected.length > 0) {
      opts.log.info({ deliveryId, route: routeOf(), accepted, rejected: rejected.length }, 'push had invalid records; quarantined');
    }
    if (!isBulk && rejected.length > 0) {
      return failed(400, 'invalid_record', `invalid record (quarantined): ${rejected[0]!.error}`);
    }
    const data: PushAccepted = { deliveryId, accepted, rejected };
    const msg =
      rejected.length === 0
        ? `accepted ${accepted} record(s)`
        : `accepted ${accepted} of ${total} record(s); ${rejected.length} rejected and quarantined`;
    return new Response(JSON.stringify(success(data, msg)), {
      status: 202,
      headers: { 'Content-Type': 'application/json', 'X-Delivery-Id': deliveryId },
    });
  }

  /** Anything that kept us from storing a push (Redis down or slow) is the sender's cue to retry. */
  const unstored = (c: Context, err: unknown, deliveryId?: string) => {
    opts.log.warn({ err: (err as Error).message, deliveryId, path: new URL(c.req.url).pathname }, 'push not stored; answered 503');
    return fail(c, 503, 'unavailable', `push not stored, retry later: ${(err as Error).message}`, opts.retryAfterSeconds, deliveryId);
  };

  const guarded = (shape: Shape) => (c: Context) => {
    try {
      return handle(c, shape);
    } catch (err) {
      return unstored(c, err);
    }
  };

  app.post('/push', guarded('any'));
  app.post('/push/bulk', guarded('bulk'));
  app.post('/push/realtime', guarded('realtime'));
  return app;
}

/** `/healthz`: the process answers. `/readyz`: every dependency of this mode answers. */
export function healthRoutes(checks: readonly HealthCheck[]): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json(success({ alive: true }, 'alive')));
  app.get('/readyz', async (c) => {
    const results = await Promise.all(
      checks.map(async (h) => [h.name, await withTimeout(h.check(), 2_000).catch(() => false)] as const),
    );
    const data = Object.fromEntries(results);
    const down = results.filter(([, ok]) => !ok).map(([n]) => n);
    if (down.length > 0) return c.json({ ...failure('unavailable', `not ready: ${down.join(', ')} unreachable`), data }, 503);
    return c.json(success(data, 'ready'));
  });
  return app;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(resolve, reject).finally(() => clearTimeout(t));
  });
}

export function createApp(parts: { push?: Hono; health: Hono }): Hono {
  const app = new Hono();
  app.route('/', parts.health);
  if (parts.push) app.route('/', parts.push);
  app.notFound((c) => c.json(failure('not_found', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`), 404));
  app.onError((err, c) => c.json(failure('internal', `internal error: ${err.message}`), 500));
  return app;
}
