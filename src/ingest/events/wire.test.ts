import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALARM_FIELDS } from '../../telemetry/fields.js';
import { CAN, GPS, RECORD_TYPES, type RecordTypeSpec } from '../../telemetry/vehicleData.js';
import { flush, ingest, inputOf, newState, type Derived, type EventInput, type VehicleState } from './derive.js';
import { deriveSchemaOf, recordOf, STREAMS, valueAt, type StreamPlan } from './inputs.js';
import { heldSetId, HELD, readPending, committedSections, restore, sectionsLost, writeCommitted, writePending, type StoredPending } from './wire.js';
import { OPTS, roundTrip, T0, V } from './events.testkit.js';

const OVER_TEMP_BIT = CAN.fields.find((f) => f.name === 'alert_over_temp')!.alarmBit!;

/** What a state is, its rings compared as sets (the same times may sit at other positions). */
const meaning = (s: VehicleState) => ({
  ...s,
  streams: s.streams.map((st) => st && { ...st, pending: st.pending.records(), held: st.held.records(), heldNew: undefined, ring: Array.from(st.ring.slice(0, st.ringN)).sort((a, b) => a - b), ringAt: undefined }),
});

/** A drive with a thermal runaway raised, the pack over temperature from 60 s, and a charge starting, as the fixtures' generators fed it. */
function drive(from: number, to: number, overTemp = false): EventInput[] {
  const inputs: EventInput[] = [];
  for (let j = from; j < to; j++) {
    const t = T0 + j * 1000;
    inputs.push(inputOf('gps', t, { lat: 12.9712345 + j * 0.0002, lng: 77.5943219, speed: j < 5 ? 0 : 63.5, ignstatus: j < 5 || j >= 120 ? 0 : 1 }));
    const c: Record<string, number> = { soc: 80 - j / 10, battery_voltage: 52.37, current: j > 70 ? 30.5 : -31.52, load_status: j > 70 ? 2 : 1, alert_thermal_runaway: j === 40 ? 1 : 0, alert_short_circuit: 0 };
    if (overTemp) c.alert_over_temp = j >= 60 ? 1 : 0;
    inputs.push(inputOf('can', t + 400, c));
  }
  return inputs;
}

/** The outputs of the rest of a drive (ignition off: a trip; the charge still on), then idle. */
function goOn(s: VehicleState, overTemp = false): Derived[] {
  return [ingest(V, s, drive(110, 140, overTemp), T0 + 140_000), flush(V, s, T0 + 200_000)];
}

