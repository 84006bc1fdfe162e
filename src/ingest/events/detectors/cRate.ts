import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { BATTERY_SWAP_SLICE, type BatterySwapState } from './batterySwap.js';
import { emitEvent, type Context, type Slice } from './context.js';
import { detector } from './detector.js';
import { gapBefore } from './gap.js';
import { packIdOf } from './pack.js';
import { lasted } from './spell.js';

/**
 * A pack worked hard for long: `pack_c_rate_high` once its C-rate (|current| / `battery_capacity`, A per
 * Ah, charging or discharging) stayed over PACK_C_RATE_HIGH from a record to one at least
 * PACK_C_RATE_MIN_DURATION later, every record between over it too; stamped at the spell's first record,
 * told once a spell, with its highest and mean C-rate (of its records) and how long it had lasted. A
 * record at or under the bound, or a gap over EVENTS_MAX_GAP, ends the spell; acceleration and
 * regenerative braking peak for seconds and never last. The capacity is the record's, else the last the
 * pack reported (a record carries a varying subset); none yet, nothing is judged. Tagged with the pack
 * (`pack.ts`).
 */
export interface CRateState {
  /** The last capacity reported (Ah; NaN: none yet). */
  capacity: number;
  /** The spell over the bound: its first record (NaN: none), its last, its highest C-rate, their sum and count, 1 once told. */
  since: number;
  last: number;
  max: number;
  sum: number;
  count: number;
  told: number;
}

/** No spell: its fields as fresh (what a state stored without them reads back as, C_RATE_SLICE). */
function endSpell(s: CRateState): void {
  s.since = s.last = NaN;
  s.max = s.sum = s.count = s.told = 0;
}

export function cRateRecord(ctx: Context, s: CRateState, swap: Readonly<BatterySwapState>, r: StreamRecord, plan: StreamPlan): void {
  const capacity = valueOf(r, plan.capacityAt);
  if (capacity !== undefined && capacity > 0) s.capacity = capacity;
  const current = valueOf(r, plan.currentAt);
  if (current === undefined || !(s.capacity > 0)) return;
  const c = Math.abs(current) / s.capacity;
  if (c <= ctx.opts.packCRateHigh || (s.since === s.since && gapBefore(ctx, s.last, r.time))) endSpell(s);
  if (c <= ctx.opts.packCRateHigh) return;
  if (s.since !== s.since) s.since = r.time;
  s.last = r.time;
  s.max = Math.max(s.max, c);
  s.sum += c;
  s.count++;
  if (s.told === 0 && lasted(s.since, r.time, ctx.opts.packCRateMinDurationMs)) {
    s.told = 1;
    const pack = packIdOf(swap.bmsId, swap.batteryId);
    emitEvent(ctx, 'pack_c_rate_high', s.since, 1, { c_rate_max: s.max, c_rate_mean: s.sum / s.count, duration_s: (r.time - s.since) / 1000, limit_c: ctx.opts.packCRateHigh }, pack === pack ? { pack: String(pack) } : undefined);
  }
}

/**
 * Stored: the capacity, then, during a spell only, since, last, max, sum, count, told (a vehicle's state is
 * written on every commit, and a pack is seldom over the bound: a spell's six doubles are not written for nothing).
 */
export const C_RATE_SLICE: Slice<CRateState> = {
  id: 20,
  name: 'c-rate',
  fresh: () => ({ capacity: NaN, since: NaN, last: NaN, max: 0, sum: 0, count: 0, told: 0 }),
  save(s, out, at) {
    out[at] = s.capacity;
    if (s.since !== s.since) return at + 1;
    out[at + 1] = s.since;
    out[at + 2] = s.last;
    out[at + 3] = s.max;
    out[at + 4] = s.sum;
    out[at + 5] = s.count;
    out[at + 6] = s.told;
    return at + 7;
  },
  load(x) {
    const s = C_RATE_SLICE.fresh();
    s.capacity = x(0);
    if (x(1) === x(1)) {
      s.since = x(1);
      s.last = x(2);
      s.max = x(3);
      s.sum = x(4);
      s.count = x(5);
      s.told = x(6) === 1 ? 1 : 0;
    }
    return s;
  },
};

/** The cRate detector, declared once (detector.ts); ../kinds.ts lists it. */
export const C_RATE_DETECTOR = detector({
  key: 'cRate',
  slice: C_RATE_SLICE,
  fields: ['currentAt', 'capacityAt'],
  reads: { batterySwap: BATTERY_SWAP_SLICE },
  on: { pack: (ctx, s, r, plan) => cRateRecord(ctx, s.cRate, s.batterySwap, r, plan) },
  input: "CAN `current`, `battery_capacity`; the pack's ids (`batterySwap`)",
  settings: ['PACK_C_RATE_HIGH', 'PACK_C_RATE_MIN_DURATION'],
  derives: "`pack_c_rate_high` (`c_rate_max`, `c_rate_mean`, `duration_s`, `limit_c`; tag `pack`)",
  rules: "\\|current\\| / `battery_capacity` (the last reported) over `PACK_C_RATE_HIGH` (2 C) on every record from one to one at least `PACK_C_RATE_MIN_DURATION` (60 s) later (`lasted`), stamped at the first; once a spell; a record at or under it, or a gap over `EVENTS_MAX_GAP`, ends the spell (braking and acceleration peaks last seconds)",
  outputs: [
    {
      events: ['pack_c_rate_high'],
      shown: '`pack_c_rate_high`',
      measurement: VEHICLE_EVENTS,
      fields: [
        { name: 'c_rate_max', meaning: 'the highest C-rate of the spell so far' },
        { name: 'c_rate_mean', meaning: 'the mean C-rate of its records' },
        { name: 'duration_s', meaning: 'how long it had lasted when told' },
        { name: 'limit_c', meaning: 'the bound, `PACK_C_RATE_HIGH`' },
        { name: 'pack', meaning: 'the pack’s id (tag): `bms_id`, else `bat_id_1`, where the vehicle reported one' },
      ],
      what: 'a pack’s current over `PACK_C_RATE_HIGH` × its capacity for `PACK_C_RATE_MIN_DURATION`',
    },
  ],
});
