/** immobilize, mobilize */
import { COMMAND_TYPES, type CommandType, isCommandType } from '../../client/schema.js';
import { onePositional, parse } from '../../../cli/args.js';
import { type Command, showHelp } from '../../../cli/command.js';
import { CancelledError, EXIT, UsageError } from '../../../cli/exit.js';
import { printJson } from '../../../cli/format.js';
import type { CliIO } from '../../../cli/io.js';
import { confirm } from '../../../cli/prompt.js';
import { UPSTREAM_HELP, UPSTREAM_OPTIONS, clientFrom } from '../upstream.js';

const TYPE_HELP = `  --type <type>        one of: ${COMMAND_TYPES.join(', ')}   (required)`;

function commandType(value: string | undefined, command: string): CommandType {
  if (value === undefined) throw new UsageError(`--type is required: one of ${COMMAND_TYPES.join(', ')}`, command);
  if (!isCommandType(value)) throw new UsageError(`--type "${value}" is not one of ${COMMAND_TYPES.join(', ')}`, command);
  return value;
}

/**
 * Immobilising the wrong vehicle strands a driver: a person confirms it, and a script must say --yes.
 * Without a terminal to ask on, refusing is the only safe answer.
 */
async function confirmed(question: string, yes: boolean, io: CliIO): Promise<void> {
  if (yes) return;
  if (!io.stdin.isTTY) {
    throw new UsageError('refusing to immobilize without confirmation: stdin is not a terminal; pass --yes', 'immobilize');
  }
  if (!(await confirm(question, io))) throw new CancelledError('cancelled: nothing was sent');
}

export const immobilize: Command = {
  name: 'immobilize',
  summary: 'send an immobilise command to a vehicle (asks for confirmation)',
  help: `Usage: telematics immobilize <vehicleno> --type <type> [--immediate] [--yes] [options]

Sends an immobilise command (immobilize). Asks for confirmation on a terminal; without a
terminal, --yes is required (exit 2 otherwise). Never retried: a command that timed out may have
been carried out.

${TYPE_HELP}
  --immediate          immediate: true (default false)
  -y, --yes            do not ask for confirmation

${UPSTREAM_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, {
      ...UPSTREAM_OPTIONS,
      type: { type: 'string' },
      immediate: { type: 'boolean' },
      yes: { type: 'boolean', short: 'y' },
    });
    if (values.help) return showHelp(io, this.help);
    const vehicleno = onePositional(positionals, 'vehicleno', this.name);
    const type = commandType(values.type, this.name);
    const immediate = values.immediate === true;
    const client = clientFrom(values, io, this.name);
    await confirmed(`Immobilize vehicle ${vehicleno} (type ${type}${immediate ? ', immediate' : ''})?`, values.yes === true, io);
    const ack = await client.immobilize({ vehicleno, type, immediate });
    if (values.json) printJson(io.stdout, { vehicleno, type, immediate, message: ack.message });
    else io.stdout.write(`${ack.message}\n`);
    return EXIT.ok;
  },
};

export const mobilize: Command = {
  name: 'mobilize',
  summary: 'send a mobilise command to a vehicle',
  help: `Usage: telematics mobilize <vehicleno> --type <type> [options]

Sends a mobilise command (mobilize). Never retried.

${TYPE_HELP}

${UPSTREAM_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { ...UPSTREAM_OPTIONS, type: { type: 'string' } });
    if (values.help) return showHelp(io, this.help);
    const vehicleno = onePositional(positionals, 'vehicleno', this.name);
    const type = commandType(values.type, this.name);
    const ack = await clientFrom(values, io, this.name).mobilize({ vehicleno, type });
    if (values.json) printJson(io.stdout, { vehicleno, type, message: ack.message });
    else io.stdout.write(`${ack.message}\n`);
    return EXIT.ok;
  },
};