describe('a state in Redis', () => {
  it('round-trips every part exactly, full-precision values and absent ones alike', () => {
    const s = newState();
    ingest(V, s, drive(0, 110), T0 + 110_000);
    const can = s.streams[STREAMS.get('can')!.streamId]!;
    expect(can.ringN).toBe(32);
    expect(s.trips.open).toBe(1);
    expect(s.charging.phase).toBe(2);
    expect(can.pending.length).toBeGreaterThan(20);
    const again = roundTrip(s);
    expect(meaning(again)).toEqual(meaning(s));
    expect(writeCommitted(again)).toEqual(writeCommitted(s));
    expect(meaning(roundTrip(newState()))).toEqual(meaning(newState()));

    const odd = newState();
    ingest(V, odd, [inputOf('gps', T0, { lat: 12.123456789, lng: -77.1, speed: 0.123, ignstatus: 1 }), inputOf('can', T0 + 1, { soc: 33.333, battery_voltage: 1e300, current: -1 / 3, load_status: 2.5, alert_over_temp: 1 }), inputOf('gps', T0 + 2, { lat: -0.0000001, lng: 179.9999999, speed: 250, ignstatus: 0 })], T0 + 2);
    expect(roundTrip(odd).streams.map((st) => st?.pending.records())).toEqual(odd.streams.map((st) => st?.pending.records()));
  });

  it('stores the copies the release before reads of the facts kept once: the GPS stream’s last record time, the last ignition', () => {
    const s = newState();
    ingest(V, s, drive(0, 110), T0 + 110_000);
    ingest(V, s, [inputOf('gps', T0 + 200_000, { lat: 12.9, lng: 77.6, speed: 0, ignstatus: 0 })], T0 + 260_000);
    flush(V, s, T0 + 900_000);
    const gps = s.streams[STREAMS.get('gps')!.streamId]!.watermark;
    expect(gps).toBe(T0 + 200_000);
    const stored = committedSections(writeCommitted(s));
    // Each slice's layout (its flatSlice keys): trips' lastTime 9th; idling's and stops' ignition and lastTime 6th and 7th; overspeed's lastTime 10th.
    expect(stored.get('slice 4')![9]).toBe(gps);
    for (const id of [7, 8]) expect(stored.get(`slice ${id}`)!.slice(5, 7), `slice ${id}`).toEqual([0, gps]);
    expect(stored.get('slice 9')![9]).toBe(gps);
    // A fresh state: no ignition seen (NaN), no GPS record (-Infinity), as the release before wrote them.
    const fresh = committedSections(writeCommitted(newState()));
    expect(fresh.get('slice 8')!.slice(5, 7)).toEqual([NaN, -Infinity]);
  });

  it('refuses bytes that are not a state or a pending record', () => {
    const s = newState();
    ingest(V, s, drive(0, 50), T0 + 50_000);
    const committed = writeCommitted(s);
    const plan = STREAMS.get('can')!;
    const member = writePending(plan, s.streams[plan.streamId]!.pending.records()[0]!);
    expect(() => restore(committed.subarray(0, committed.length - 8), [])).toThrow(/truncated|after its end/);
    expect(() => restore(committed.subarray(0, 40), [])).toThrow(/truncated/);
    expect(() => restore(Buffer.concat([committed, Buffer.from([0])]), [])).toThrow(/after its end/);
    expect(() => readPending(plan, member.subarray(0, member.length - 1))).toThrow(/pending record/);
    expect(() => restore(Buffer.from('{"v":99}'), [])).toThrow(/version/);
  });

  it('holds a vehicle in about 2.4 KB committed; a pending record in 10 bytes, then 2 a flag and 10 a value', () => {
    const s = newState();
    const c: Record<string, number> = { soc: 80, battery_voltage: 52.37, current: -31.52, load_status: 1 };
    for (const a of ALARM_FIELDS) c[a] = 0;
    for (let j = 0; j < 100; j++) ingest(V, s, [inputOf('gps', T0 + j * 1000, { lat: 12.97 + j * 0.0002, lng: 77.59, speed: 71.3, ignstatus: 1 }), inputOf('can', T0 + j * 1000 + 400, c)], T0 + j * 1000 + 500);
    expect(writeCommitted(s).length).toBeLessThan(2_500);
    const sizes = (type: string) => new Set(s.streams[STREAMS.get(type)!.streamId]!.pending.records().map((r) => writePending(STREAMS.get(type)!, r).length));
    expect([...sizes('gps')]).toEqual([10 + 4 * 10]);
    expect([...sizes('can')]).toEqual([10 + 4 * 10 + 15 * 2]);
  });
});

