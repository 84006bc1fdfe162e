import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import { fieldPick, type FieldPick, type WrittenRecord } from '../../telemetry/record.js';
import { DERIVE_FIELDS } from '../events/inputs.js';
import { chargingCurrent, type CurrentSign } from '../../telemetry/current.js';
import { partitionOf, type FleetKeys } from '../queue/keys.js';
import { LATEST_FIELDS, type LatestField, type LatestValues, type Timed } from './model.js';

/**
 * Each vehicle's latest values, kept by the workers for the command ledger: nothing else keeps a
 * vehicle's speed, ignition, soc or its pack's allow flags as values (the events' state holds them
 * encoded, per stream, for derivation). A hash beside each partition's fleet state (FleetKeys.latest),
 * one field a vehicle (about 500 bytes with every value known, `ledger.test.ts`): memory follows the fleet, and a vehicle expired from the
 * fleet (VEHICLE_EXPIRY) is removed from it too. Written after InfluxDB confirmed the records, with the
 * fleet's last seen, one script a batch (`commands-latest-1.lua`), newest by record time whatever order
 * records arrive in.
 *
 * Besides each field's newest value, the newest time the vehicle was seen **active** (a fix with the
 * ignition on or over MOTION_SPEED, with that fix's position), **charging** and **discharging** (a CAN
 * record's `load_status` 2 / 1 where sent, else its current's sign and size as the charging detector
 * reads it): a bulk that holds a moving fix followed by a standing one still says the vehicle moved.
 */

/** What a worker reads of each written record: the events' fields and the pack's allow flags (the events' slots first, unchanged). */
export const COMMANDS_PICK: FieldPick = fieldPick([...new Set([...DERIVE_FIELDS, 'allow_charging', 'allow_discharging'])]);

export interface ActivityRules {
  /** MOTION_SPEED, km/h. */
  motionSpeedKmh: number;
  /** CURRENT_SIGN_FROM, CHARGING_CURRENT_SIGN. */
  currentSign: CurrentSign;
  /** CHARGING_MIN_CURRENT, A. */
  chargingMinCurrentA: number;
}

type Update = { f: Partial<Record<LatestField, Timed>>; a?: [number, number, number, number, number]; ch?: number; dis?: number };

type WithScript = { telematicsCommandsLatest(key: string, ...args: string[]): Promise<number> };

export class LatestValuesStore {
  private readonly slots: ReadonlyMap<LatestField, number>;

  constructor(
    readonly redis: RedisClient,
    /** One entry per partition. */
    readonly partitions: readonly FleetKeys[],
    readonly rules: ActivityRules,
    readonly pick: FieldPick = COMMANDS_PICK,
  ) {
    defineScript(redis, 'telematicsCommandsLatest', 'commands-latest-1');
    this.slots = new Map(LATEST_FIELDS.flatMap((name) => (pick.names.includes(name) ? [[name, pick.names.indexOf(name)] as const] : [])));
  }

  /** Merges what a batch of partition `partition`'s written records says (records read with `pick`). */
  async record(partition: number, records: readonly WrittenRecord[]): Promise<void> {
    const byVehicle = new Map<string, Update>();
    const { motionSpeedKmh, currentSign, chargingMinCurrentA } = this.rules;
    for (const r of records) {
      if (!r.values || r.at === undefined) continue;
      let u = byVehicle.get(r.vehicleno);
      const value = (name: LatestField): number => {
        const slot = this.slots.get(name);
        return slot === undefined ? NaN : r.values![r.at! + slot]!;
      };
      for (const [name] of this.slots) {
        const v = value(name);
        if (Number.isNaN(v)) continue;
        u ??= { f: {} };
        const had = u.f[name];
        if (had === undefined || r.time >= had[0]) u.f[name] = [r.time, v];
      }
      if (u === undefined) continue;
      byVehicle.set(r.vehicleno, u);
      const ign = value('ignstatus');
      const speed = value('speed');
      if (ign === 1 || speed > motionSpeedKmh) {
        if (u.a === undefined || r.time >= u.a[0]) u.a = [r.time, value('lat'), value('lng'), Number.isNaN(speed) ? -1 : speed, Number.isNaN(ign) ? -1 : ign];
      }
      const load = value('load_status');
      const current = value('current');
      // Where load_status is sent it decides; else the current's direction, when it tells one (NaN compares false).
      const signed = Number.isNaN(load) ? chargingCurrent(current, undefined, currentSign) : NaN;
      const charging = load === 2 || signed >= chargingMinCurrentA;
      const discharging = load === 1 || -signed >= chargingMinCurrentA;
      if (charging && (u.ch === undefined || r.time > u.ch)) u.ch = r.time;
      if (discharging && (u.dis === undefined || r.time > u.dis)) u.dis = r.time;
    }
    if (byVehicle.size === 0) return;
    const args: string[] = [String(byVehicle.size)];
    // NaN (a position the fix lacked) is no JSON number: null, read back as unknown.
    for (const [v, u] of byVehicle) args.push(v, JSON.stringify(u));
    await (this.redis as unknown as WithScript).telematicsCommandsLatest(this.partitions[partition]!.latest, ...args);
  }

  /** One vehicle's latest values, or undefined when none were kept. */
  async of(vehicleno: string): Promise<LatestValues | undefined> {
    const k = this.partitions[partitionOf(vehicleno, this.partitions.length)]!;
    return parseLatest(await this.redis.hget(k.latest, vehicleno));
  }
}

/** The stored JSON as LatestValues (format in src/formats/README.md "Latest values"); undefined for none. */
export function parseLatest(json: string | null): LatestValues | undefined {
  if (json === null) return undefined;
  const raw = JSON.parse(json) as { f?: Record<string, [number, number | null]>; a?: [number, number | null, number | null, number, number]; ch?: number; dis?: number };
  const fields: LatestValues['fields'] = {};
  for (const name of LATEST_FIELDS) {
    const tv = raw.f?.[name];
    if (Array.isArray(tv) && typeof tv[0] === 'number' && typeof tv[1] === 'number') fields[name] = [tv[0], tv[1]];
  }
  const out: LatestValues = { fields };
  if (Array.isArray(raw.a)) out.active = [raw.a[0], raw.a[1] ?? NaN, raw.a[2] ?? NaN, raw.a[3], raw.a[4]];
  if (typeof raw.ch === 'number') out.charging = raw.ch;
  if (typeof raw.dis === 'number') out.discharging = raw.dis;
  return out;
}
