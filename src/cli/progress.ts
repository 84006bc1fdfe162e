import type { Output } from './io.js';

/**
 * Progress of a long command on stderr: on a terminal one line rewritten in place a few times a
 * second; elsewhere (a pipe, a log) a plain line every `plainEveryMs`, so logs stay readable.
 */
export function progress(out: Output, render: () => string, opts: { ttyEveryMs?: number; plainEveryMs?: number } = {}): { stop(): void } {
  const tty = out.isTTY === true;
  const timer = setInterval(() => out.write(tty ? `\r\x1b[K${render()}` : `${render()}\n`), tty ? (opts.ttyEveryMs ?? 250) : (opts.plainEveryMs ?? 10_000));
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      if (tty) out.write('\r\x1b[K');
    },
  };
}

/** `1m 05s`, `42s`. */
export function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
