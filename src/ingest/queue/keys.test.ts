import { describe, expect, it } from 'vitest';
import { CLUSTER_SLOTS, keySlot } from '../../redis/slots.js';
import { bullKey, partitionOf, partitionTag, redisKeys } from './keys.js';

describe('key names', () => {
  it('keeps the names earlier releases wrote with one partition on one Redis', () => {
    const k = redisKeys('telematics-push');
    expect(k.partitions).toEqual(['telematics-push']);
    expect(bullKey(k.partitions[0]!, 'wait')).toBe('bull:telematics-push:wait');
    expect(k.fuelQueue).toBe('telematics-push-fuel');
    expect(k.quarantine).toBe('telematics-push:quarantine');
  });

  it('keeps the quarantine’s byte shares on the stream’s slot, so one script removes an entry and frees its bytes', () => {
    const k = redisKeys('telematics-push', { partitions: 6, cluster: true });
    expect(keySlot(k.quarantineBytes)).toBe(keySlot(k.quarantine));
  });

  it('keeps the command ledger’s keys on one slot (its scripts touch several), and each partition’s latest values on its queue’s', () => {
    const k = redisKeys('q', { partitions: 6, cluster: true });
    const c = k.commands;
    expect(new Set([c.entries, c.live, c.idempotency, c.order, c.immobilised, c.changes].map(keySlot)).size).toBe(1);
    expect(c.entries).toBe('{q:commands}:v1:entries');
    for (let i = 0; i < 6; i++) expect(keySlot(k.fleet(i).latest)).toBe(keySlot(k.partitions[i]!));
  });

  it('tags every queue in cluster mode, so each BullMQ script stays in one slot', () => {
    const k = redisKeys('q', { partitions: 1, cluster: true });
    expect(k.partitions).toEqual([`q{${partitionTag(0, 1)}}`]);
    expect(k.fuelQueue).toBe('{q-fuel}');
    for (const kind of ['wait', 'active', 'id', 'meta', '42']) expect(keySlot(bullKey(k.partitions[0]!, kind))).toBe(keySlot(k.partitions[0]!));
  });
});

describe('vehicle event keys', () => {
  it('names the state and outbox beside each partition, and the webhook queue beside the fuel queue', () => {
    const k = redisKeys('telematics-push');
    expect([k.vehicleState(0), k.vehicleRecords(0, 'KA01', 1), k.eventsOutbox(0), k.eventsWebhookQueue]).toEqual([
      'telematics-push:events:v3:state',
      'telematics-push:events:v3:records:1:KA01',
      'telematics-push:events:outbox',
      'telematics-push-events-webhook',
    ]);
    expect(() => k.eventsOutbox(1)).toThrow(RangeError);
  });

  it('puts a partition’s state and outbox on its queue’s slot, so one script may touch all three', () => {
    for (const layout of [{ partitions: 1, cluster: true }, { partitions: 6, cluster: true }, { partitions: 6, cluster: false }]) {
      const k = redisKeys('q', layout);
      const slots = new Set<number>();
      k.partitions.forEach((queue, i) => {
        const slot = keySlot(bullKey(queue, 'wait'));
        expect(keySlot(k.vehicleState(i)), `${queue} state`).toBe(slot);
        expect(keySlot(k.eventsOutbox(i)), `${queue} outbox`).toBe(slot);
        expect(keySlot(k.vehiclesPending(i)), `${queue} pending vehicles`).toBe(slot);
        // A plate with braces of its own: the partition's tag comes first and decides.
        for (const plate of ['KA01AB1234', '{x}', 'a}b{c}']) {
          expect(keySlot(k.vehicleRecords(i, plate, 0)), `${queue} records of ${plate}`).toBe(slot);
        }
        for (const kind of ['active', 'id', 'meta', 'events', '42']) expect(keySlot(bullKey(queue, kind))).toBe(slot);
        slots.add(slot);
      });
      // Partitions keep their spread: each one's events live with it, not all on one master.
      expect(slots.size).toBe(layout.partitions);
    }
  });

  it('tags the webhook queue in cluster mode, so its BullMQ scripts stay in one slot', () => {
    const k = redisKeys('q', { partitions: 3, cluster: true });
    expect(k.eventsWebhookQueue).toBe('{q-events-webhook}');
    const slot = keySlot(k.eventsWebhookQueue);
    for (const kind of ['wait', 'delayed', 'failed', 'completed', 'id', 'some-event-id']) expect(keySlot(bullKey(k.eventsWebhookQueue, kind))).toBe(slot);
  });
});

describe('slots and partitions', () => {
  it('computes the slot as Redis does, hash tags included', () => {
    // CLUSTER KEYSLOT of redis-server 7.0 (the cluster test asks a live node for many more keys).
    expect(keySlot('somekey')).toBe(11058);
    expect(keySlot('foo{hash_tag}')).toBe(keySlot('hash_tag'));
    expect(keySlot('bar{hash_tag}')).toBe(2515);
    // A `{` with no `}` after it, or an empty first tag, hashes the whole key (the npm package
    // alone answers 15133 for `x{}{y}`, taking a later tag).
    expect(keySlot('a{b')).not.toBe(keySlot('b'));
    expect(keySlot('x{}{y}')).toBe(14166);
    expect(keySlot('x{}{y}')).not.toBe(keySlot('y'));
  });

  it('puts partition i in the middle half of the i-th equal slot range, for any count', () => {
    for (const n of [2, 3, 6, 7, 16, 100]) {
      for (let i = 0; i < n; i++) {
        const slot = keySlot(partitionTag(i, n));
        const width = CLUSTER_SLOTS / n;
        expect(slot).toBeGreaterThanOrEqual(i * width + width / 4);
        expect(slot).toBeLessThan(i * width + (3 * width) / 4);
      }
    }
  });

  it('keeps a vehicle on one partition, and spreads a fleet evenly', () => {
    expect(partitionOf('KA01AB1234', 1)).toBe(0);
    // Fixed forever: a change would split a vehicle's backlog over two queues.
    expect([partitionOf('KA01AB1234', 6), partitionOf('MH12XY9876', 6), partitionOf('', 6)]).toEqual([fnv('KA01AB1234') % 6, fnv('MH12XY9876') % 6, 0x811c9dc5 % 6]);
    const counts = new Array<number>(6).fill(0);
    for (let v = 0; v < 60_000; v++) counts[partitionOf(`TN${String(v).padStart(6, '0')}`, 6)]!++;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(500);
  });
});

/** FNV-1a 32 written out independently, over UTF-16 code units. */
function fnv(s: string): number {
  let h = 2166136261n;
  for (const ch of s) {
    h ^= BigInt(ch.charCodeAt(0));
    h = (h * 16777619n) % 4294967296n;
  }
  return Number(h);
}
