import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, stopProcess } from '../../src/devstack/process.js';
import { waitUntil } from './wait.js';

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The service as operators run it: `telematics-ingest <mode>` in its own process. */
export async function spawnService(mode: 'all' | 'receiver' | 'worker', env: Record<string, string>): Promise<ServiceProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/ingest.ts', mode], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
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
