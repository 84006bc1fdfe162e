import { describe, expect, it } from 'vitest';
import { Fleet, SEGMENT_MS, type VehicleProfile } from '../../src/upstream/emulator/fleet.js';
import { DEFAULT_DERIVE_OPTIONS as OPTS } from '../../src/ingest/events/derive.js';
import { HeatWatch, type AckedRecord, judgePacks, PACK_EVENTS, PACK_TROUBLES, packVerdicts, type PackEvent, type PackEvidence } from './packs.js';

const fleet = Fleet.create({ seed: 1, size: 1_000 });
const DAY = 86_400_000;
const START = Math.floor(Date.UTC(2026, 10, 20) / SEGMENT_MS) * SEGMENT_MS;
const hot = fleet.vehicles.find((v) => fleet.heatsFast(v))!;
const healthy = fleet.vehicles.find((v) => !fleet.heatsFast(v) && !fleet.sohStuck(v))!;
const stuck = fleet.vehicles.find((v) => fleet.sohStuck(v))!;
const drifting = fleet.vehicles.find((v) => fleet.driftingCell(v) !== undefined)!;

/** The vehicle's CAN records every 10 s over [from, to), each its whole state (as the feed acknowledged them). */
const records = (v: VehicleProfile, from: number, to: number): AckedRecord[] => {
  const out: AckedRecord[] = [];
  for (let t = from; t < to; t += 10_000) out.push({ vehicleno: v.vehicleno, type: 'can', data: fleet.canStateAt(v, t) });
  return out;
};

/** The fast-heating pack's heatings in the day from START (their starts, 30 min each), and the first thermal alarm of each the records carry. */
const heatings: number[] = [];
for (let t = START; t < START + DAY; t += SEGMENT_MS) if (fleet.heatingFastSince(hot, t) === t) heatings.push(t);
const alarmOf = (since: number): number | undefined => {
  const w = new HeatWatch(fleet);
  w.add(records(hot, since, since + SEGMENT_MS));
  return w.packs.get(hot.vehicleno)!.alarms[0];
};
const alarmed = heatings.find((s) => alarmOf(s) !== undefined)!;
const alarm = alarmOf(alarmed)!;
/** A later heating, of which judgeHeating's records carry nothing: as if the feed had ended before its alarm. */
const later = heatings.find((s) => s > alarmed)!;

const warning = (time: number, fromTemperature = 30, v: VehicleProfile = hot): PackEvent => ({ event: 'pack_heating_fast', vehicleno: v.vehicleno, time, fromTemperature });
const evidence = (events: PackEvent[], charging: PackEvidence['charging'] = []): PackEvidence => ({ events, packLifeRows: 0, charging });

/** The heating judged: the records of the alarmed heating and the ten minutes before it, the feed begun `feedStart`. */
function judgeHeating(events: PackEvent[], feedStart = alarmed - 10 * 60_000) {
  const watch = new HeatWatch(fleet);
  watch.add(records(hot, alarmed - 10 * 60_000, alarmed + SEGMENT_MS));
  const report = judgePacks(fleet, watch, evidence(events), feedStart, OPTS);
  return { heating: report.heating, target: packVerdicts(report).target };
}

