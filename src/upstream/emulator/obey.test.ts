/**
 * The emulated fleet obeys the commands the emulator is sent: an immobilised vehicle stands, its ignition
 * off, and stops charging or discharging as the type says; a mobilise restores its plan. What the feed
 * pushes is `gpsAt` / `canStateAt`, so these are the records a receiver gets.
 */
import { describe, expect, it } from 'vitest';
import { createEmulator } from './app.js';
import { runFeed } from './feed.js';
import { SEGMENT_MS } from './fleet.js';
import type { PushRecord } from './records.js';

const TOKEN = 'test-token';
const T0 = Date.UTC(2025, 5, 2, 4, 0, 0);
const MIN = 60_000;

function setup() {
  let now = T0;
  const emu = createEmulator({ seed: 11, vehicles: 20, token: TOKEN, now: () => now });
  const post = async (op: 'immobilize' | 'mobilize', body: Record<string, unknown>) => {
    const res = await emu.app.request(`/api/standard/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: TOKEN, ...body }) });
    return (await res.json()) as { status: string; data: unknown };
  };
  return { emu, post, at: (t: number) => (now = t) };
}

/** A vehicle driving from `t` on for at least 20 minutes, and the time it is at full speed. */
function driver(emu: ReturnType<typeof createEmulator>, from: number) {
  for (let t = from; t < from + 2 * 86_400_000; t += SEGMENT_MS) {
    for (const v of emu.fleet.vehicles) {
      const ok = [0, 5, 10, 20].every((m) => emu.fleet.gpsAt(v, t + m * MIN).ignstatus === 1 && emu.fleet.gpsAt(v, t + m * MIN).speed > 5);
      if (ok) return { v, t };
    }
  }
  throw new Error('no vehicle drives in two days');
}

/** A vehicle charging over 20 minutes from some time. */
function charger(emu: ReturnType<typeof createEmulator>, from: number) {
  for (let t = from; t < from + 5 * 86_400_000; t += SEGMENT_MS) {
    for (const v of emu.fleet.vehicles) {
      if ([0, 10, 20].every((m) => emu.fleet.canStateAt(v, t + m * MIN).current! > 0)) return { v, t };
    }
  }
  throw new Error('no vehicle charges in five days');
}

describe('the emulated fleet obeys commands', () => {
  it.each(['movement', 'ignition', 'crank', 'can', 'discharge'] as const)('immobilised (%s) while driving, it stands where it was with the ignition off; mobilised, it drives its plan again', async (type) => {
    const { emu, post, at } = setup();
    const { v, t } = driver(emu, T0);
    const before = emu.fleet.gpsAt(v, t + 5 * MIN);
    at(t + 5 * MIN);
    expect((await post('immobilize', { vehicleno: v.vehicleno, type, immediate: true })).status).toBe('SUCCESS');
    for (const m of [6, 10, 15]) {
      const g = emu.fleet.gpsAt(v, t + m * MIN);
      expect(g).toMatchObject({ lat: before.lat, lng: before.lng, speed: 0, ignstatus: 0, time: t + m * MIN });
      const can = emu.fleet.canStateAt(v, t + m * MIN);
      expect(can.load_status).toBe(0);
      expect(can.current!).toBeGreaterThan(-0.5);
      if (type === 'discharge') expect(can).toMatchObject({ allow_discharging: 0, current: 0 });
    }
    // What came before the command is as it was.
    expect(emu.fleet.gpsAt(v, t + 4 * MIN).speed).toBeGreaterThan(5);
    at(t + 15 * MIN);
    expect((await post('mobilize', { vehicleno: v.vehicleno, type })).status).toBe('SUCCESS');
    expect(emu.fleet.gpsAt(v, t + 20 * MIN)).toMatchObject({ ignstatus: 1 });
    expect(emu.fleet.gpsAt(v, t + 20 * MIN).speed).toBeGreaterThan(5);
  });

  it('immobilised (charge) while charging, its charging current stops and allow_charging is 0; mobilised, it charges again', async () => {
    const { emu, post, at } = setup();
    const { v, t } = charger(emu, T0);
    at(t + 1);
    await post('immobilize', { vehicleno: v.vehicleno, type: 'charge', immediate: false });
    const held = emu.fleet.canStateAt(v, t + 10 * MIN);
    expect(held.allow_charging).toBe(0);
    expect(held.current!).toBeLessThanOrEqual(0);
    expect(held.load_status).not.toBe(2);
    at(t + 15 * MIN);
    await post('mobilize', { vehicleno: v.vehicleno, type: 'charge' });
    const free = emu.fleet.canStateAt(v, t + 20 * MIN);
    expect(free.allow_charging).toBe(1);
    expect(free.current!).toBeGreaterThan(0);
  });

  it('a command to another vehicle changes nothing of this one', async () => {
    const { emu, post, at } = setup();
    const { v, t } = driver(emu, T0);
    const other = emu.fleet.vehicles.find((w) => w !== v)!;
    at(t);
    await post('immobilize', { vehicleno: other.vehicleno, type: 'movement', immediate: true });
    expect(emu.fleet.gpsAt(v, t + 10 * MIN).speed).toBeGreaterThan(5);
  });
});

it('the feed pushes what the fleet obeys: the immobilised vehicle standing, its ignition off, no load', async () => {
  const { emu, post, at } = setup();
  const { v, t } = driver(emu, T0);
  at(t + 5 * MIN);
  await post('immobilize', { vehicleno: v.vehicleno, type: 'movement', immediate: true });
  // The feed's own clock, minutes after the command; a receiver that takes everything, given as `fetch`.
  const pushed: PushRecord[] = [];
  const result = await runFeed({
    url: 'http://receiver.test',
    fleet: emu.fleet,
    mode: 'bulk',
    bulkSize: 50,
    count: 2_000,
    rate: Infinity,
    now: () => t + 10 * MIN,
    fetch: async (_url, init) => {
      const body = JSON.parse(String(init?.body)) as { bulkData: PushRecord[] };
      pushed.push(...body.bulkData);
      return Response.json({ status: 'SUCCESS', data: { deliveryId: 'd', accepted: body.bulkData.length, rejected: [] }, err: '', msg: 'accepted' }, { status: 202 });
    },
  });
  expect(result.acknowledged).toBe(2_000);
  const gps = pushed.filter((r) => r.type === 'gps' && r.vehicleno === v.vehicleno);
  expect(gps.length).toBeGreaterThan(10);
  for (const r of gps) expect(r.data).toMatchObject({ speed: 0, ignstatus: 0 });
  const loads = pushed.flatMap((r) => (r.type === 'can' && r.vehicleno === v.vehicleno ? [(r.data as unknown as { load_status?: number }).load_status] : [])).filter((l) => l !== undefined);
  for (const l of loads) expect(l).toBe(0);
});

