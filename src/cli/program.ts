import type { Command } from './command.js';
import { EXIT, reportError, type ErrorClassifier } from './exit.js';
import type { CliIO } from './io.js';

/** A command-line program: its commands, the help that lists them, and how its own errors map to exit codes. */
export interface Program {
  /** As typed: `telematics`, `telematics-deadletter`. */
  name: string;
  commands: readonly Command[];
  /** The top-level help, given the command list it should show. */
  help(commandList: string): string;
  /** Exit codes for errors of the program's own domain; usage and cancellation are handled for every program. */
  classify?: ErrorClassifier;
}

export function commandList(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n');
}

/** Dispatches `argv` to a command and turns what it throws into an exit code and one line on stderr. */
export async function runProgram(program: Program, argv: readonly string[], io: CliIO): Promise<number> {
  const top = () => program.help(commandList(program.commands));
  const [name, ...rest] = argv;
  if (name === undefined) {
    io.stderr.write(top());
    return EXIT.usage;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const sub = rest[0] === undefined ? undefined : program.commands.find((c) => c.name === rest[0]);
    io.stdout.write(sub ? sub.help : top());
    return EXIT.ok;
  }
  const command = program.commands.find((c) => c.name === name);
  if (!command) {
    io.stderr.write(`error: unknown command "${name}"\n(see ${program.name} --help)\n`);
    return EXIT.usage;
  }
  try {
    return await command.run(rest, io);
  } catch (e) {
    return reportError(e, io, program.name, program.classify);
  }
}