describe('a state stored before a release that adds to the schema', () => {
  it('reads exactly when a record type and an alarm (before the last one) are added', () => {
    const s = newState();
    // Every alarm told at once: the state holds raised flags.
    ingest(V, s, drive(0, 110, true), T0 + 110_000, { ...OPTS, alarmMinDurationMs: 0 });
    expect(s.alarms.raised).not.toBe(0);
    const stored = {
      committed: writeCommitted(s),
      pending: s.streams.map((st, streamId): StoredPending => ({ streamId, members: st.pending.records().map((r) => writePending(STREAMS.get(streamId === 0 ? 'gps' : 'can')!, r)) })),
    };
    // The next release: an OBD stream, and a new alarm inserted before the last CAN alarm, with the next free bit and wire id.
    const lastAlarm = CAN.fields.findLastIndex((f) => f.alarmBit !== undefined);
    const newAlarm = { ...CAN.fields[lastAlarm]!, name: 'alert_fuse_blown', id: 200, alarmBit: 15 };
    const canNext: RecordTypeSpec = { ...CAN, fields: [...CAN.fields.slice(0, lastAlarm), newAlarm, ...CAN.fields.slice(lastAlarm)] };
    const obd: RecordTypeSpec = { ...GPS, name: 'obd', measurement: 'obd', row: 'o', streamId: 2, position: undefined, fields: [{ ...GPS.fields[3]!, id: 201, name: 'rpm' }] };
    const filler = Array.from({ length: 200 - 74 }, (_, i): RecordTypeSpec['fields'][number] => ({ ...GPS.fields[3]!, id: 74 + i, name: `reserved_${i}` }));
    const next = deriveSchemaOf([GPS, { ...canNext, fields: [...canNext.fields, ...filler] }, obd]);
    expect(RECORD_TYPES).toHaveLength(2);
    const read = restore(stored.committed, stored.pending, next.byStreamId);
    expect(read.alarms).toEqual(s.alarms);
    expect(read.trips).toEqual(s.trips);
    expect(read.charging).toEqual(s.charging);
    expect(read.track).toEqual(s.track);
    expect(read.streams[2]).toMatchObject({ watermark: -Infinity });
    expect(read.streams[2]!.pending.length).toBe(0);
    // Each stream's pending records keep every value, and their alarms by bit (the new alarm's absent).
    const nextCan = next.streams.get('can')!;
    const canNow = s.streams[1]!.pending.records();
    expect(nextCan.alarms.map((a) => a.name)).toContain('alert_fuse_blown');
    expect(read.streams[1]!.pending.records()).toHaveLength(canNow.length);
    read.streams[1]!.pending.records().forEach((r, j) => {
      const before = canNow[j]!;
      expect(r.time).toBe(before.time);
      STREAMS.get('can')!.fields.forEach((f, i) => expect(valueAt(r, nextCan.fields.indexOf(f))).toEqual(valueAt(before, i)));
      expect([r.alarmMask, r.alarmValues]).toEqual([before.alarmMask, before.alarmValues]);
      expect(r.alarmMask & (1 << 15)).toBe(0);
    });
  });
});

/** A CAN record's pack: four real cells (a fifth slot at 0 V, beyond no_of_cells), three real sensors (a fourth reading the sentinel -40). */
const PACK = { no_of_cells: 4, no_of_temperature_sensors: 3, cell_voltage_01: 3.301, cell_voltage_02: 3.297, cell_voltage_03: 3.342, cell_voltage_04: 3.305, cell_voltage_05: 0, cell_temperature_01: 31.5, cell_temperature_02: 29.5, cell_temperature_03: 30.1, cell_temperature_04: -40 };

