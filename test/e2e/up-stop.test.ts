/**
 * Issue #46 item 9: `npm run up`, then Ctrl-C in its terminal, exits within seconds every time, its
 * private servers stopped with it, also when they are gone already. Run as a person runs it: `npm run up`
 * in a pseudo-terminal (util-linux `script`), Ctrl-C typed there (so the terminal signals the whole
 * foreground process group, npm and tsx included), with the push feed running, a keep-alive client and a
 * half-sent request on the admin port. `SOAK=1` adds the reported case: Ctrl-C after a minute of running.
 */
import { holdListener } from '../harness/keepalive.js';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { freePort, which } from '../../src/devstack/process.js';
import { waitUntil } from '../harness/wait.js';

const SOAK = process.env.SOAK === '1';

interface Up {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (of `script`, which is npm's: 130 after a Ctrl-C) once it exited. */
  exited: Promise<number | null>;
  /** Types into the terminal. */
  type(text: string): void;
  adminUrl: string;
  redisPort: number;
  influxPort: number;
}

const running: Up[] = [];
const cleanups: Array<() => void> = [];

/** Every process below `pid`, deepest first. */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const below = (p: number): number[] => rows.filter(([, pp]) => pp === p).flatMap(([c]) => [...below(c), c]);
  return below(pid);
}

afterEach(() => {
  for (const c of cleanups.splice(0)) c();
  // A run that did not exit must not outlive its test: everything below `script`, then `script`.
  for (const up of running.splice(0)) {
    if (up.child.exitCode !== null || up.child.signalCode !== null) continue;
    for (const pid of [...descendants(up.child.pid!), up.child.pid!]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
});

/** `npm run up -- <args>` in a pseudo-terminal, once it says it is running. */
async function startUp(args: string[]): Promise<Up> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(await freePort()), ADMIN_PORT: '0' };
  for (const k of ['REDIS_URL', 'INFLUX_URL', 'INFLUX_TOKEN', 'PUSH_TOKENS', 'SHUTDOWN_GRACE', 'npm_config_loglevel']) delete env[k];
  const child = spawn('script', ['-qfec', `npm run --silent up -- ${args.join(' ')}`, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  // On 'close', not 'exit': the last words may still be on their way when `script` exits.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const up: Up = { child, output: () => out, exited, type: (t) => child.stdin!.write(t), adminUrl: '', redisPort: 0, influxPort: 0 };
  running.push(up);
  await waitUntil(async () => {
    if (child.exitCode !== null) throw new Error(`up exited with ${child.exitCode}:\n${out}`);
    return out.includes('Running; Ctrl-C stops');
  }, 90_000, 'up to finish starting').catch((e: Error) => {
    throw new Error(`${e.message}; output:\n${out}`);
  });
  up.adminUrl = /Prometheus metrics: (\S+)\/metrics/.exec(out)![1]!;
  up.redisPort = Number(/redis-server \(private, AOF on\) at redis:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]);
  up.influxPort = Number(/influxd \(private\) at http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]);
  return up;
}

/** The admin port held open (harness/keepalive.ts) until the test's cleanup. */
function holdAdmin(adminUrl: string): void {
  const held = holdListener(adminUrl);
  cleanups.push(() => held.stop());
}

/** Whether something listens on the loopback port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** The pid of what listens on the loopback port (`ss`), if anything does. */
function listenerPid(port: number): number | undefined {
  const line = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
  const pid = /pid=(\d+)/.exec(line)?.[1];
  return pid === undefined ? undefined : Number(pid);
}

/** Ctrl-C typed, and how long until the run exited (or `limitMs` passed: undefined). */
async function ctrlC(up: Up, limitMs: number): Promise<{ code: number | null; ms: number } | undefined> {
  const t = Date.now();
  up.type('\x03');
  const code = await Promise.race([up.exited, new Promise<'late'>((r) => setTimeout(() => r('late'), limitMs))]);
  return code === 'late' ? undefined : { code, ms: Date.now() - t };
}

