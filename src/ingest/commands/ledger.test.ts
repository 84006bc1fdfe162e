import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pickedValues, type WrittenRecord } from '../../telemetry/record.js';
import { WIRE_ID } from '../../telemetry/fields.js';
import { SIGNED_POSITIVE_CHARGING } from '../../telemetry/current.js';
import { DERIVE_FIELDS, DERIVE_PICK } from '../events/inputs.js';
import { commandKeys, fleetKeys } from '../queue/keys.js';
import { IMMOBILISATIONS_KEPT, parseImmobilisations } from './immobilisations.js';
import { CommandLedger } from './ledger.js';
import { COMMANDS_PICK, LatestValuesStore } from './latest.js';
import type { CommandRequest } from './model.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: 1 });
});
afterAll(() => redis?.disconnect());

const T = Date.UTC(2026, 0, 5, 8);
const ops = { kind: 'credential' as const, name: 'ops' };
const ask = (over: Partial<CommandRequest> = {}): CommandRequest => ({ vehicleno: 'KA01AB0001', op: 'immobilize', type: 'movement', immediate: false, reason: 'overdue', ...over });
const ledger = (keep?: number) => new CommandLedger(redis, commandKeys(`q-${randomUUID()}`), keep);

describe('the command ledger (Redis)', () => {
  it('one claim wins: of many workers moving a waiting command into sending at once, one does', async () => {
    const l = ledger();
    const r = await l.request(ask(), ops, {}, T, T + 60_000);
    if (r.outcome !== 'created') throw new Error(r.outcome);
    await l.move(r.command.id, ['requested'], 'waiting', T + 1, 'until safe: moving');
    const claims = await Promise.all(Array.from({ length: 20 }, () => l.move(r.command.id, ['requested', 'waiting'], 'sending', T + 2)));
    expect(claims.filter((c) => c !== undefined)).toHaveLength(1);
    // Never back: a move from a state it is not in changes nothing.
    expect(await l.move(r.command.id, ['waiting'], 'expired', T + 3)).toBeUndefined();
    const sent = await l.move(r.command.id, ['sending'], 'sent', T + 4, '', { sentAt: T + 4, answer: 'ok', confirmBy: T + 10 });
    expect(sent).toMatchObject({ state: 'sent', sentAt: T + 4, answer: 'ok', confirmBy: T + 10 });
    expect(sent!.history.map((h) => [h.state, h.at, h.note])).toEqual([
      ['requested', T, undefined],
      ['waiting', T + 1, 'until safe: moving'],
      ['sending', T + 2, undefined],
      ['sent', T + 4, undefined],
    ]);
    expect((await l.inFlight()).map((c) => c.id)).toEqual([r.command.id]);
    await l.move(r.command.id, ['sent'], 'confirmed', T + 5, 'standing', {}, { op: 'immobilize', type: 'movement' });
    // Ended: its vehicle's place is free, and it is under immobilisation from the confirmation.
    expect(await l.inFlight()).toEqual([]);
    expect((await l.immobilisations()).current()).toEqual([{ vehicleno: 'KA01AB0001', id: r.command.id, type: 'movement', from: T + 5, to: Infinity }]);
    // Every change is in the stream, to be told.
    const changes = await redis.xrange(l.keys.changes, '-', '+');
    expect(changes.map(([, f]) => f[3])).toEqual(['requested', 'waiting', 'sending', 'sent', 'confirmed']);
  });

  it('the same idempotency key and request is the same command; another request under it is a conflict', async () => {
    const l = ledger();
    const a = await l.request(ask({ idempotencyKey: 'k1' }), ops, {}, T, T + 60_000);
    const b = await l.request(ask({ idempotencyKey: 'k1' }), ops, {}, T + 5, T + 60_005);
    const c = await l.request(ask({ idempotencyKey: 'k1', type: 'charge' }), ops, {}, T + 6, T + 60_006);
    expect(a.outcome).toBe('created');
    expect(b).toMatchObject({ outcome: 'same', command: { id: a.outcome === 'created' ? a.command.id : '' } });
    expect(c).toMatchObject({ outcome: 'conflict', id: a.outcome === 'created' ? a.command.id : '' });
    // Another author under the same key is another request, not a retry.
    expect((await l.request(ask({ idempotencyKey: 'k1' }), { kind: 'credential', name: 'dispatch' }, {}, T + 7, T + 60_007)).outcome).toBe('conflict');
    expect(await l.list({ limit: 10 })).toHaveLength(1);
  });

  it('a new command replaces the vehicle’s one in flight; one being sent makes it wait (busy)', async () => {
    const l = ledger();
    const first = await l.request(ask(), ops, {}, T, T + 60_000);
    const second = await l.request(ask({ op: 'mobilize' }), ops, {}, T + 1, T + 60_001);
    if (first.outcome !== 'created' || second.outcome !== 'created') throw new Error('not created');
    expect(second.command.replaces).toBe(first.command.id);
    expect(second.replaced).toMatchObject({ id: first.command.id, state: 'cancelled', replacedBy: second.command.id });
    expect((await l.get(first.command.id))?.history.at(-1)).toEqual({ state: 'cancelled', at: T + 1, note: `replaced by ${second.command.id}` });
    await l.move(second.command.id, ['requested'], 'sending', T + 2);
    expect(await l.request(ask(), ops, {}, T + 3, T + 60_003)).toEqual({ outcome: 'busy', id: second.command.id });
    // Another vehicle is not held up.
    expect((await l.request(ask({ vehicleno: 'KA01AB0002' }), ops, {}, T + 3, T + 60_003)).outcome).toBe('created');
  });

  it('keeps each vehicle’s immobilisations as intervals: set at a confirmation, ended by a mobilise’s claim or the next one, the last IMMOBILISATIONS_KEPT; each change told', async () => {
    const l = ledger();
    const told: Array<[string, number]> = [];
    l.onImmobilisation = async (v, at) => void told.push([v, at]);
    // Through the whole ledger: an immobilise confirmed, then a mobilise claimed for sending.
    const confirmAt = async (type: 'movement' | 'discharge', at: number) => {
      const r = await l.request(ask({ type }), ops, {}, at - 3, at + 60_000);
      if (r.outcome !== 'created') throw new Error(r.outcome);
      await l.move(r.command.id, ['requested'], 'sending', at - 2, '', {}, r.command);
      await l.move(r.command.id, ['sending'], 'sent', at - 1, '', {}, r.command);
      await l.move(r.command.id, ['sent'], 'confirmed', at, 'standing', {}, r.command);
      return r.command.id;
    };
    const mobiliseAt = async (at: number) => {
      const r = await l.request(ask({ op: 'mobilize' }), ops, {}, at - 1, at + 60_000);
      if (r.outcome !== 'created') throw new Error(r.outcome);
      await l.move(r.command.id, ['requested'], 'sending', at, '', {}, r.command);
      await l.move(r.command.id, ['sending'], 'sent', at + 1, '', {}, r.command);
    };
    const a = await confirmAt('movement', T + 10);
    await mobiliseAt(T + 20);
    const b = await confirmAt('discharge', T + 30);
    // A second one confirmed over the first ends it there.
    const c = await confirmAt('movement', T + 40);
    const ims = await l.immobilisations();
    expect(ims.at('KA01AB0001', T + 9)).toBeUndefined();
    expect(ims.at('KA01AB0001', T + 10)).toEqual({ id: a, type: 'movement', from: T + 10, to: T + 20 });
    expect(ims.at('KA01AB0001', T + 20)).toBeUndefined();
    expect(ims.at('KA01AB0001', T + 39)).toEqual({ id: b, type: 'discharge', from: T + 30, to: T + 40 });
    expect(ims.at('KA01AB0001', T + 10 ** 9)).toEqual({ id: c, type: 'movement', from: T + 40, to: Infinity });
    expect(ims.at('KA01AB0002', T + 40)).toBeUndefined();
    expect(told).toEqual([['KA01AB0001', T + 10], ['KA01AB0001', T + 20], ['KA01AB0001', T + 30], ['KA01AB0001', T + 40]]);
    // Bounded: the oldest ended ones go.
    for (let k = 0; k < IMMOBILISATIONS_KEPT + 2; k++) {
      await mobiliseAt(T + 100 + 20 * k);
      await confirmAt('movement', T + 110 + 20 * k);
    }
    const stored = parseImmobilisations((await redis.hget(l.keys.immobilised, 'KA01AB0001'))!);
    expect(Array.isArray(stored) && stored.length).toBe(IMMOBILISATIONS_KEPT + 1);
    // What the hash holds is checked as strictly as a push.
    expect(parseImmobilisations('{"id":"x","type":"movement","since":"soon"}')).toBe('the current one is not {id, type, since}');
    expect(parseImmobilisations('{"past":[{"id":"x","type":"movement","from":5,"to":2}]}')).toBe('an ended one is not {id, type, from, to}');
    expect(parseImmobilisations('{"past":{}}')).toEqual([]);
  });

  it('keeps COMMANDS_KEEP commands, dropping the oldest ended ones with their keys, never one in flight', async () => {
    const l = ledger(100);
    const ids: string[] = [];
    for (let i = 0; i < 105; i++) {
      const r = await l.request(ask({ vehicleno: `V${i}`, idempotencyKey: `k${i}` }), ops, {}, T + i, T + i + 60_000);
      if (r.outcome !== 'created') throw new Error(r.outcome);
      ids.push(r.command.id);
      // All but the first ended.
      if (i > 0) await l.move(r.command.id, ['requested'], 'expired', T + i);
    }
    expect(await redis.zcard(l.keys.order)).toBeLessThanOrEqual(101);
    expect(await l.get(ids[0]!)).toBeDefined();
    expect(await l.get(ids[1]!)).toBeUndefined();
    expect(await redis.hexists(l.keys.idempotency, 'k1')).toBe(0);
    expect(await l.get(ids[104]!)).toBeDefined();
  });
});

