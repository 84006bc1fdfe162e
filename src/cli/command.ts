import type { CliIO } from './io.js';

export interface Command {
  name: string;
  /** One line for the top-level help. */
  summary: string;
  /** Full text of `telematics <name> --help`. */
  help: string;
  run(args: string[], io: CliIO): Promise<number>;
}

export function showHelp(io: CliIO, text: string): number {
  io.stdout.write(text);
  return 0;
}
