/** Questions on a terminal, and secrets from a terminal (no echo) or from piped stdin. */
import { type Key, createInterface, emitKeypressEvents } from 'node:readline';
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

/**
 * Reads a line from the terminal without echoing it. Ctrl-C cancels, Ctrl-U clears, Backspace deletes
 * the last character. Keys arrive decoded (readline's keypress events), so that an arrow, Home, Delete
 * or a function key, which a terminal sends as an escape sequence, is ignored instead of becoming part
 * of the password; there is no cursor to move in a line nobody sees.
 */
export function readSecret(prompt: string, io: CliIO): Promise<string> {
  const stdin = io.stdin;
  if (!stdin.setRawMode) throw new UsageError('cannot read a password: stdin is not a terminal');
  const setRaw = stdin.setRawMode.bind(stdin);
  io.stderr.write(prompt);
  emitKeypressEvents(stdin);
  setRaw(true);
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (): void => {
      stdin.off('keypress', onKey);
      setRaw(false);
      stdin.pause();
      io.stderr.write('\n');
    };
    // A paste arrives as one keypress per character, so it needs no case of its own.
    const onKey = (_: string | undefined, key: Key): void => {
      const name = key.ctrl ? `ctrl-${key.name}` : key.name;
      if (name === 'return' || name === 'enter' || name === 'ctrl-d') {
        finish();
        resolve(value);
      } else if (name === 'ctrl-c') {
        finish();
        reject(new CancelledError('cancelled'));
      } else if (name === 'ctrl-u') value = '';
      // By code point, so that a character outside the BMP goes in one press.
      else if (name === 'backspace') value = [...value].slice(0, -1).join('');
      // Every escape sequence starts with ESC, a control character: only printable ones are typed.
      else if (!key.ctrl && !key.meta && key.sequence && !/\p{Cc}/u.test(key.sequence)) value += key.sequence;
    };
    stdin.on('keypress', onKey);
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