describe('a pending record’s pack values across the release before (f7b4220: the four temperature values, no cell values)', () => {
  const plan = STREAMS.get('can')!;
  const time = T0 + 79_300;
  const fields = { soc: 71, current: 5, load_status: 2, ...PACK };
  const mine = () => recordOf(inputOf('can', time, fields), plan, undefined, OPTS.temperatureSentinels)!;
  /** What f7b4220's writePending wrote for this record (run at that commit): soc, current, load_status and 0x3f00–0x3f03. */
  const BEFORE = '4wcAQBzM0rh5QgALAAAAAADAUUAACQAAAAAAABRAABAAAAAAAAAAQD8AAAAAAACAP0A/AQAAAAAAAPA/PwJgZmZmZmb2Pz8DAAAAAAAA8D8=';
  /** f7b4220's CAN stream: this release's less the two cell values (its wire ids 0x3f04–0x3f05 unknown to it). */
  const before: StreamPlan = { ...plan, fields: plan.fields.filter((f) => !f.startsWith('pack:cell_')), wireIds: plan.wireIds.filter((id) => id !== 0x3f04 && id !== 0x3f05), cellApartAt: -1, cellApartNumberAt: -1 };

  it('computes the cell furthest from the real cells’ median: 3.342 V, 39 mV over the median of the four (the 0 V slot is none)', () => {
    expect(plan.fields.slice(-2)).toEqual(['pack:cell_apart', 'pack:cell_apart_number']);
    expect(plan.wireIds.slice(-2)).toEqual([0x3f04, 0x3f05]);
    expect(valueAt(mine(), plan.cellApartAt)).toBeCloseTo(3.342 - (3.301 + 3.305) / 2, 12);
    expect(valueAt(mine(), plan.cellApartNumberAt)).toBe(3);
  });

  it('reads what the release before stored: every value it kept, the cell values absent', () => {
    const read = readPending(plan, Buffer.from(BEFORE, 'base64'));
    plan.fields.forEach((f, i) => expect(valueAt(read, i), f).toEqual(f.startsWith('pack:cell_') ? NaN : valueAt(mine(), i)));
  });

  it('what it stores, the release before reads as it leaves out any value it does not know: as the record it stored itself, byte for byte', () => {
    const read = readPending(before, writePending(plan, mine()));
    expect(before.fields).toHaveLength(plan.fields.length - 2);
    expect(writePending(before, read).toString('base64')).toBe(BEFORE);
  });
});

