import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import { DERIVE_FIELDS, flush, ingest, inputOf, newState, pendingScore, watermarkScore, type EventInput, type VehicleState } from './derive.js';
import { restore, writeCommitted, writePending } from './wire.js';

const V = 'KA01AB1234';
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);

/** What a state is, without the ring's layout in memory (the same scores may sit at other positions). */
const meaning = (s: VehicleState) => {
  const ring = Array.from(s.ring.subarray(0, s.ringN)).sort((a, b) => a - b);
  return { ...s, ring, ringAt: undefined };
};
const roundTrip = (s: VehicleState): VehicleState => restore(writeCommitted(s), [...s.pending].sort((a, b) => pendingScore(a) - pendingScore(b)).map(writePending));

/** A drive with a thermal runaway raised and a charge starting, as the v1 fixture's generator fed it (testdata/v1-state.json). */
function drive(from: number, to: number): EventInput[] {
  const inputs: EventInput[] = [];
  for (let j = from; j < to; j++) {
    const t = T0 + j * 1000;
    inputs.push(inputOf('gps', t, { lat: 12.9712345 + j * 0.0002, lng: 77.5943219, speed: j < 5 ? 0 : 63.5, ignstatus: j < 5 || j >= 120 ? 0 : 1 }));
    inputs.push(
      inputOf('can', t + 400, { soc: 80 - j / 10, battery_voltage: 52.37, current: j > 70 ? 30.5 : -31.52, load_status: j > 70 ? 2 : 1, alert_thermal_runaway: j === 40 ? 1 : 0, alert_short_circuit: 0 }),
    );
  }
  return inputs;
}

describe('a state in Redis', () => {
  it('round-trips every part exactly, full-precision values and absent ones alike', () => {
    const s = newState();
    ingest(V, s, drive(0, 110), T0 + 120_000);
    expect(s.ringN).toBe(64);
    expect(s.trip).toBeDefined();
    expect(s.charge).toBeDefined();
    expect(s.pending.length).toBeGreaterThan(20);
    const again = roundTrip(s);
    expect(meaning(again)).toEqual(meaning(s));
    expect(writeCommitted(again)).toEqual(writeCommitted(s));
    expect(meaning(roundTrip(newState()))).toEqual(meaning(newState()));

    const odd = newState();
    ingest(V, odd, [inputOf('gps', T0, { lat: 12.123456789, lng: -77.1, speed: 0.123, ignstatus: 1 }), inputOf('can', T0 + 1, { soc: 33.333, battery_voltage: 1e300, current: -1 / 3, load_status: 2.5 }), inputOf('gps', T0 + 2, { lat: -0.0000001, lng: 179.9999999, speed: 250, ignstatus: 0 })], 1);
    expect(odd.pending).toHaveLength(3);
    expect(roundTrip(odd).pending).toEqual(odd.pending);
    expect(watermarkScore(newState())).toBeUndefined();
  });

  it('refuses bytes that are not a state or a pending record', () => {
    const s = newState();
    ingest(V, s, drive(0, 50), 1);
    const committed = writeCommitted(s);
    const member = writePending(s.pending[0]!);
    expect(() => restore(committed.subarray(0, committed.length - 8), [])).toThrow(/ring/);
    expect(() => restore(committed.subarray(0, 40), [])).toThrow(/truncated/);
    expect(() => restore(committed, [member.subarray(0, member.length - 1)])).toThrow(/pending record/);
    expect(() => restore(Buffer.from('{"v":99}'), [])).toThrow(/version/);
    expect(() => restore(undefined, [Buffer.from('1,2,3')])).toThrow(/pending record/);
  });

  it("reads the first release's JSON and text (an upgrade keeps every state), and derives on as if it had never stopped", () => {
    const v1 = JSON.parse(readFileSync(new URL('./testdata/v1-state.json', import.meta.url), 'utf8')) as { committed: string; pending: string[]; events: number };
    const fromV1 = restore(Buffer.from(v1.committed), v1.pending.map((p) => Buffer.from(p)));
    const here = newState();
    const first = ingest(V, here, drive(0, 80), T0 + 90_000);
    expect(first.events).toHaveLength(v1.events);
    expect(meaning(fromV1)).toEqual(meaning(here));
    // The rest of the drive: ignition off (a trip), the charge still on; then idle.
    const rest = drive(80, 130);
    const a = [ingest(V, fromV1, rest, T0 + 140_000), flush(V, fromV1, T0 + 200_000)];
    const b = [ingest(V, here, rest, T0 + 140_000), flush(V, here, T0 + 200_000)];
    expect(a).toEqual(b);
    expect(a.flatMap((d) => d.trips)).toHaveLength(1);
    expect(a.flatMap((d) => d.events).map((e) => e.event)).toContain('ignition_off');
  });

  it("reads the first release's one-piece state too (its pending records inside it), as the worker before the two-part store wrote it", () => {
    const v1 = JSON.parse(readFileSync(new URL('./testdata/v1-one-piece-state.json', import.meta.url), 'utf8')) as { state: string; events: number };
    const fromV1 = restore(Buffer.from(v1.state), []);
    const here = newState();
    ingest(V, here, drive(0, 80), T0 + 90_000);
    expect(fromV1.pending.length).toBeGreaterThan(50);
    expect(meaning(fromV1)).toEqual(meaning(here));
  });

  it('holds a vehicle in about 0.7 KB committed and 42 to 58 bytes a pending record', () => {
    const s = newState();
    const c: Record<string, number> = { soc: 80, battery_voltage: 52.37, current: -31.52, load_status: 1 };
    for (const a of ALARM_FIELDS) c[a] = 0;
    for (let j = 0; j < 100; j++) ingest(V, s, [inputOf('gps', T0 + j * 1000, { lat: 12.97 + j * 0.0002, lng: 77.59, speed: 71.3, ignstatus: 1 }), inputOf('can', T0 + j * 1000 + 400, c)], j);
    expect(writeCommitted(s).length).toBe(1 + 24 * 8 + 64 * 8);
    const sizes = new Set(s.pending.map((r) => writePending(r).length));
    expect([...sizes].sort()).toEqual([42, 58]);
    expect(DERIVE_FIELDS.length).toBeLessThan(255);
  });
});
