import { VEHICLE_EVENTS } from '../../../telemetry/derivedMeasurements.js';
import { CURRENT, SOC as SOC_FIELD, VOLTAGE, valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';
import { alarmsOf, TYPES } from '../../../telemetry/fields.js';
import { detector } from './detector.js';
import { SOC_SLICE } from './soc.js';
import { lasted } from './spell.js';

const ALARMS = alarmsOf(TYPES.map((t) => t.spec));

/**
 * Alarms (ThingsBoard's alarm rules, one a flag): `<alert_*>_raised` when a record carries a flag at 1
 * that was 0, `_cleared` at 0 that was 1. Before its first record a vehicle's flags are 0, so a first
 * record raises what it already has at 1. A record that does not carry a flag changes nothing about it
 * (absent is not 0). Flags are kept by their frozen bit (the schema's `alarmBit`).
 *
 * **Noise is bounded, safety is not held back.** A flag that is no safety alarm (the schema's `safety`) is
 * emitted raised only once it held ALARM_MIN_DURATION (ThingsBoard's rule duration): at the first record of
 * its stream at least that long after the raise that did not clear it, stamped then, with `since` its
 * raise. A flag cleared before is emitted neither raised nor cleared. So a flag that flips every record
 * costs nothing, and a flag is emitted at most twice per ALARM_MIN_DURATION. A safety alarm (thermal
 * runaway, a short circuit) is emitted the moment a record raises it.
 */
export interface AlarmsState {
  /** Bit b set: the alarm whose alarmBit is b is raised (emitted). */
  raised: number;
  /** Bit b set: the alarm is at 1 since `since<b>`, not yet held ALARM_MIN_DURATION (not emitted). */
  pending: number;
  since0: number; since1: number; since2: number; since3: number; since4: number;
  since5: number; since6: number; since7: number; since8: number; since9: number;
  since10: number; since11: number; since12: number; since13: number; since14: number;
}

/** The `since<b>` keys, by bit: one a flag of the schema (a new flag's bit needs its own key here, at the slice's end). */
const SINCE_KEYS = Array.from({ length: 15 }, (_, b) => `since${b}` as keyof AlarmsState);
for (const a of ALARMS) if (a.bit >= SINCE_KEYS.length) throw new Error(`alarms: ${a.name}'s bit ${a.bit} has no since${a.bit} in the alarms slice`);

export function alarmRecord(ctx: Context, s: AlarmsState, r: StreamRecord, plan: StreamPlan, soc: number): void {
  const minMs = ctx.opts.alarmMinDurationMs;
  // What the record says against what is emitted or pending: flips of those emitted, and raises and clears of the pending.
  const at1 = r.alarmValues & r.alarmMask;
  const at0 = ~r.alarmValues & r.alarmMask;
  const cleared = s.raised & at0;
  const dropped = s.pending & at0;
  const raises = at1 & ~s.raised & ~s.pending;
  // Held long enough: pending flags the record does not clear, whose raise is ALARM_MIN_DURATION behind it.
  let held = 0;
  if (s.pending & ~dropped) {
    for (const a of plan.alarms) {
      const bit = 1 << a.bit;
      if ((s.pending & ~dropped & bit) !== 0 && lasted(s[SINCE_KEYS[a.bit]!] as number, r.time, minMs)) held |= bit;
    }
  }
  const atOnce = minMs <= 0 ? raises : raises & plan.safetyAlarms;
  if ((cleared | dropped | raises | held) === 0) return;
  s.pending &= ~dropped & ~held;
  s.raised = (s.raised & ~cleared) | atOnce | held;
  const waiting = raises & ~atOnce;
  s.pending |= waiting;
  if ((cleared | atOnce | held) === 0 && waiting === 0) return;
  for (const a of plan.alarms) {
    const bit = 1 << a.bit;
    if (waiting & bit) (s as unknown as Record<string, number>)[SINCE_KEYS[a.bit]!] = r.time;
    if ((cleared | atOnce | held) & bit) {
      const fields = readings(r, plan, soc);
      if (held & bit) fields.since = s[SINCE_KEYS[a.bit]!] as number;
      emitEvent(ctx, `${a.name}_${cleared & bit ? 'cleared' : 'raised'}`, r.time, cleared & bit ? 0 : 1, fields);
    }
  }
}

/** The soc (the record's, else the stream's last), voltage and current a record carried, as an event's fields. */
export function readings(r: StreamRecord, plan: StreamPlan, soc: number): Record<string, number> {
  const f: Record<string, number> = {};
  const sc = valueOf(r, plan.socAt) ?? (soc === soc ? soc : undefined);
  if (sc !== undefined) f[SOC_FIELD] = sc;
  const v = valueOf(r, plan.voltageAt);
  if (v !== undefined) f[VOLTAGE] = v;
  const i = valueOf(r, plan.currentAt);
  if (i !== undefined) f[CURRENT] = i;
  return f;
}

export const ALARMS_SLICE: Slice<AlarmsState> = flatSlice(2, 'alarms', ['raised', 'pending', ...SINCE_KEYS.filter((k) => k !== 'raised' && k !== 'pending')], () => ({
  raised: 0,
  pending: 0,
  ...(Object.fromEntries(SINCE_KEYS.map((k) => [k, Number.NaN])) as Omit<AlarmsState, 'raised' | 'pending'>),
}));

/** The alarms detector, declared once (detector.ts); ../kinds.ts lists it. */
export const ALARMS_DETECTOR = detector({
  key: 'alarms',
  slice: ALARMS_SLICE,
  fields: ['socAt', 'voltageAt', 'currentAt', 'alarms'],
  // An alarm carries the soc of its record, else the latest the CAN stream sent.
  reads: { soc: SOC_SLICE },
  on: { alarms: (ctx, s, r, plan) => alarmRecord(ctx, s.alarms, r, plan, s.soc.latest) },
  input: "CAN `alert_*`, with the record's `soc`, `battery_voltage`, `current` (the soc else the latest)",
  settings: ["ALARM_MIN_DURATION"],
  derives: "`<alarm>_raised` / `_cleared`",
  rules: "a flip of a carried flag (absent is not 0); flags kept by their frozen `alarmBit`; a flag that is no safety alarm (the schema's `safety`) emitted as raised once it held `ALARM_MIN_DURATION` (`since` its raise), one cleared before emitted neither way; **a safety alarm is never invented and never swallowed**: a record too late for its window changes nothing live, and its correction emits a raise outside an episode at its time, marked `late`, with its clearing, and nothing inside one ([corrections/](corrections/README.md))",
  outputs: [
    { events: ALARMS.flatMap((a) => [`${a.name}_raised`, `${a.name}_cleared`]), shown: "`<flag>_raised` / `<flag>_cleared`", measurement: VEHICLE_EVENTS, fields: [{ name: 'soc', meaning: "the state of charge (the record’s, else the last known)" }, { name: 'battery_voltage', meaning: "the record’s pack voltage" }, { name: 'current', meaning: "the record’s pack current" }, { name: 'since', meaning: "a raise told once it held `ALARM_MIN_DURATION`: when it was raised", on: ALARMS.map((a) => `${a.name}_raised`) }], what: "each of the 15 `alert_*` flags going 0 → 1 / 1 → 0; a vehicle's first record raises what is already 1. A safety alarm (`alert_thermal_runaway`, `alert_short_circuit`) is told the moment it is raised; any other once it held `ALARM_MIN_DURATION` (30 s), at the first record that shows it, with `since` its raise (one cleared before is told neither way, so a flapping flag is told at most twice per that span)" },
  ],
});
