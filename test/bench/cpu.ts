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

/** CPU seconds all processes of the machine spent busy so far (/proc/stat), NaN when unknown. */
export function machineBusySeconds(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / TICK;
  } catch {
    return NaN;
  }
}

export const OTHERS = 'anything else on the machine';

/**
 * CPU seconds each named process spent between `start()` and `stop()`, and what the rest of the
 * machine spent meanwhile (other users of a shared machine skew a run; this shows by how much).
 */
export class CpuMeter {
  private at = new Map<string, number>();
  private machineAt = NaN;
  constructor(private readonly pids: () => Map<string, number | undefined>) {}
  start(): void {
    this.at = new Map([...this.pids()].map(([k, pid]) => [k, cpuSeconds(pid)]));
    this.machineAt = machineBusySeconds();
  }
  stop(): Map<string, number> {
    const out = new Map<string, number>();
    let ours = 0;
    for (const [k, pid] of this.pids()) {
      const before = this.at.get(k);
      const used = before === undefined ? cpuSeconds(pid) : cpuSeconds(pid) - before;
      out.set(k, used);
      if (!Number.isNaN(used)) ours += used;
    }
    out.set(OTHERS, Math.max(0, machineBusySeconds() - this.machineAt - ours));
    return out;
  }
}
