/**
 * What vehicle events cost Redis and the worker per record, around the commit alone: the bench's bulk
 * jobs (1000 mixed records of 500 vehicles) derived and committed by `EventsStore` against a private
 * redis-server (AOF `always`; `AOF=no` without), as a worker does after each job's points are written.
 * `npm run bench:commit -- [jobs] [rounds] [jobs in flight]`: per round, core-µs per record of Redis
 * (INFO cpu) and of this process (each round's inputs are read from its jobs' rows before the timing);
 * the jobs in flight together are derived as one, as a worker batches them (worker/batches.ts).
 */
import { Redis } from 'ioredis';
import { startRedis } from '../../src/devstack/redis.js';
import { validateRecord } from '../../src/ingest/validate/record.js';
import { readRows, rowsOf } from '../../src/ingest/flatten/points.js';
import { DEFAULT_DERIVE_OPTIONS, DERIVE_PICK } from '../../src/ingest/events/derive.js';
import { EventsStore } from '../../src/ingest/events/store/eventsStore.js';
import { StateUpdateBatches } from '../../src/ingest/worker/batches.js';
import { BenchData } from './data.js';
import { FLATTEN } from './options.js';

const JOBS = Number(process.argv[2] ?? 40);
const ROUNDS = Number(process.argv[3] ?? 5);
/** Jobs in flight at once, as a worker's concurrency has them when their points are confirmed together. */
const IN_FLIGHT = Number(process.argv[4] ?? 1);
const SIZE = 1_000;
const data = new BenchData(500);
const now = Date.now();
const rowsOfJob = (p: number) => {
  const valid = Array.from({ length: SIZE }, (_, i) => validateRecord(data.mixed(p * SIZE + i), now)).flatMap((v) => (v.ok ? [v.record] : []));
  const rows = rowsOf(valid, FLATTEN);
  return Buffer.from(rows.buf.subarray(0, rows.len));
};
const jobs = Array.from({ length: JOBS * ROUNDS }, (_, p) => rowsOfJob(p));

const server = await startRedis({ appendonly: process.env.AOF !== 'no' });
const redis = new Redis(server.url);
const cpu = async () => {
  const text = await redis.info('cpu');
  const get = (k: string) => Number(new RegExp(`^${k}:(\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return get('used_cpu_user') + get('used_cpu_sys');
};
const keys = { state: '{p0}:st', outbox: '{p0}:ob', pending: '{p0}:pd', corrections: '{p0}:co', records: (v: string, stream: number) => `{p0}:r:${stream}:${v}`, late: (v: string) => `{p0}:l:${v}` };
const events = new EventsStore(redis, [keys], DEFAULT_DERIVE_OPTIONS);
// As a worker hands jobs on (worker/batches.ts): the jobs in flight together are derived as one.
const batches = new StateUpdateBatches((partition, writtenRecords) => events.record(partition, writtenRecords, now), { lingerMs: 0, maxJobs: 64, maxRecords: 10_000 });
let job = 0;
// PROFILE=<file>: a CPU profile of the rounds alone (node:inspector), for where `record` spends.
const { Session } = await import('node:inspector/promises');
const session = process.env.PROFILE ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
for (let r = 0; r < ROUNDS; r++) {
  const before = await cpu();
  const round = Array.from({ length: JOBS }, (_, j) => readRows(jobs[job + j]!, DERIVE_PICK).writtenRecords);
  const t = process.cpuUsage();
  for (let j = 0; j < JOBS; j += IN_FLIGHT, job += IN_FLIGHT) {
    await Promise.all(round.slice(j, j + IN_FLIGHT).map((writtenRecords) => batches.add(0, writtenRecords)));
  }
  const used = process.cpuUsage(t);
  const own = used.user + used.system;
  const after = await cpu();
  const n = JOBS * SIZE;
  console.log(`round ${r + 1}: redis ${(((after - before) * 1e6) / n).toFixed(2)} core-µs/record, worker ${(own / n).toFixed(2)}`);
}
if (session) {
  const { profile } = await session.post('Profiler.stop');
  (await import('node:fs')).writeFileSync(process.env.PROFILE!, JSON.stringify(profile));
}
redis.disconnect();
await server.stop();
