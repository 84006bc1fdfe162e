/** `telematics`: dispatch to a command, turn errors into exit codes. */
import type { Command } from '../../cli/command.js';
import { changePassword } from './commands/password.js';
import { emulate } from './commands/emulate.js';
import { feed } from './commands/feed.js';
import { immobilize, mobilize } from './commands/control.js';
import { fuelHistory, fuelUsed, vehicles } from './commands/reads.js';
import { EXIT, reportError } from '../../cli/exit.js';
import type { CliIO } from '../../cli/io.js';

export const COMMANDS: readonly Command[] = [vehicles, fuelHistory, fuelUsed, immobilize, mobilize, changePassword, emulate, feed];

export function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `Usage: telematics <command> [options]

Client of the vehicle telematics service, its emulator and its push feed.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run "telematics <command> --help" for the options of a command.

Environment:
  UPSTREAM_URL        service base URL (flag --url)
  UPSTREAM_TOKEN      API token (flag --token); never printed
  UPSTREAM_TIME_UNIT  ms or s: unit of starttime/endtime sent (flag --time-unit)
  PUSH_TOKEN          token the feed sends to the receiver (flag --token of feed)
  EMULATOR_TOKEN      token the emulator accepts (flag --token of emulate)

Exit status:
  0    success
  1    the service answered FAILURE (feed: the receiver refused valid records)
  2    usage error: bad flags, missing configuration, confirmation impossible without --yes
  3    network error, timeout, or HTTP error without an answer envelope
  4    the service's answer does not have the expected shape
  5    cancelled at a confirmation prompt
  130  interrupted
`;
}

export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr.write(topHelp());
    return EXIT.usage;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const sub = rest[0] === undefined ? undefined : COMMANDS.find((c) => c.name === rest[0]);
    io.stdout.write(sub ? sub.help : topHelp());
    return EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.stderr.write(`error: unknown command "${name}"\n(see telematics --help)\n`);
    return EXIT.usage;
  }
  try {
    return await command.run(rest, io);
  } catch (e) {
    return reportError(e, io);
  }
}
