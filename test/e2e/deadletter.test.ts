import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { influxQuery } from '../harness/influx.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';
import { T0 } from '../harness/time.js';

const run = promisify(execFile);
let svc: TestService;
let queue: Queue;

/** The CLI as an operator runs it; resolves with its exit code and output. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cmd/deadletter.ts', ...args], {
      env: { ...process.env, REDIS_URL: svc.cfg.REDIS_URL, QUEUE_NAME: svc.cfg.QUEUE_NAME },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

beforeAll(async () => {
  // The bucket does not exist yet: writes fail until the operator creates it, past the retry span.
  svc = await startTestService({ RETRY_SPAN: '1s', RETRY_BASE_DELAY: '100ms', RETRY_MAX_DELAY: '200ms' }, { createDatabase: false });
  queue = new Queue(svc.cfg.QUEUE_NAME, { connection: { url: svc.cfg.REDIS_URL } });
});
afterAll(async () => {
  await queue?.close();
  await svc?.close();
});

it('lists, shows, replays (idempotently) and purges failed jobs and quarantined records', async () => {
  const good = [1, 2, 3].map((i) => ({ vehicleno: 'DL-1', type: 'can', data: { time: T0 + i, soc: 10 * i } }));
  const bad = { vehicleno: 'DL-1', type: 'gps', data: { lat: 123, lng: 0, alti: 0, speed: 0, ignstatus: 0, time: T0 } };
  expect((await svc.post('/push/bulk', { bulkData: [...good, bad] })).status).toBe(202);
  await waitUntil(async () => (await queue.getFailedCount()) === 1, 15_000, 'the job to fail for good');

  const listed = await cli('list', '--json');
  expect(listed.code).toBe(0);
  const items = JSON.parse(listed.stdout) as Array<{ id: string; source: string; stage: string; reason: string; records: number }>;
  const q = items.find((i) => i.source === 'quarantine')!;
  const job = items.find((i) => i.source === 'failed-job')!;
  expect(q).toMatchObject({ stage: 'receive', reason: 'data.lat: must be between -90 and 90', records: 1 });
  expect(job).toMatchObject({ stage: 'job', records: 3 });
  expect(job.reason).toMatch(/^retry span of 1000 ms exhausted; last error: InfluxDB answered 404: database not found/);

  // Filters and totals, as an operator narrows the list down.
  const ids = async (...args: string[]) => (JSON.parse((await cli('list', '--json', ...args)).stdout) as Array<{ id: string }>).map((i) => i.id);
  expect(await ids('--stage', 'receive')).toEqual([q.id]);
  expect(await ids('--stage', 'job')).toEqual([job.id]);
  expect((await ids('--vehicle', 'DL-1')).sort()).toEqual([q.id, job.id].sort());
  expect(await ids('--vehicle', 'NOT-THERE')).toEqual([]);
  expect(await ids('--delivery', (items.find((i) => i.id === q.id) as { deliveryId?: string }).deliveryId!)).toEqual([q.id]);
  expect(await ids('--since', 'now')).toEqual([]);
  expect((await cli('list')).stdout).toMatch(/\n2 item\(s\): 1 quarantined \(receive 1, write 0\), 1 failed job\(s\)\n$/);
  expect(await cli('list', '--stage', 'nope')).toMatchObject({ code: 2 });

  const shown = await cli('show', job.id, '--json');
  expect(JSON.parse(shown.stdout).records).toEqual(good.map((g) => ({ vehicleno: 'DL-1', type: 'can', time: g.data.time, fields: { soc: g.data.soc } })));

  // The operator fixes the cause, then replays: the records land once, however often replayed.
  await influxQuery(svc.cfg.INFLUX_BUCKET, `CREATE DATABASE "${svc.cfg.INFLUX_BUCKET}"`);
  const first = await cli('replay', job.id);
  expect(first).toMatchObject({ code: 0, stdout: `replayed  ${job.id}  job queued again with 3 record(s)\n` });
  expect(await svc.waitForRows('SELECT soc FROM can', 3)).toEqual(good.map((g) => ({ time: g.data.time, soc: g.data.soc })));
  const again = await cli('replay', job.id);
  expect(again).toMatchObject({ code: 0, stdout: `replayed  ${job.id}  no such failed job (already replayed or purged)\n` });
  expect(await svc.query('SELECT soc FROM can')).toHaveLength(3);

  // A record that is still invalid stays where it is.
  const kept = await cli('replay', q.id);
  expect(kept).toMatchObject({ code: 1, stdout: `kept      ${q.id}  still invalid: data.lat: must be between -90 and 90\n` });
  expect((await cli('purge', q.id)).code).toBe(2);
  expect(await cli('purge', q.id, '--yes')).toMatchObject({ code: 0, stdout: `purged     ${q.id}\n` });
  expect(await cli('list')).toMatchObject({ code: 0, stdout: 'nothing in the dead letter\n' });
});

it('never falls back to a Redis it was not given, and says what is wrong in one line', async () => {
  const bare = async (env: Record<string, string>) =>
    run(process.execPath, ['--import', 'tsx', 'src/cmd/deadletter.ts', 'list'], { env: { PATH: process.env.PATH ?? '', ...env } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
  expect(await bare({})).toEqual({ code: 2, stderr: 'error: REDIS_URL: set it to the Redis the service uses; this tool does not assume one\n' });
  const closed = await bare({ REDIS_URL: 'redis://operator:s3cret@127.0.0.1:1' });
  expect(closed).toEqual({ code: 3, stderr: 'error: Redis: cannot reach redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n' });
});
