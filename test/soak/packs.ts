/**
 * The soak's pack events judged against the emulator's truth (src/upstream/emulator/fleet.ts, "Ageing
 * packs"): what the service told of the packs (read back from InfluxDB at the end of a run), and what the
 * fleet's packs really did.
 *
 * - **Never for a healthy pack.** Every event the detectors declare with a `pack` tag (a pack warning, the
 *   BMS's health: `PACK_EVENTS`, from the declarations) has its trouble in `PACK_TROUBLES`, the truth it
 *   is told of; one told of a pack without that trouble at its time is a failure, named with its vehicle
 *   and time. A new kind is an entry there (packs.test.ts fails until it has one).
 * - **Heating told before the alarm.** A fast-heating pack (`heatsFast`) under load rises until its BMS
 *   raises `alert_over_temp` (60 °C). For each such heating (`heatingFastSince`: a drive's or a charge's)
 *   in which the records carried the thermal alarm, the warning was told before the alarm in this heating;
 *   or before it in an earlier one the pack had not cooled from since (the records' hottest sensor never
 *   back down to the low that warning rose from: the service tells `pack_heating_fast` once an episode,
 *   packHeat.ts); or only after the alarm; or not at all. A heating that began before the feed is not
 *   judged (the service saw no start to measure the rise from).
 * - **Kinds that need several charges** of one pack (the BMS's health: deep charges, its capacity
 *   estimated; cell drift: charges to full): with no pack of the trouble charged so often, the run was too
 *   short to tell ("not enough sessions"), which fails nothing.
 *
 * The truth holds at the detectors' default settings (a lower PACK_C_RATE_HIGH or PACK_HEAT_RATE makes
 * healthy packs worth a warning). Pure: the soak reads InfluxDB (soak.ts) and hands the rows here.
 */
import { EVENTS_OUTPUTS } from '../../src/ingest/events/kinds.js';
import { eventNamesOf } from '../../src/ingest/events/detectors/detector.js';
import { VEHICLE_EVENTS } from '../../src/telemetry/derivedMeasurements.js';
import { OVER_TEMP_ALARM_C, type Fleet, type VehicleProfile } from '../../src/upstream/emulator/fleet.js';
import type { DeriveOptions } from '../../src/ingest/events/derive.js';

/** An acknowledged record, as the feed hands it over (the harness's SentRecord; not imported, so that this module's tests need no server). */
export interface AckedRecord {
  vehicleno: string;
  type: string;
  data: Readonly<Record<string, unknown>>;
}

/** The events the detectors tell of a pack: every `vehicle_events` output tagged with it, from the declarations. */
export const PACK_EVENTS: readonly string[] = eventNamesOf(EVENTS_OUTPUTS.filter((o) => o.measurement === VEHICLE_EVENTS && o.fields.some((f) => f.name === 'pack')));
/** Counted beside them: a pack taken out of a vehicle for another. (`pack_life` rows are counted too.) */
export const PACK_SWAP_EVENT = 'battery_swapped';

export interface PackTrouble {
  /** The emulator's truth, in the report's words. */
  readonly truth: string;
  /** Whether the pack of `v` has the trouble. */
  of(fleet: Fleet, v: VehicleProfile): boolean;
  /** Whether it shows at `t` (default: whenever the pack has it). */
  at?(fleet: Fleet, v: VehicleProfile, t: number): boolean;
  /** Charging sessions of one pack the event needs at the least, and which of them count: a run in which no pack with the trouble had so many cannot tell it. */
  readonly sessions?: {
    readonly what: string;
    needed(opts: DeriveOptions): number;
    counts(session: ChargingRow, opts: DeriveOptions): boolean;
  };
}

/** A charging session as read back (`charging`, standing, of one pack). */
export interface ChargingRow {
  vehicleno: string;
  pack: string;
  capacityAhEstimate?: number;
  socEnd?: number;
}

/** The BMS's health: sessions that estimated the pack's capacity (charging.ts). */
const ESTIMATING = { what: 'estimating its capacity', counts: (c: ChargingRow) => c.capacityAhEstimate !== undefined };

