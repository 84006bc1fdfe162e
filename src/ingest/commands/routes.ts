import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { plateFaults } from '../../telemetry/plate.js';
import { failure, success } from '../../telemetry/envelope.js';
import { VEHICLENO_MAX } from '../../telemetry/record.js';
import type { AdminVariables } from '../../config/adminCredentials.js';
import type { CommandLedger, RequestOutcome } from './ledger.js';
import { COMMAND_TYPES, IDEMPOTENCY_KEY_MAX, OPS, REASON_MAX, snapshotOf, type Author, type CommandEntry, type CommandRequest, type LatestValues } from './model.js';

/** Where the routes sit under the fleet's. */
export const COMMANDS_PATH = '/commands';
const LIST_MAX = 1_000;

/** Printable text on one line: a reason becomes a tag of the history's points and a line of the CLI's table. */
const PRINTABLE = /^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]+$/;

/** A command as the API takes it. */
export const commandBody = z
  .object({
    vehicleno: z
      .string()
      .trim()
      .min(1, 'vehicleno: give the vehicle')
      .max(VEHICLENO_MAX)
      // The push's own plate rule: a plate no push could carry is no vehicle of the fleet (and no tag of `commands`).
      .superRefine((v, ctx) => {
        for (const fault of plateFaults(v)) ctx.addIssue({ code: 'custom', message: `vehicleno: ${fault}` });
      }),
    command: z.enum(OPS),
    type: z.enum(COMMAND_TYPES),
    reason: z.string().trim().min(1, 'reason: say why (it is kept with the command, for the audit)').max(REASON_MAX).regex(PRINTABLE, 'reason: one line of printable text'),
    immediate: z.boolean().optional(),
    /** The second, explicit confirmation an `immediate` command needs. */
    confirmImmediate: z.boolean().optional(),
    idempotencyKey: z.string().min(1).max(IDEMPOTENCY_KEY_MAX).regex(PRINTABLE, 'idempotencyKey: printable text').optional(),
  })
  .strict();

export interface CommandRouteOptions {
  ledger: CommandLedger;
  latest: { of(vehicleno: string): Promise<LatestValues | undefined> };
  /** COMMANDS_WAIT_MAX. */
  waitMaxMs: number;
  /** Whether the workers have an upstream to send to (UPSTREAM_URL). */
  upstream: boolean;
  now?: () => number;
}

/** The answer to a refused or accepted request (the CLI prints `message`). */
function outcomeAnswer(c: Context<{ Variables: AdminVariables }>, o: RequestOutcome): Response {
  if (o.outcome === 'conflict') return c.json(failure('idempotency_conflict', `idempotency key already used for another request (command ${o.id}); use a new key for a new command`), 409);
  if (o.outcome === 'busy') return c.json(failure('busy', `the vehicle's command ${o.id} is being sent right now; ask again in a moment`), 409, { 'Retry-After': '1' });
  if (o.outcome === 'same') return c.json(success(o.command, `the same request as command ${o.command.id} (idempotency key): nothing new; it is ${o.command.state}`), 200);
  const replaced = o.replaced ? `; replaces ${o.replaced.id} (${o.replaced.op} ${o.replaced.type}), cancelled` : '';
  return c.json(success(o.command, `command ${o.command.id} requested${replaced}`), 201);
}

/**
 * The admin listener's command routes (under `/fleet`, behind its credentials): `POST /fleet/commands`
 * (ask for an immobilise or mobilise; a credential with the `commands` right, and `immediate` with the
 * `immediate` right and `confirmImmediate: true`), `GET /fleet/commands[?vehicle=V&limit=N]` (newest
 * first) and `GET /fleet/commands/<id>`. As the CLI's `telematics-fleet command` / `commands`.
 */
