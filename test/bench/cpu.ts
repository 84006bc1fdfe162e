import { readdirSync, readFileSync } from 'node:fs';

/** CPU time (user + system) of processes, from /proc, in seconds. Linux only; NaN elsewhere. */
const TICK = 100; // USER_HZ on Linux

export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICK;
  } catch {
    return NaN;
  }
}

/** Children of `parent` whose command name is `comm` (redis-server and influxd run as our children). */
export function childPids(parent: number, comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && name.startsWith(comm.slice(0, 15))) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** CPU seconds each named process spent between `start()` and `stop()`. */
export class CpuMeter {
  private at = new Map<string, number>();
  constructor(private readonly pids: () => Map<string, number | undefined>) {}
  start(): void {
    this.at = new Map([...this.pids()].map(([k, pid]) => [k, cpuSeconds(pid)]));
  }
  stop(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, pid] of this.pids()) {
      const before = this.at.get(k);
      out.set(k, before === undefined ? cpuSeconds(pid) : cpuSeconds(pid) - before);
    }
    return out;
  }
}
