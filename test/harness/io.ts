import { PassThrough } from 'node:stream';
import type { CliIO } from '../../src/cli/io.js';

/** A command's streams in memory, with `env` as its whole environment: for running a CLI in-process. */
export function captureIO(env: Record<string, string>): { io: CliIO; out(): string; err(): string } {
  let out = '';
  let err = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    stdin: new PassThrough(),
    env,
    interrupted: () => new Promise<string>(() => {}),
  };
  return { io, out: () => out, err: () => err };
}
