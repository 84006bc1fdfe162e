import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

/**
 * The benchmark's short form, as CI runs it: every phase with tiny counts, on its own private
 * redis-server and influxd. No timing is asserted (a shared CI machine says nothing about speed);
 * only that the table is produced and that every record acknowledged reached InfluxDB.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `npm run bench -- <args>`: its exit code and what it printed. */
async function bench(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/run.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, BENCH_CPU_PROF: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const guard = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(guard);
  return { code, out, err };
}

it('npm run bench -- --smoke prints the table and every record reaches InfluxDB', async () => {
  const { code, out, err } = await bench(['--smoke'], 110_000);
  expect(code, `${out}\n${err}`).toBe(0);

  for (const row of ['| 1 |', '| 2a |', '| 2b |', '| 3 |', '| 4a |', '| 4b |', '| 5a |', '| 5b |', '| 5c |']) expect(out).toContain(row);
  expect(out).toMatch(/every record reached InfluxDB: yes \((\d+) of \1 acknowledged, \1 sent\)/);
  const result = JSON.parse(/^BENCH_RESULT (.*)$/m.exec(out)![1]!) as { everyRecord: boolean; delivered: number; total: number };
  expect(result.everyRecord).toBe(true);
  expect(result.total).toBe(result.delivered);
  expect(result.delivered).toBeGreaterThan(1_000);
}, 120_000);

it('npm run bench -- --ab <ref> alternates the ref build with this one, round by round, and every record of both reaches InfluxDB', async () => {
  // HEAD: the same code built twice, which is all a test can know the ref to be.
  const { code, out, err } = await bench(['--smoke', '--ab', 'HEAD', '--only', 'accept,realtime', '--accept-rounds', '2', '--realtime-rounds', '2'], 170_000);
  expect(code, `${out}\n${err}`).toBe(0);
  for (const round of [1, 2]) {
    expect(out).toContain(`accept: ref's receiver, round ${round}`);
    expect(out).toContain(`realtime (ref), round ${round}`);
  }
  expect(out).toContain('| 3 A/B |');
  expect(out).toContain('| 2b A/B |');
  const result = JSON.parse(/^BENCH_RESULT (.*)$/m.exec(out)![1]!) as {
    everyRecord: boolean;
    delivered: number;
    total: number;
    acceptRounds: Array<{ bare: number; receiver: number; ref?: number }>;
    rtRounds: Array<{ bare: number; receiver: number; ref: number }>;
  };
  // Every round measured all three: the bare endpoint, this build and the ref's.
  expect(result.acceptRounds.map((r) => [r.bare > 0, r.receiver > 0, (r.ref ?? 0) > 0])).toEqual([[true, true, true], [true, true, true]]);
  expect(result.rtRounds.map((r) => [r.bare > 0, r.receiver > 0, r.ref > 0])).toEqual([[true, true, true], [true, true, true]]);
  expect(result.everyRecord).toBe(true);
  expect(result.total).toBe(result.delivered);
}, 180_000);

it('npm run bench -- --store-rounds --client wrk --precision full: store rounds on fresh stores, wrk as the accept client, and every record stored', async () => {
  const { code, out, err } = await bench(['--smoke', '--store-rounds', '2', '--client', 'wrk', '--precision', 'full', '--only', 'accept'], 110_000);
  expect(code, `${out}\n${err}`).toBe(0);
  expect(out).toContain('values at full precision');
  expect(out).toMatch(/\| 3 \| .*\(wrk\)/);
  for (const row of ['| 2a rounds |', '| 6b rounds |']) expect(out).toContain(row);
  for (const round of [1, 2]) expect(err).toContain(`store round ${round} (`);
  const result = JSON.parse(/^BENCH_RESULT (.*)$/m.exec(out)![1]!) as {
    everyRecord: boolean;
    delivered: number;
    total: number;
    storeRounds: Array<{ ceiling: number; bulk: number; serviceUs: number; influxdUs: number }>;
  };
  expect(result.storeRounds.map((r) => [r.ceiling > 0, r.bulk > 0, r.serviceUs > 0, r.influxdUs > 0])).toEqual([
    [true, true, true, true],
    [true, true, true, true],
  ]);
  // The accept rounds' records and both stores' bulk records, summed over the stores replaced.
  expect(result.everyRecord).toBe(true);
  expect(result.total).toBeGreaterThanOrEqual(result.delivered);
  expect(result.delivered).toBeGreaterThan(8_000);
}, 120_000);
