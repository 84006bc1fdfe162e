/**
 * A real release mix (`npm run bench:mix -- <git ref>`): the ref's receiver and worker beside this tree's, built
 * as operators run them, one Redis queue, two feeds (one to each receiver) for 20 s; then every acknowledged
 * record is looked up in InfluxDB, each worker's written, retried and failed job counters are printed, and every
 * vehicle's stored state is read back by this release and checked to keep each double either release stored.
 * `npm run bench:mix -- <git ref> [K=V,...]`: settings for all four processes (e.g. EVENTS=off).
 */
import { startRedis } from '../../src/devstack/redis.js';
import { startInflux } from '../../src/devstack/influxd.js';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { reconcileSettled } from '../harness/reconcile.js';
import { buildForBench, spawnNode } from './procs.js';
import { refTree } from './ab.js';
import { freePort } from '../../src/devstack/process.js';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { committedSections, restore, sectionsLost, writeCommitted } from '../../src/ingest/events/wire.js';
import { nextSliceId } from '../../src/ingest/events/kinds.js';
import { readStateValue } from '../../src/ingest/events/store/commit.js';

const ref = process.argv[2] ?? '34fba96';
const here = buildForBench();
const old = buildForBench(refTree(ref).dir);
const redis = await startRedis({ appendonly: true });
const influx = await startInflux();
await influx.createDatabase('mix');
const settings = Object.fromEntries((process.argv[3] ?? '').split(',').filter((kv) => kv.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const env = { ...settings, REDIS_URL: redis.url, QUEUE_NAME: 'mix-q', INFLUX_URL: influx.url, INFLUX_TOKEN: influx.token, INFLUX_BUCKET: 'mix', PUSH_TOKENS: 'mix-token-0123456789abcdef', LOG_LEVEL: 'warn', ADMIN_PORT: '0', ADMIN_HOST: '127.0.0.1' };
const rxNew = await spawnNode('receiver (this)', here.ingest, ['receiver'], env);
const rxOld = await spawnNode(`receiver (${ref})`, old.ingest, ['receiver'], env);
const ports = [await freePort(), await freePort()];
const wNew = await spawnNode('worker (this)', here.ingest, ['worker'], { ...env, ADMIN_PORT: String(ports[0]) });
const wOld = await spawnNode(`worker (${ref})`, old.ingest, ['worker'], { ...env, ADMIN_PORT: String(ports[1]), LOG_LEVEL: 'info' });
const feed = (url: string, seed: number) => runFeed({ url, token: 'mix-token-0123456789abcdef', mode: 'mixed', bulkSize: 100, durationMs: 20_000, rate: 2_000, concurrency: 8, seed, keep: true, vehicles: 200 });
const [a, b] = await Promise.all([feed(rxNew.url, 1), feed(rxOld.url, 2)]);
const acked = [...a.records.acknowledged, ...b.records.acknowledged];
console.log(`acknowledged: this receiver ${a.acknowledged}, ${ref} receiver ${b.acknowledged}; failed deliveries ${a.failed + b.failed}, unconfirmed ${a.unconfirmed + b.unconfirmed}`);
const r = await reconcileSettled(influx.rawUrl, 'mix', acked, 60_000);
console.log(`InfluxDB: expected ${r.expected}, missing ${r.missing.length}, wrong ${r.wrong.length}, extra ${r.extra}`);
for (const [j, w] of [wNew, wOld].entries()) {
  const text = await (await fetch(`http://127.0.0.1:${ports[j]}/metrics`)).text();
  const pick = (re: RegExp) => text.split('\n').filter((l) => re.test(l) && !l.startsWith('#')).join('; ');
  console.log(`${w.name}: ${pick(/^telematics_jobs_(failed|deferred)_total|^telematics_job_retries_total|^telematics_points_written_total\{measurement="(gps|can)"|^telematics_vehicle_events_total\{event="ignition_on"/)}`);
  const errs = w.output().split("\n").filter((l) => /"level":(40|50)|fail/i.test(l));
  console.log(`${w.name}: ${errs.length} warnings/errors logged${errs.length ? `, e.g. ${errs[0]!.slice(0, 300)}` : ''}`);
}
for (const p of [rxNew, rxOld, wNew, wOld]) await p.stop();
// Every vehicle's state as the two workers left it, read by this release and written back: each double either release stored kept.
const client = new Redis(redis.url);
const states = await client.hgetallBuffer(redisKeys('mix-q').vehicleState(0));
let exact = 0;
let byRef = 0;
const lost: string[] = [];
for (const [vehicleno, b] of Object.entries(states)) {
  const stored = readStateValue(b).committed;
  if (!committedSections(stored).has(`slice ${nextSliceId() - 1}`)) byRef++;
  const missing = sectionsLost(stored, writeCommitted(restore(stored, [])));
  if (missing.length === 0) exact++;
  else lost.push(`${vehicleno}: ${missing.join(', ')}`);
}
client.disconnect();
console.log(`vehicle states: ${Object.keys(states).length}, read back exactly ${exact} (last written by ${ref}: ${byRef}); not exactly: ${lost.length}${lost.length ? `, e.g. ${lost[0]}` : ''}`);
await influx.stop();
await redis.stop();
