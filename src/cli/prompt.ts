/** Questions on a terminal, and secrets from a terminal (no echo) or from piped stdin. */
import { createInterface } from 'node:readline';
import { CancelledError, UsageError } from './exit.js';
import type { CliIO } from './io.js';

/**
 * Asks a yes/no question on the terminal; anything but y/yes (or end of input) is no. The terminal's
 * own line editing is enough for one word, so readline runs without terminal handling.
 */
export async function confirm(question: string, io: CliIO): Promise<boolean> {
  io.stderr.write(`${question} [y/N] `);
  const rl = createInterface({ input: io.stdin, terminal: false });
  try {
    for await (const answer of rl) return /^(y|yes)$/i.test(answer.trim());
    return false;
  } finally {
    rl.close();
  }
}

/** Reads a line from the terminal without echoing it. Ctrl-C cancels. */
export function readSecret(prompt: string, io: CliIO): Promise<string> {
  const stdin = io.stdin;
  if (!stdin.setRawMode) throw new UsageError('cannot read a password: stdin is not a terminal');
  const setRaw = stdin.setRawMode.bind(stdin);
  io.stderr.write(prompt);
  setRaw(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (): void => {
      stdin.off('data', onData);
      setRaw(false);
      stdin.pause();
      io.stderr.write('\n');
    };
    const onData = (chunk: string | Buffer): void => {
      for (const ch of String(chunk)) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          finish();
          resolve(value);
          return;
        }
        if (ch === '\u0003') {
          finish();
          reject(new CancelledError('cancelled'));
          return;
        }
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The first line of piped stdin (without its line ending). */
export async function readFirstLine(io: CliIO): Promise<string> {
  let text = '';
  for await (const chunk of io.stdin) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}
