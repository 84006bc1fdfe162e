import { parse, noPositionals, parseNumber } from '../../cli/args.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT, UsageError } from '../../cli/exit.js';
import { isoTime, table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import { withServiceRedis } from '../../redis/tool.js';
import { printable, printableJson } from '../geofences/commands.js';
import { redisKeys } from '../queue/keys.js';
import { CommandLedger } from './ledger.js';
import { COMMAND_TYPES, OPS, type CommandEntry } from './model.js';

/**
 * `telematics-fleet command immobilize|mobilize` (asks through the admin listener, as the credential named,
 * so the ledger records who) and `telematics-fleet commands` (the ledger, read from Redis).
 */

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);

/** A command asked for was refused: exit 1 with the listener's words. */
export class CommandRefused extends Error {
  override readonly name = 'CommandRefused';
}

/** The admin listener did not answer: exit 3. */
export class AdminUnreachable extends Error {
  override readonly name = 'AdminUnreachable';
}

export const COMMAND_COMMAND: Command = {
  name: 'command',
  summary: 'ask for an immobilise or mobilise, recorded in the command ledger (sent when safe, confirmed from the vehicle’s data)',
  help: `Usage: telematics-fleet command immobilize|mobilize --vehicle <plate> --type <type> --reason "<why>"
                                 [--immediate --confirm-immediate] [--idempotency-key <key>] [--json]

Asks the service for a command through its admin listener (POST /fleet/commands), as the named admin
credential ADMIN_USER (ADMIN_PASSWORD from the environment, never a flag): the ledger records who, why,
when and the vehicle's state. An immobilise of ${['ignition', 'crank', 'movement', 'can', 'discharge', 'chargendischarge'].join(', ')} waits until
the vehicle stands with its ignition off (docs/commands.md); charge goes at once.

  --type <type>          ${COMMAND_TYPES.join(', ')}
  --reason "<why>"       required: kept with the command (one line, at most 500 characters)
  --immediate            do not wait for the vehicle to be safe; needs --confirm-immediate too, and a
                         credential with the immediate right
  --idempotency-key <k>  the same key and the same request by the same credential make one command (a retry
                         after a lost answer); the same key for anything else is refused (409)
  --json                 the command as JSON

Settings: ADMIN_URL (the admin listener, e.g. http://127.0.0.1:9464), ADMIN_USER, ADMIN_PASSWORD.
Exit: 0 recorded (or the same request as before), 1 refused (the listener's reason), 2 usage, 3 unreachable.
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, {
      vehicle: { type: 'string' },
      type: { type: 'string' },
      reason: { type: 'string' },
      immediate: { type: 'boolean' },
      'confirm-immediate': { type: 'boolean' },
      'idempotency-key': { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) return showHelp(io, this.help);
    const [op, ...extra] = positionals;
    if (op === undefined || !(OPS as readonly string[]).includes(op)) throw new UsageError(`give the command: immobilize or mobilize${op ? `, not ${JSON.stringify(op)}` : ''}`, this.name);
    noPositionals(extra, this.name);
    if (!values.vehicle) throw new UsageError('missing --vehicle <plate>', this.name);
    if (!values.type || !(COMMAND_TYPES as readonly string[]).includes(values.type)) throw new UsageError(`--type: one of ${COMMAND_TYPES.join(', ')}`, this.name);
    if (!values.reason) throw new UsageError('missing --reason "<why>": it is kept with the command', this.name);
    const url = io.env.ADMIN_URL;
    const user = io.env.ADMIN_USER;
    const password = io.env.ADMIN_PASSWORD;
    if (!url || !user || password === undefined) throw new UsageError('set ADMIN_URL, ADMIN_USER and ADMIN_PASSWORD (the admin listener and a named credential with the commands right)', this.name);
    const body = {
      vehicleno: values.vehicle,
      command: op,
      type: values.type,
      reason: values.reason,
      ...(values.immediate ? { immediate: true } : {}),
      ...(values['confirm-immediate'] ? { confirmImmediate: true } : {}),
      ...(values['idempotency-key'] !== undefined ? { idempotencyKey: values['idempotency-key'] } : {}),
    };
    let res: Response;
    try {
      res = await fetch(new URL('/fleet/commands', url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new AdminUnreachable(`cannot reach the admin listener at ${url}: ${(err as Error).message}`);
    }
    const answer = (await res.json().catch(() => ({}))) as { status?: string; data?: CommandEntry; msg?: string; err?: string };
    if (res.status >= 400) throw new CommandRefused(printable(`${res.status} ${answer.err ?? ''}: ${answer.msg ?? ''}`.trim()));
    if (values.json) line(io, printableJson(answer.data));
    else line(io, printable(answer.msg ?? `command ${answer.data?.id}`));
    return EXIT.ok;
  },
};

/** The ledger's commands as a table: newest first. */
function commandRows(list: readonly CommandEntry[]): string {
  return table(list, [
    { header: 'ID', value: (c) => c.id },
    { header: 'ASKED', value: (c) => isoTime(c.requestedAt) },
    { header: 'VEHICLE', value: (c) => printable(c.vehicleno) },
    { header: 'COMMAND', value: (c) => `${c.op} ${c.type}${c.immediate ? ' (immediate)' : ''}` },
    { header: 'STATE', value: (c) => c.state },
    { header: 'BY', value: (c) => printable(c.author.kind === 'rule' ? `rule ${c.author.name}` : c.author.name) },
    { header: 'REASON', value: (c) => printable(c.reason.length > 60 ? `${c.reason.slice(0, 59)}…` : c.reason) },
    { header: 'LAST NOTE', value: (c) => printable([...c.history].reverse().find((h) => h.note !== undefined)?.note ?? '-') },
  ]);
}

export const COMMANDS_COMMAND: Command = {
  name: 'commands',
  summary: 'the command ledger: each immobilise and mobilise, who asked, why, and what became of it',
  help: `Usage: telematics-fleet commands [--vehicle <plate>] [--limit 100] [--json]

The commands in the live ledger (Redis), newest first: id, when asked, vehicle, command, state, who
asked (a credential, or an automation rule), why, and the last note (why it waits, what confirmed it,
what failed). --json: each command whole, with every state it went through and the vehicle's state
when asked. Older commands' history is in InfluxDB (measurement commands, docs/commands.md).
Settings: REDIS_URL (required), QUEUE_NAME, as for the service.
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { vehicle: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const limit = values.limit === undefined ? 100 : parseNumber(values.limit, '--limit', this.name, { integer: true, min: 1, max: 10_000 });
    const list = await withServiceRedis(io, (redis, cfg) => new CommandLedger(redis, redisKeys(cfg.QUEUE_NAME, { partitions: cfg.QUEUE_PARTITIONS, cluster: cfg.REDIS_CLUSTER_NODES.length > 0 }).commands).list({ ...(values.vehicle ? { vehicleno: values.vehicle } : {}), limit }));
    if (values.json) line(io, printableJson(list));
    else if (list.length === 0) line(io, 'no command');
    else io.stdout.write(commandRows(list));
    return EXIT.ok;
  },
};

/** The ledger's commands as `telematics-fleet` takes them (src/cmd/fleetProgram.ts), with their errors' exit codes. */
export const LEDGER_COMMANDS = {
  commands: [COMMAND_COMMAND, COMMANDS_COMMAND],
  classify: (e: unknown) =>
    e instanceof CommandRefused ? { code: EXIT.failure, message: `refused: ${e.message}` } : e instanceof AdminUnreachable ? { code: EXIT.network, message: e.message } : undefined,
};