describe('this release’s layout (version 3), pinned by a golden fixture', () => {
  /**
   * A state this release wrote, kept as bytes (`src/formats/testdata/v3-state.json`): a change to the layout, to a
   * slice's doubles or to a pending or held record's bytes fails here, where a round trip through one build's
   * writer and reader would not. A release that changes the layout on purpose bumps the tag, keeps this
   * fixture (its readers must still read it) and adds its own. `WRITE_GOLDEN=1` writes it anew.
   */
  const FILE = new URL('../../formats/testdata/v3-state.json', import.meta.url);
  const state = () => {
    const s = newState();
    // With a record charging by current alone just after the track's last settled fix: held for it, as the drain's last socs are;
    // it reports its pack, so its bytes hold the six pack values (wire ids 0x3f00–0x3f05).
    ingest(V, s, [...drive(0, 110, true), inputOf('can', T0 + 79_300, { current: 5, ...PACK })], T0 + 120_000);
    return s;
  };
  type Stored = { committed: string; pending: Array<{ streamId: number; members: string[] }> };
  const readStored = (golden: Stored) => restore(Buffer.from(golden.committed, 'base64'), golden.pending.map((p) => ({ streamId: p.streamId, members: p.members.map((m) => Buffer.from(m, 'base64')) })));
  const outputs = (ds: Derived[]) => ({ events: ds.flatMap((d) => d.events), trips: ds.flatMap((d) => d.trips), sessions: ds.flatMap((d) => d.chargingSessions) });

  it('reads the fixture into the state it was written from, and writes it back byte for byte', () => {
    const s = state();
    const plan = (streamId: number) => STREAMS.get(streamId === 0 ? 'gps' : 'can')!;
    const written: Stored = {
      committed: writeCommitted(s).toString('base64'),
      pending: s.streams.flatMap((st, streamId) => [
        { streamId, members: st.pending.records().map((r) => writePending(plan(streamId), r).toString('base64')) },
        { streamId: heldSetId(streamId), members: st.held.records().map((r) => writePending(plan(streamId), r).toString('base64')) },
      ]),
    };
    expect(written.pending.some((p) => p.streamId >= HELD && p.members.length > 0)).toBe(true);
    expect(s.drain.waiting.length).toBeGreaterThan(0);
    if (process.env.WRITE_GOLDEN === '1') writeFileSync(FILE, `${JSON.stringify(written, null, 1)}\n`);
    const golden = JSON.parse(readFileSync(FILE, 'utf8')) as Stored;
    const read = readStored(golden);
    expect(meaning(read)).toEqual(meaning(s));
    expect(writeCommitted(read).toString('base64')).toBe(golden.committed);
    expect(written).toEqual(golden);
    // And derives on exactly as the state it was written from.
    expect(outputs(goOn(read, true))).toEqual(outputs(goOn(s, true)));
  });

  it('names every stored section a rewrite does not keep (the check of fixtures and of a release mix’s states)', () => {
    const stored = writeCommitted(state());
    expect(sectionsLost(stored, stored)).toEqual([]);
    const changed = Buffer.from(stored);
    const x = changed.readDoubleLE(changed.length - 8);
    changed.writeDoubleLE(x === x ? x + 1 : 1, changed.length - 8);
    const last = [...committedSections(stored).keys()].at(-1)!;
    expect(sectionsLost(stored, changed)).toEqual([last]);
  });

  for (const [release, what, hadCorrections] of [
    ['f7b4220', 'the previous main (before cell drift: no slice 18, no pack values 0x3f04–0x3f05; its flat slices wrote every double, fresh ones at their end too)', true],
    ['315eb24', 'the main before it (before pack_life, slice 17, the pack warnings, slices 19 and 20, and before charging counted the charge in Ah and kept the pack and the BMS comparison: nothing after its changes)', true],
    ['0e8a25e', 'the main before it (before moved_while_immobilised was derived: no slice 16)', true],
    ['ae57ce2', 'the main before it (its alarms told at once: no pending hold, no `since`)', true],
    ['d164c32', 'the release before it (its drain kept one highest, charging no history of its own, nothing waited for the track, no corrections)', false],
    ['0e08806', 'the one before it (before stops, idling, overspeed, towing, geofences, soc low, battery swaps and drains)', false],
  ] as const) {
    it(`reads the state ${release} wrote exactly, ${what}: every double it stored kept, what came since fresh; derives on as from this release’s own`, () => {
      const golden = JSON.parse(readFileSync(new URL(`../../formats/testdata/v3-state-${release}.json`, import.meta.url), 'utf8')) as Stored;
      const stored = Buffer.from(golden.committed, 'base64');
      const read = readStored(golden);
      expect(sectionsLost(stored, writeCommitted(read))).toEqual([]);
      // Its pending and held records are this release's, byte for byte.
      for (const p of golden.pending) {
        const streamId = p.streamId >= HELD ? p.streamId - HELD : p.streamId;
        const plan = STREAMS.get(streamId === 0 ? 'gps' : 'can')!;
        const set = p.streamId >= HELD ? read.streams[streamId]!.held : read.streams[streamId]!.pending;
        expect(set.records().map((r) => writePending(plan, r).toString('base64'))).toEqual(p.members);
      }
      // Corrections go on where it kept them (or, a release without them, begin afresh with its next call),
      // and it derives on: the drive's end, its trip and alarm.
      if (hadCorrections) expect(read.late.epoch).not.toBeNaN();
      else expect(read.late.epoch).toBeNaN();
      const mine = outputs(goOn(state(), true));
      const theirs = outputs(goOn(read, true));
      expect(theirs.trips).toEqual(mine.trips);
      // The older release told the over-temperature raise at once (it had no ALARM_MIN_DURATION): its state
      // holds it raised, so it is not told again; this release's own state held it back, and tells it now.
      expect(read.alarms.raised & (1 << OVER_TEMP_BIT)).not.toBe(0);
      const compared = (e: { event: string }) => !e.event.startsWith('charging') && e.event !== 'alert_over_temp_raised';
      expect(theirs.events.filter(compared)).toEqual(mine.events.filter(compared));
    });
  }
});