describe('the soak judges pack events by the emulator’s truth', () => {
  it('knows the truth of every pack event the detectors declare (a new kind needs its entry in PACK_TROUBLES)', () => {
    expect(PACK_EVENTS).toEqual(expect.arrayContaining(['pack_heating_fast', 'pack_sensor_apart', 'pack_c_rate_high', 'bms_soh_disagrees', 'bms_soh_stuck']));
    expect(Object.keys(PACK_TROUBLES).sort()).toEqual([...PACK_EVENTS].sort());
  });

  it('a pack warning on a healthy pack fails the soak, named with its vehicle and time; on a pack with that trouble it counts', () => {
    const at = START + 3_600_000;
    const events = [warning(at, 30, healthy), { event: 'pack_c_rate_high', vehicleno: hot.vehicleno, time: at }, { event: 'pack_sensor_apart', vehicleno: healthy.vehicleno, time: at }, warning(alarm - 60_000)];
    const report = judgePacks(fleet, new HeatWatch(fleet), evidence(events), START, OPTS);
    expect(report.troubles.pack_heating_fast).toMatchObject({ told: 1, healthy: 1 });
    expect(report.troubles.pack_c_rate_high).toMatchObject({ told: 0, healthy: 1 });
    expect(report.troubles.pack_sensor_apart).toMatchObject({ told: 0, healthy: 1 });
    expect(report.onHealthy).toHaveLength(3);
    expect(report.onHealthy[0]).toContain(`${healthy.vehicleno} at ${new Date(at).toISOString()}: pack_heating_fast`);
    expect(report.counts).toMatchObject({ pack_heating_fast: 2, pack_c_rate_high: 1, pack_sensor_apart: 1, battery_swapped: 0, pack_life: 0 });
    const [check] = packVerdicts(report).checks;
    expect(check!.ok).toBe(false);
    expect(check!.detail).toContain(healthy.vehicleno);

    const fine = judgePacks(fleet, new HeatWatch(fleet), evidence([warning(alarm - 60_000)]), START, OPTS);
    expect(packVerdicts(fine).checks[0]!.ok).toBe(true);
  });

  it('a heating warning on a fast-heating pack while it is parked is no warning of its trouble', () => {
    const t = [...Array(96).keys()].map((k) => alarmed + k * SEGMENT_MS + 60_000).find((x) => fleet.activityAt(hot, x) === 'parked')!;
    const report = judgePacks(fleet, new HeatWatch(fleet), evidence([warning(t)]), START, OPTS);
    expect(report.troubles.pack_heating_fast).toMatchObject({ told: 0, healthy: 1 });
    expect(report.onHealthy[0]).toContain('not in that trouble then');
  });

  it('counts a heating warning told before the thermal alarm as before, one after it as after, none as an alarm without warning', () => {
    expect(alarm).toBeGreaterThan(alarmed + 5 * 60_000);
    expect(judgeHeating([warning(alarmed + 4 * 60_000)])).toMatchObject({ heating: { episodes: 1, before: 1, after: 0, without: 0 }, target: { met: true } });
    expect(judgeHeating([warning(alarm + 30_000)])).toMatchObject({ heating: { episodes: 1, before: 0, after: 1, without: 0 }, target: { met: false } });
    expect(judgeHeating([])).toMatchObject({ heating: { episodes: 1, before: 0, after: 0, without: 1 }, target: { met: false } });
    // A warning at the alarm's own record is not ahead of it.
    expect(judgeHeating([warning(alarm)]).heating).toMatchObject({ before: 0, after: 1 });
  });

  it('a warning of an earlier heating counts while the pack never cooled to the low it rose from (one episode to the service), not once it did', () => {
    const earlier = alarmed - 20 * 60_000;
    expect(judgeHeating([warning(earlier, -100)]).heating).toMatchObject({ before: 0, beforeEarlier: 1, without: 0 });
    expect(judgeHeating([warning(earlier, 100)]).heating).toMatchObject({ before: 0, beforeEarlier: 0, without: 1 });
  });

  it('does not judge a heating begun before the feed, and counts a warning in a heating whose alarm the records did not carry', () => {
    expect(judgeHeating([], alarmed + 60_000)).toMatchObject({ heating: { episodes: 0, begunBeforeFeed: 1 }, target: { met: null } });
    expect(judgeHeating([warning(later + 5 * 60_000)]).heating).toMatchObject({ episodes: 1, toldWithoutAlarm: 1, without: 1 });
  });

  it('bms_soh_stuck: "not enough sessions" fails nothing; on a pack whose BMS is right it fails; on a stuck one with the sessions it counts', () => {
    const none = packVerdicts(judgePacks(fleet, new HeatWatch(fleet), evidence([]), START, OPTS));
    const stuckCheck = (v: ReturnType<typeof packVerdicts>) => v.checks.find((c) => c.name.startsWith('bms_soh_stuck'))!;
    expect(stuckCheck(none)).toMatchObject({ ok: null });
    expect(stuckCheck(none).detail).toContain('not enough sessions');
    expect(none.checks.find((c) => c.name.startsWith('bms_soh_disagrees'))!.ok).toBeNull();

    const wrong = packVerdicts(judgePacks(fleet, new HeatWatch(fleet), evidence([{ event: 'bms_soh_stuck', vehicleno: healthy.vehicleno, time: START }]), START, OPTS));
    expect(stuckCheck(wrong).ok).toBe(false);
    expect(wrong.checks[0]!.ok).toBe(false);

    // Two sessions estimating the stuck pack's capacity (and one that did not, of a shallow charge).
    const sessions = [{ vehicleno: stuck.vehicleno, pack: '1', capacityAhEstimate: 90, socEnd: 95 }, { vehicleno: stuck.vehicleno, pack: '1', capacityAhEstimate: 88, socEnd: 96 }, { vehicleno: stuck.vehicleno, pack: '1', socEnd: 60 }];
    const told = judgePacks(fleet, new HeatWatch(fleet), evidence([{ event: 'bms_soh_stuck', vehicleno: stuck.vehicleno, time: START }], sessions), START, OPTS);
    expect(told.troubles.bms_soh_stuck).toMatchObject({ told: 1, healthy: 0, sessions: { needed: 2, packs: 1, most: 2 } });
    // Two sessions are not the CAPACITY_SOH_SESSIONS bms_soh_disagrees needs.
    expect(told.troubles.bms_soh_disagrees!.sessions).toMatchObject({ needed: OPTS.capacitySohSessions, packs: 0 });
    expect(stuckCheck(packVerdicts(told)).ok).toBe(true);
  });

  it('cell_drifting: only on a pack with a drifting cell, and judged once such a pack was charged to full CELL_DRIFT_SESSIONS times', () => {
    const check = (r: ReturnType<typeof judgePacks>) => packVerdicts(r).checks.find((c) => c.name.startsWith('cell_drifting'))!;
    const none = judgePacks(fleet, new HeatWatch(fleet), evidence([]), START, OPTS);
    expect(check(none)).toMatchObject({ ok: null });
    expect(check(none).detail).toContain('not enough sessions');

    const wrong = judgePacks(fleet, new HeatWatch(fleet), evidence([{ event: 'cell_drifting', vehicleno: healthy.vehicleno, time: START }]), START, OPTS);
    expect(wrong.troubles.cell_drifting).toMatchObject({ told: 0, healthy: 1 });
    expect(check(wrong).ok).toBe(false);
    expect(packVerdicts(wrong).checks[0]!.ok).toBe(false);

    // Full charges count (CELL_DRIFT_FULL_SOC); one short of it does not.
    const full = Array.from({ length: OPTS.cellDriftSessions }, () => ({ vehicleno: drifting.vehicleno, pack: '7', socEnd: OPTS.cellDriftFullSoc }));
    const told = judgePacks(fleet, new HeatWatch(fleet), evidence([{ event: 'cell_drifting', vehicleno: drifting.vehicleno, time: START }], [...full, { vehicleno: drifting.vehicleno, pack: '7', socEnd: OPTS.cellDriftFullSoc - 1 }]), START, OPTS);
    expect(told.troubles.cell_drifting).toMatchObject({ told: 1, healthy: 0, sessions: { needed: OPTS.cellDriftSessions, packs: 1, most: OPTS.cellDriftSessions } });
    expect(check(told).ok).toBe(true);
  });
});
