import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, expect, inject, it } from 'vitest';
import { influxQL } from '../../devstack/influxd.js';
import { createLogger } from '../../log/index.js';
import { DeadLetters } from '../deadletter/index.js';
import { redisKeys } from '../queue/keys.js';
import { Quarantine } from '../queue/quarantine.js';
import { InfluxSink } from '../write/influx.js';
import { IsolatingSink } from '../write/isolate.js';
import { Lines } from '../write/lines.js';
import { startDispatch, type OutboxEntry } from './outbox.js';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());
const raw = inject('influxRawUrl');

it('a derived point InfluxDB refuses is kept in the quarantine (stage derive), and lands once replayed after the cause is fixed', async () => {
  const queue = `outbox_${randomUUID().slice(0, 8)}`;
  const db = queue;
  await influxQL(raw, db, `CREATE DATABASE "${db}"`);
  const keys = redisKeys(queue);
  const outbox = keys.eventsOutbox(0);
  const sink = new IsolatingSink(new InfluxSink({ url: inject('influxUrl'), token: inject('influxToken'), org: '', bucket: db, timeoutMs: 5_000 }));
  const T = 1_763_700_000_000;
  // Another week (another shard, where InfluxDB 1.x keeps field types): someone else's writes made
  // vehicle_events.value a string there, so V2's point there conflicts and V1's here does not.
  const T2 = T + 30 * 86_400_000;
  await sink.write(Lines.of([`vehicle_events,vehicleno=OTHER,event=ignition_on value="on" ${T2 - 1}`]));
  const entry = (vehicleno: string, time: number): OutboxEntry => ({ kind: 'event', vehicleno, event: 'ignition_on', time, value: 1, fields: {} });
  await redis.xadd(outbox, '*', 'e', JSON.stringify(entry('V1', T)));
  await redis.xadd(outbox, '*', 'e', JSON.stringify(entry('V2', T2)));
  const quarantine = new Quarantine(redis, keys);
  const dispatch = startDispatch({ redis, outboxes: [outbox], sink, consumer: 'test', log: createLogger('silent'), everyMs: 60_000, quarantine: (e) => quarantine.add(e) });
  try {
    await dispatch.once();
    expect(await influxQL(raw, db, `SELECT value FROM vehicle_events WHERE vehicleno = 'V1'`)).toEqual([{ time: T, value: 1 }]);
    const held = await quarantine.list({ count: 10 });
    expect(held).toEqual([expect.objectContaining({ stage: 'derive', route: outbox, reason: expect.stringMatching(/^InfluxDB refused the derived point: .*type conflict/), raw: JSON.stringify(entry('V2', T2)) })]);
    // The outbox is done with both: nothing stalls behind the refused point.
    expect(await redis.xlen(outbox)).toBe(0);

    // The operator fixes the cause (the conflicting week's shard dropped) and replays.
    const shards = await influxQL<{ id: number; database: string; start_time: string; end_time: string }>(raw, db, 'SHOW SHARDS');
    const shard = shards.find((s) => s.database === db && Date.parse(s.start_time) <= T2 && T2 < Date.parse(s.end_time))!;
    await influxQL(raw, db, `DROP SHARD ${shard.id}`);
    const dl = new DeadLetters(redis, keys, { enqueue: async () => {} });
    expect(await dl.replay(held[0]!.id)).toMatchObject({ ok: true, detail: `derived point queued again in ${outbox}` });
    await dispatch.once();
    expect(await influxQL(raw, db, `SELECT value FROM vehicle_events WHERE vehicleno = 'V2'`)).toEqual([{ time: T2, value: 1 }]);
    expect(await quarantine.list({ count: 10 })).toEqual([]);
    await dl.close();
  } finally {
    await dispatch.stop();
  }
});
