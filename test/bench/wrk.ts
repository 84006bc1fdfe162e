/**
 * wrk as the load client of a timed realtime run (`npm run bench -- --client wrk`): a client written
 * in C, as a sender's own HTTP client is on a machine of its own, costs the server's machine far less
 * CPU than the bench's Node client, and the bare endpoint's rate depends on that (docs/benchmarks/history.md,
 * round 7). Run by the load generator (load.ts), which writes the bodies and keeps the record indices.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./wrk.lua', import.meta.url));

/** wrk runs whole seconds: the duration it is given for `ms`. */
export const wrkSeconds = (ms: number): number => Math.max(1, Math.round(ms / 1000));

/** Bodies to write for a run of `ms`: more than wrk sends a second against a bare endpoint here (about 28k). */
export const wrkBodies = (ms: number): number => 60_000 * wrkSeconds(ms);

export interface WrkRun {
  /** Requests answered, and those answered other than 2xx. */
  requests: number;
  non2xx: number;
  /** Requests sent, answered or not: the bodies [0, sent) left wrk, the last ones possibly unanswered when it stopped. */
  sent: number;
  durationMs: number;
  /** Connect, read, write and timeout errors. */
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * `wrk -t1 -c<connections> -d<duration>`: one thread, so the bodies are sent once each in file order.
 * `cpu`: the core(s) wrk runs on (taskset), e.g. the one influxd has while no worker writes.
 */
export async function runWrk(o: { url: string; path: string; headers: Record<string, string>; bodies: readonly string[]; connections: number; durationMs: number; cpu?: string }): Promise<WrkRun> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const file = join(dir, 'bodies.jsonl');
    writeFileSync(file, `${o.bodies.join('\n')}\n`);
    const auth = Object.entries(o.headers).find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
    const args = ['-t1', `-c${o.connections}`, `-d${wrkSeconds(o.durationMs)}s`, '--timeout', '10s', '-s', SCRIPT, `${o.url}${o.path}`, '--', file, auth];
    const [cmd, argv] = o.cpu === undefined ? ['wrk', args] : ['taskset', ['-c', o.cpu, 'wrk', ...args]];
    const out = await new Promise<string>((resolve, reject) =>
      execFile(cmd, argv, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(`wrk failed: ${err.message} ${stderr}`)) : resolve(stdout))),
    );
    const line = /^WRK_RESULT (.*)$/m.exec(out)?.[1];
    if (line === undefined) throw new Error(`wrk printed no result: ${out}`);
    const r = JSON.parse(line) as { requests: number; non2xx: number; sent: number; durationUs: number; connect: number; read: number; write: number; timeout: number; p50Us: number; p99Us: number };
    if (r.sent > o.bodies.length) throw new Error(`wrk sent ${r.sent} requests but had ${o.bodies.length} bodies: records repeated; give it more`);
    return {
      requests: r.requests,
      non2xx: r.non2xx,
      sent: r.sent,
      durationMs: r.durationUs / 1000,
      socketErrors: r.connect + r.read + r.write + r.timeout,
      p50Ms: r.p50Us / 1000,
      p99Ms: r.p99Us / 1000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