/** Each pack event's trouble in the emulated fleet: the one place a new kind is added. */
export const PACK_TROUBLES: Readonly<Record<string, PackTrouble>> = {
  pack_heating_fast: { truth: 'heatsFast, under load', of: (f, v) => f.heatsFast(v), at: (f, v, t) => f.heatingFastSince(v, t) !== undefined },
  pack_sensor_apart: { truth: 'none: no emulated sensor strays from the others', of: () => false },
  pack_c_rate_high: { truth: 'none: the emulated currents stay under 1.7 C', of: () => false },
  bms_soh_disagrees: { truth: 'sohStuck', of: (f, v) => f.sohStuck(v), sessions: { ...ESTIMATING, needed: (o) => o.capacitySohSessions } },
  // The soh unchanged while an estimate fell below an earlier one's bounds: two estimates at the least.
  bms_soh_stuck: { truth: 'sohStuck', of: (f, v) => f.sohStuck(v), sessions: { ...ESTIMATING, needed: () => 2 } },
  // (The drift goes with the vehicle: on swapped packs no pack sees it grow, and none is told.)
  cell_drifting: {
    truth: 'driftingCell',
    of: (f, v) => f.driftingCell(v) !== undefined,
    sessions: { what: 'ending at CELL_DRIFT_FULL_SOC or over', needed: (o) => o.cellDriftSessions, counts: (c, o) => c.socEnd !== undefined && c.socEnd >= o.cellDriftFullSoc },
  },
};

/** The hottest of a vehicle's fitted sensors (`sensors`, the emulator's truth) in a record's or a state's CAN data; undefined when it carries none. */
export function hottestOf(data: Readonly<Record<string, unknown>>, sensors: number): number | undefined {
  let hottest: number | undefined;
  for (let i = 1; i <= sensors; i++) {
    const x = data[`cell_temperature_${String(i).padStart(2, '0')}`];
    if (typeof x === 'number' && (hottest === undefined || x > hottest)) hottest = x;
  }
  return hottest;
}

interface Watched {
  v: VehicleProfile;
  /** (time, hottest fitted sensor) of each acknowledged CAN record that carried one, as they came. */
  readings: number[];
  /** Times of acknowledged CAN records carrying `alert_over_temp` 1 with the pack too hot (not a random flag). */
  alarms: number[];
}

/**
 * What the acknowledged records carried of the packs that heat fast (the feed's `onAck`): their hottest
 * sensor and their thermal alarms. A few in a fleet (one in two hundred), a few values a record of theirs.
 */
export class HeatWatch {
  readonly packs = new Map<string, Watched>();

  constructor(private readonly fleet: Fleet) {
    for (const v of fleet.vehicles) if (fleet.heatsFast(v)) this.packs.set(v.vehicleno, { v, readings: [], alarms: [] });
  }

  add(records: readonly AckedRecord[]): void {
    for (const r of records) {
      if (r.type !== 'can') continue;
      const w = this.packs.get(r.vehicleno);
      if (!w) continue;
      const t = Number(r.data.time);
      const n = w.v.battery.temperatureSensors;
      const hottest = hottestOf(r.data, n);
      if (hottest !== undefined) w.readings.push(t, hottest);
      // The emulator raises alert_over_temp at random too; the thermal alarm is the one of a pack too hot.
      if (r.data.alert_over_temp === 1 && (hottestOf(this.fleet.canStateAt(w.v, t), n) ?? -Infinity) >= OVER_TEMP_ALARM_C) w.alarms.push(t);
    }
  }
}

/** A pack event as read back from InfluxDB (standing: not retracted). */
export interface PackEvent {
  event: string;
  vehicleno: string;
  time: number;
  /** `pack_heating_fast`: the low its rise was measured from. */
  fromTemperature?: number;
}

/** What the soak read back of the packs at the end. */
export interface PackEvidence {
  /** The events of PACK_EVENTS and PACK_SWAP_EVENT. */
  events: readonly PackEvent[];
  packLifeRows: number;
  /** The charging sessions that told their pack. */
  charging: readonly ChargingRow[];
}

