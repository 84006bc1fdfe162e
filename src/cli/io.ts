/** What a command may touch of the process, so that commands can be run with other streams. */
export interface Output {
  write(chunk: string): unknown;
  /** True on a terminal: progress is then drawn in place. */
  isTTY?: boolean;
}

export interface Input extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?: (raw: boolean) => unknown;
}

export interface CliIO {
  stdout: Output;
  stderr: Output;
  stdin: Input;
  env: Readonly<Record<string, string | undefined>>;
  /** Resolves on the first SIGINT or SIGTERM (long-running commands stop on it). */
  interrupted: () => Promise<string>;
}

export function processIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    interrupted: () =>
      new Promise((resolve) => {
        const on = (signal: string): void => {
          process.off('SIGINT', on);
          process.off('SIGTERM', on);
          resolve(signal);
        };
        process.once('SIGINT', on);
        process.once('SIGTERM', on);
      }),
  };
}