const canRun = which('script') !== undefined;

async function stopsCleanly(runMs: number): Promise<void> {
  const up = await startUp(['--feed', '200']);
  holdAdmin(up.adminUrl);
  await new Promise((r) => setTimeout(r, runMs));
  const stopped = await ctrlC(up, 10_000);
  expect(stopped, `still running 10 s after Ctrl-C:\n${up.output().slice(-3_000)}`).toBeDefined();
  // npm exits 130 after a Ctrl-C whatever its script's code: up's last word says how it stopped.
  expect(up.output(), up.output().slice(-3_000)).toMatch(/\nstopped\r?\n/);
  // One Ctrl-C, though npm and tsx pass it on to up as well: one stop, not a stop and an exit at once.
  expect(up.output()).not.toMatch(/while stopping already/);
  expect(await listening(up.redisPort)).toBe(false);
  expect(await listening(up.influxPort)).toBe(false);
}

it.runIf(canRun)('Ctrl-C with the feed pushing and keep-alive clients on the admin port: the service, then the private servers stop, and up exits within seconds', async () => {
  await stopsCleanly(1_500);
}, 120_000);

it.runIf(canRun && SOAK)('the same after a minute of running (SOAK=1)', async () => {
  await stopsCleanly(65_000);
}, 180_000);

it.runIf(canRun)('Ctrl-C with its redis-server gone (SIGKILLed): up still exits within seconds, naming what did not finish', async () => {
  const up = await startUp(['--feed', '200']);
  holdAdmin(up.adminUrl);
  process.kill(listenerPid(up.redisPort)!, 'SIGKILL');
  await new Promise((r) => setTimeout(r, 1_000));
  // The service's bound (SHUTDOWN_GRACE, 5 s in up) and the servers' stop.
  const stopped = await ctrlC(up, 12_000);
  expect(stopped, `still running 12 s after Ctrl-C:\n${up.output().slice(-3_000)}`).toBeDefined();
  expect(up.output()).toMatch(/did not stop within SHUTDOWN_GRACE \(5000 ms\); unfinished: service: workers/);
  expect(await listening(up.influxPort)).toBe(false);
}, 120_000);

it.runIf(canRun)('a second Ctrl-C exits at once, the private servers killed with it', async () => {
  const up = await startUp([]);
  // With its Redis gone, the first Ctrl-C would wait for SHUTDOWN_GRACE.
  process.kill(listenerPid(up.redisPort)!, 'SIGKILL');
  await new Promise((r) => setTimeout(r, 1_000));
  up.type('\x03');
  await waitUntil(async () => up.output().includes('SIGINT: stopping'), 5_000, 'stopping');
  // Past the second in which a signal is taken for the same Ctrl-C relayed (by npm, by tsx).
  await new Promise((r) => setTimeout(r, 1_300));
  const stopped = await ctrlC(up, 3_000);
  expect(stopped, `still running 3 s after the second Ctrl-C:\n${up.output().slice(-3_000)}`).toBeDefined();
  expect(up.output()).toMatch(/SIGINT while stopping already: exiting now; unfinished: service: workers/);
  await waitUntil(async () => !(await listening(up.influxPort)), 2_000, 'influxd gone');
}, 120_000);

it.runIf(canRun && which('setpriv') !== undefined)('up SIGKILLed: its private servers die with it (their parent-death signal)', async () => {
  const up = await startUp([]);
  const servers = [listenerPid(up.redisPort)!, listenerPid(up.influxPort)!];
  // Should they outlive it, not the test as well.
  cleanups.push(() => {
    for (const pid of servers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone, as they should be */
      }
    }
  });
  process.kill(Number(/"pid":(\d+)/.exec(up.output())![1]), 'SIGKILL');
  await waitUntil(async () => !(await listening(up.redisPort)) && !(await listening(up.influxPort)), 3_000, 'the private servers gone');
}, 120_000);
