/**
 * A Redis Cluster master SIGKILLed while a retrying sender pushes over partitioned queues: with
 * REDIS_WAIT_REPLICAS=1 every acknowledged record was on that master's replica before its 2xx, the
 * cluster promotes the replica, the old master comes back as its replica, and every acknowledged
 * record lands, reconciled as the fault tests do.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { runFeed } from '../../src/upstream/emulator/feed.js';
import { expectFeedLandedThroughFault } from '../harness/reconcile.js';
import { startRedisCluster, type LocalCluster } from '../harness/redisCluster.js';
import { startTestService, TEST_TOKEN, waitUntil, type TestService } from '../harness/service.js';

let cluster: LocalCluster;
let svc: TestService;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1_000 });
  svc = await startTestService({ REDIS_CLUSTER_NODES: cluster.seeds.join(','), QUEUE_PARTITIONS: '3', REDIS_WAIT_REPLICAS: '1', ENQUEUE_TIMEOUT: '2s', RETRY_AFTER: '1s' });
}, 60_000);
afterAll(async () => {
  await svc?.close();
  await cluster?.stop();
});

it('loses no acknowledged record when a master is killed under load', async () => {
  const masters = await cluster.masterPorts();
  // The master of partition 0's queue: killing it stops a third of the pushes' records until its replica takes over.
  const queue = redisKeys(svc.cfg.QUEUE_NAME, { partitions: 3, cluster: true }).partitions[0]!;
  const slot = await cluster.onNode(masters[0]!, async (n) => (await n.cluster('KEYSLOT', queue)) as number);
  const owner = await cluster.onNode(masters[0]!, async (n) => {
    const ranges = await n.cluster('SLOTS');
    return ranges.find(([from, to]) => slot >= from && slot <= to)![2]![1];
  });

  const feedDone = runFeed({ url: svc.url, token: TEST_TOKEN, mode: 'mixed', rate: 300, durationMs: 8_000, bulkSize: 50, vehicles: 12, seed: 5, maxAttempts: 40, maxBackoffMs: 1_000, maxRetryAfterMs: 1_000, keep: true });
  await new Promise((r) => setTimeout(r, 2_000));
  await cluster.kill(owner);
  await waitUntil(async () => !(await cluster.masterPorts()).includes(owner) && (await cluster.masterPorts()).length === 3, 20_000, 'the cluster to promote the replica');
  // As Kubernetes restarts a StatefulSet's pod: the old master rejoins as the new master's replica, so
  // that WAIT can be satisfied again; until then that partition's pushes are refused, not acknowledged.
  await cluster.restart(owner);
  const feed = await feedDone;
  // The sender met the failover and retried through it; every acknowledged record landed.
  await expectFeedLandedThroughFault(inject('influxRawUrl'), svc.cfg.INFLUX_BUCKET, feed, 1_500);
}, 90_000);