export interface PackReport {
  /** Rows in InfluxDB of each kind (PACK_EVENTS, battery_swapped, pack_life). */
  counts: Record<string, number>;
  /** Per kind of PACK_TROUBLES: packs of the fleet with the trouble, told on such packs, told where there was none. */
  troubles: Record<string, { truth: string; packs: number; told: number; healthy: number; sessions?: { what: string; needed: number; packs: number; most: number } }>;
  /** Pack events of a kind with no entry in PACK_TROUBLES (nothing to judge them by). */
  unjudged: Record<string, number>;
  /** The first events told of a pack without their trouble: vehicle, time, what. */
  onHealthy: string[];
  /** The heatings of fast-heating packs in which their thermal alarm came (see the module's comment). */
  heating: { packs: number; episodes: number; before: number; beforeEarlier: number; after: number; without: number; toldWithoutAlarm: number; begunBeforeFeed: number };
}

const MAX_LISTED = 10;
const iso = (t: number) => new Date(t).toISOString();

/** Judges the pack events of a run whose feed began at `feedStart`, by the service's settings `opts`. */
export function judgePacks(fleet: Fleet, watch: HeatWatch, evidence: PackEvidence, feedStart: number, opts: DeriveOptions): PackReport {
  const counts: Record<string, number> = Object.fromEntries([...PACK_EVENTS, PACK_SWAP_EVENT].map((k) => [k, 0]));
  for (const e of evidence.events) counts[e.event] = (counts[e.event] ?? 0) + 1;
  counts.pack_life = evidence.packLifeRows;

  const troubles: PackReport['troubles'] = {};
  const onHealthy: string[] = [];
  const unjudged: Record<string, number> = {};
  for (const [kind, trouble] of Object.entries(PACK_TROUBLES)) {
    const troubled = new Set(fleet.vehicles.filter((v) => trouble.of(fleet, v)).map((v) => v.vehicleno));
    troubles[kind] = { truth: trouble.truth, packs: troubled.size, told: 0, healthy: 0 };
    if (trouble.sessions) {
      // Sessions that count, per vehicle and pack.
      const perPack = new Map<string, { vehicleno: string; n: number }>();
      for (const c of evidence.charging) {
        if (!trouble.sessions.counts(c, opts)) continue;
        const k = `${c.vehicleno}\n${c.pack}`;
        const p = perPack.get(k) ?? { vehicleno: c.vehicleno, n: 0 };
        p.n++;
        perPack.set(k, p);
      }
      const needed = trouble.sessions.needed(opts);
      const counts = [...perPack.values()];
      troubles[kind]!.sessions = { what: trouble.sessions.what, needed, packs: counts.filter((p) => troubled.has(p.vehicleno) && p.n >= needed).length, most: Math.max(0, ...counts.map((p) => p.n)) };
    }
  }
  for (const e of evidence.events) {
    if (e.event === PACK_SWAP_EVENT) continue;
    const trouble = PACK_TROUBLES[e.event];
    if (!trouble) {
      unjudged[e.event] = (unjudged[e.event] ?? 0) + 1;
      continue;
    }
    const v = fleet.vehicle(e.vehicleno);
    const has = v !== undefined && trouble.of(fleet, v) && (trouble.at?.(fleet, v, e.time) ?? true);
    const t = troubles[e.event]!;
    if (has) t.told++;
    else {
      t.healthy++;
      const why = v === undefined ? 'a vehicle the fleet has not' : trouble.of(fleet, v) ? 'its pack not in that trouble then' : 'its pack without that trouble';
      if (onHealthy.length < MAX_LISTED) onHealthy.push(`${e.vehicleno} at ${iso(e.time)}: ${e.event}, ${why} (truth: ${trouble.truth})`);
    }
  }
  return { counts, troubles, unjudged, onHealthy, heating: judgeHeating(fleet, watch, evidence.events, feedStart) };
}