describe('latest values (Redis)', () => {
  const rules = { motionSpeedKmh: 3, currentSign: SIGNED_POSITIVE_CHARGING, chargingMinCurrentA: 0.5 };
  const written = (type: string, time: number, fields: Record<string, number>): WrittenRecord => {
    const values = pickedValues(COMMANDS_PICK, 1);
    COMMANDS_PICK.names.forEach((n, i) => {
      if (n in fields) values[i] = fields[n]!;
    });
    return { vehicleno: 'KA01AB0001', type, time, values, at: 0 };
  };

  it('keeps each field’s newest by record time, whatever order batches come in, and when it was last active or charging', async () => {
    const store = new LatestValuesStore(redis, [fleetKeys(`q-${randomUUID()}`)], rules);
    await store.record(0, [written('gps', T + 10_000, { lat: 1, lng: 2, speed: 0, ignstatus: 0 }), written('can', T + 10_000, { soc: 50, current: -0.2, allow_discharging: 1 })]);
    // An older batch, late: a moving fix and a charging reading, which change no newest value but are remembered as activity.
    await store.record(0, [written('gps', T, { lat: 0, lng: 0, speed: 40, ignstatus: 1 }), written('can', T, { soc: 49, current: 30, load_status: 2, allow_charging: 1 })]);
    const l = await store.of('KA01AB0001');
    expect(l?.fields).toMatchObject({ lat: [T + 10_000, 1], speed: [T + 10_000, 0], ignstatus: [T + 10_000, 0], soc: [T + 10_000, 50], current: [T + 10_000, -0.2], allow_discharging: [T + 10_000, 1], allow_charging: [T, 1], load_status: [T, 2] });
    expect(l?.active).toEqual([T, 0, 0, 40, 1]);
    expect(l?.charging).toBe(T);
    expect(l?.discharging).toBeUndefined();
    expect(await store.of('KA01AB0009')).toBeUndefined();
  });

  it('costs about 500 bytes of Redis a vehicle with every value known (docs/operating.md, COMMANDS)', async () => {
    const k = fleetKeys(`q-${randomUUID()}`);
    const store = new LatestValuesStore(redis, [k], rules);
    const t = Date.now();
    await store.record(0, [
      written('gps', t, { lat: 12.971234, lng: 77.594567, speed: 38.5, ignstatus: 1 }),
      written('can', t, { soc: 81.5, current: -12.4, load_status: 1, allow_charging: 1, allow_discharging: 1 }),
      written('can', t - 60_000, { current: 30, load_status: 2 }),
    ]);
    const bytes = (await redis.hget(k.latest, 'KA01AB0001'))!.length + 'KA01AB0001'.length;
    expect(bytes).toBeGreaterThan(300);
    expect(bytes).toBeLessThan(600);
  });

  it('reads the events’ fields in the events’ slots (a worker’s pick serves both)', () => {
    expect(COMMANDS_PICK.names.slice(0, DERIVE_FIELDS.length)).toEqual([...DERIVE_FIELDS]);
    for (const name of DERIVE_FIELDS) expect(COMMANDS_PICK.slots[WIRE_ID.get(name)!]).toBe(DERIVE_PICK.slots[WIRE_ID.get(name)!]);
    expect(COMMANDS_PICK.names).toContain('allow_charging');
  });
});