export function commandRoutes(o: CommandRouteOptions): Hono<{ Variables: AdminVariables }> {
  const now = o.now ?? Date.now;
  const app = new Hono<{ Variables: AdminVariables }>();
  app.post('/', async (c) => {
    // Set by the admin listener's guard (service/credentials.ts); unset with ADMIN_AUTH=none.
    const who = c.get('credential');
    if (!who) return c.json(failure('forbidden', 'commands need a named admin credential with the commands right (ADMIN_CREDENTIALS=name:password:commands); ADMIN_AUTH=none opens reads only'), 403);
    if (!who.rights.has('commands')) return c.json(failure('forbidden', `credential ${JSON.stringify(who.name)} may not send commands: it reads only (give it the commands right: ${who.name}:<password>:commands in ADMIN_CREDENTIALS)`), 403);
    let json: unknown;
    try {
      json = await c.req.json();
    } catch {
      return c.json(failure('invalid_json', 'the body is not JSON: send {"vehicleno","command","type","reason"}'), 400);
    }
    const parsed = commandBody.safeParse(json);
    if (!parsed.success) return c.json(failure('invalid_command', parsed.error.issues.map((i) => (i.path.length > 0 && !i.message.startsWith(String(i.path[0])) ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ')), 400);
    const b = parsed.data;
    const immediate = b.immediate === true;
    if (immediate && b.command === 'mobilize') return c.json(failure('invalid_command', 'immediate: only an immobilise takes it (a mobilise never waits)'), 400);
    if (immediate && b.confirmImmediate !== true) {
      return c.json(failure('immediate_not_confirmed', 'immediate: true sends without waiting for the vehicle to stand with its ignition off; confirm it with confirmImmediate: true (the CLI: --immediate --confirm-immediate)'), 400);
    }
    if (!immediate && b.confirmImmediate === true) return c.json(failure('invalid_command', 'confirmImmediate: confirms immediate: true, which is not set'), 400);
    if (immediate && !who.rights.has('immediate')) return c.json(failure('forbidden', `credential ${JSON.stringify(who.name)} may not send immediate commands (give it the immediate right: ${who.name}:<password>:commands,immediate)`), 403);
    if (!o.upstream) return c.json(failure('no_upstream', 'the service has no upstream to send commands to (UPSTREAM_URL)'), 503);
    const key = c.req.header('idempotency-key') ?? b.idempotencyKey;
    if (key !== undefined && (key.length > IDEMPOTENCY_KEY_MAX || !PRINTABLE.test(key))) return c.json(failure('invalid_command', `Idempotency-Key: printable text of at most ${IDEMPOTENCY_KEY_MAX} characters`), 400);
    const request: CommandRequest = { vehicleno: b.vehicleno, op: b.command, type: b.type, immediate, reason: b.reason, ...(key !== undefined ? { idempotencyKey: key } : {}) };
    const author: Author = { kind: 'credential', name: who.name };
    const at = now();
    const outcome = await o.ledger.request(request, author, snapshotOf(await o.latest.of(b.vehicleno)), at, at + o.waitMaxMs);
    return outcomeAnswer(c, outcome);
  });
  app.get('/', async (c) => {
    const vehicle = c.req.query('vehicle');
    const limitText = c.req.query('limit');
    const limit = limitText === undefined ? 100 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX) return c.json(failure('invalid_query', `limit: "${limitText}" is not a whole number from 1 to ${LIST_MAX}`), 400);
    const list: CommandEntry[] = await o.ledger.list({ ...(vehicle ? { vehicleno: vehicle } : {}), limit });
    return c.json(success(list, `${list.length} command(s)`));
  });
  app.get('/:id', async (c) => {
    const id = c.req.param('id');
    const e = /^c[0-9a-z]{1,20}$/.test(id) ? await o.ledger.get(id) : undefined;
    if (!e) return c.json(failure('not_found', `no command ${JSON.stringify(id.slice(0, 40))} in the ledger`), 404);
    return c.json(success(e, `${e.op} ${e.type} of ${e.vehicleno}: ${e.state}`));
  });
  return app;
}

/** The routes answering that the ledger is off (COMMANDS=off). */
export function commandsOffRoutes(): Hono<{ Variables: AdminVariables }> {
  const app = new Hono<{ Variables: AdminVariables }>();
  app.all('*', (c) => c.json(failure('commands_off', 'the command ledger is off: COMMANDS=on turns it on (docs/commands.md)'), 503));
  return app;
}