function judgeHeating(fleet: Fleet, watch: HeatWatch, events: readonly PackEvent[], feedStart: number): PackReport['heating'] {
  const out = { packs: watch.packs.size, episodes: 0, before: 0, beforeEarlier: 0, after: 0, without: 0, toldWithoutAlarm: 0, begunBeforeFeed: 0 };
  for (const [vehicleno, w] of watch.packs) {
    const warnings = events.filter((e) => e.event === 'pack_heating_fast' && e.vehicleno === vehicleno).sort((a, b) => a.time - b.time);
    // Each heating's first thermal alarm, by the heating's start.
    const alarms = new Map<number, number>();
    for (const a of w.alarms) {
      const since = fleet.heatingFastSince(w.v, a);
      const first = since === undefined ? undefined : alarms.get(since);
      if (since !== undefined && (first === undefined || a < first)) alarms.set(since, a);
    }
    const readings: Array<[number, number]> = [];
    for (let i = 0; i < w.readings.length; i += 2) readings.push([w.readings[i]!, w.readings[i + 1]!]);
    readings.sort((a, b) => a[0] - b[0]);
    for (const [since, alarm] of alarms) {
      if (since < feedStart) {
        out.begunBeforeFeed++;
        continue;
      }
      out.episodes++;
      const last = warnings.filter((e) => e.time < alarm).at(-1);
      if (last && last.time >= since) out.before++;
      // Told in an earlier heating, and the pack never back down to the low that warning rose from: one episode to the service.
      else if (last && !readings.some(([t, h]) => t > last.time && t < alarm && h <= (last.fromTemperature ?? -Infinity))) out.beforeEarlier++;
      else if (warnings.some((e) => e.time >= alarm && fleet.heatingFastSince(w.v, e.time) === since)) out.after++;
      else out.without++;
    }
    for (const e of warnings) {
      const since = fleet.heatingFastSince(w.v, e.time);
      if (since !== undefined && !alarms.has(since)) out.toldWithoutAlarm++;
    }
  }
  return out;
}

/** The report's lines of a judgement: its checks (a failure fails the soak), the heating's target (it does not), and the counts. */
export function packVerdicts(r: PackReport): {
  checks: Array<{ name: string; ok: boolean | null; detail: string }>;
  target: { name: string; met: boolean | null; detail: string };
  counts: string;
} {
  const kinds = Object.entries(r.troubles);
  const healthy = kinds.reduce((n, [, t]) => n + t.healthy, 0);
  const unjudged = Object.entries(r.unjudged);
  const checks: Array<{ name: string; ok: boolean | null; detail: string }> = [
    {
      name: 'pack events never for a pack without their trouble (the emulator\'s truth)',
      ok: healthy === 0 && unjudged.length === 0,
      detail: [
        kinds.map(([k, t]) => `${k} ${t.told} on the ${t.packs} packs with it (${t.truth}), ${t.healthy} on others`).join('; '),
        ...(unjudged.length > 0 ? [`no truth in PACK_TROUBLES for ${unjudged.map(([k, n]) => `${k} (${n} told)`).join(', ')}`] : []),
        ...(r.onHealthy.length > 0 ? [`first: ${r.onHealthy.join('; ')}`] : []),
      ].join('. '),
    },
  ];
  for (const [k, t] of kinds) {
    if (!t.sessions) continue;
    const enough = t.sessions.packs > 0 || t.told + t.healthy > 0;
    checks.push({
      name: `${k} only on packs with its trouble (${t.truth})`,
      ok: enough ? t.healthy === 0 : null,
      detail: `${enough ? `${t.told} on them, ${t.healthy} on others; ` : 'not enough sessions: '}${t.sessions.packs} of the ${t.packs} packs with the trouble had the ${t.sessions.needed} charging sessions ${t.sessions.what} it needs (the most of one pack in the run: ${t.sessions.most})`,
    });
  }
  const h = r.heating;
  const target = {
    name: 'pack_heating_fast told before the thermal alarm in every heating that reached it',
    met: h.episodes === 0 ? null : h.after === 0 && h.without === 0,
    detail:
      `${h.episodes} heatings of the ${h.packs} fast-heating packs, begun after the feed, reached alert_over_temp: ${h.before + h.beforeEarlier} told before ` +
      `(${h.beforeEarlier} of them in an earlier heating the pack had not cooled from), ${h.after} only after, ${h.without} not told; ` +
      `${h.toldWithoutAlarm} told in a heating that did not reach it (yet); ${h.begunBeforeFeed} begun before the feed, not judged`,
  };
  const counts = `pack events in InfluxDB: ${Object.entries(r.counts).map(([k, n]) => `${k}${k === 'pack_life' ? ' rows' : ''} ${n}`).join(', ')}`;
  return { checks, target, counts };
}
