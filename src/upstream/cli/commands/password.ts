/** change-password */
import { noPositionals, parse } from '../../../cli/args.js';
import { type Command, showHelp } from '../../../cli/command.js';
import { EXIT, UsageError } from '../../../cli/exit.js';
import { printJson } from '../../../cli/format.js';
import type { CliIO } from '../../../cli/io.js';
import { readFirstLine, readSecret } from '../../../cli/prompt.js';
import { UPSTREAM_HELP, UPSTREAM_OPTIONS, clientFrom } from '../upstream.js';

const NAME = 'change-password';

/** From a terminal: asked twice without echo. Piped: the first line of stdin. Never from argv. */
async function newPassword(io: CliIO): Promise<string> {
  if (io.stdin.isTTY) {
    const first = await readSecret('New password: ', io);
    const again = await readSecret('Repeat new password: ', io);
    if (first !== again) throw new UsageError('the two passwords differ; nothing was changed', NAME);
    if (first === '') throw new UsageError('empty password; nothing was changed', NAME);
    return first;
  }
  const line = await readFirstLine(io);
  if (line === '') throw new UsageError('no new password on stdin (expected it on the first line)', NAME);
  return line;
}

export const changePassword: Command = {
  name: NAME,
  summary: 'change a user\'s password (read from a prompt or stdin, never from argv)',
  help: `Usage: telematics change-password --username <name> [options]

Changes the password of <name> (changepassword). The new password is asked twice without echo
on a terminal, or read from the first line of stdin when piped:
  printf '%s\\n' "$NEW_PASSWORD" | telematics change-password --username alice
It is never taken from the command line, where other users and shell history could see it.

  --username <name>    user whose password to set (required)

${UPSTREAM_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { ...UPSTREAM_OPTIONS, username: { type: 'string' } });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const username = values.username;
    if (!username) throw new UsageError('--username is required', this.name);
    const client = clientFrom(values, io, this.name);
    const ack = await client.changePassword({ username, newPassword: await newPassword(io) });
    if (values.json) printJson(io.stdout, { username, message: ack.message });
    else io.stdout.write(`${ack.message}\n`);
    return EXIT.ok;
  },
};
