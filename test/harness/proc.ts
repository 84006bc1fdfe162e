import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, stopProcess } from '../../src/devstack/process.js';
import { waitUntil } from './wait.js';

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** What the process wrote to stdout and stderr so far (the last 256 KiB at least, if it wrote more). */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const OUTPUT_KEPT = 256 * 1024;

/** The service as operators run it: `telematics-ingest <mode>` in its own process. */
export async function spawnService(mode: 'all' | 'receiver' | 'worker', env: Record<string, string>): Promise<ServiceProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/ingest.ts', mode], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The last OUTPUT_KEPT characters: a process of an hour-long soak must not grow the harness's memory.
  let out = '';
  const keep = (b: Buffer) => {
    out += b.toString();
    if (out.length > 2 * OUTPUT_KEPT) out = out.slice(-OUTPUT_KEPT);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${mode} process exited with code ${code}: ${out}`))),
  );
  exited.catch(() => {});
  await Promise.race([
    waitUntil(async () => (await fetch(`${url}/readyz`)).status === 200, 30_000, `${mode} process ready`),
    exited,
  ]);
  return {
    url,
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      await stopProcess(child, signal, 30_000);
      return child.exitCode;
    },
  };
}
