import { CURRENT, SOC as SOC_FIELD, VOLTAGE, valueOf, type StreamPlan, type StreamRecord } from '../inputs.js';
import { emitEvent, flatSlice, type Context, type Slice } from './context.js';

/**
 * Alarms (ThingsBoard's alarm rules, one a flag): `<alert_*>_raised` when a record carries a flag at 1
 * that was 0, `_cleared` at 0 that was 1. Before its first record a vehicle's flags are 0, so a first
 * record raises what it already has at 1. A record that does not carry a flag changes nothing about it
 * (absent is not 0). Flags are kept by their frozen bit (the schema's `alarmBit`).
 *
 * **A safety alarm is never swallowed.** A record that comes too late for its stream's window changes
 * nothing else, but a raised flag the vehicle's state does not hold is told all the same: the raise at
 * the record's own time, marked `late: 1`. The flag is then held raised, so the next record in order
 * that carries it at 0 clears it (a clearing the late record came behind is not replayed).
 */
export interface AlarmsState {
  /** Bit b set: the alarm whose alarmBit is b is raised. */
  raised: number;
}

export function alarmRecord(ctx: Context, s: AlarmsState, r: StreamRecord, plan: StreamPlan, soc: number): void {
  const changed = (s.raised ^ r.alarmValues) & r.alarmMask;
  if (changed === 0) return;
  s.raised ^= changed;
  for (const a of plan.alarms) {
    if ((changed & (1 << a.bit)) === 0) continue;
    const x = (r.alarmValues >> a.bit) & 1;
    emitEvent(ctx, `${a.name}_${x === 1 ? 'raised' : 'cleared'}`, r.time, x, readings(r, plan, soc));
  }
}

/** A record behind its stream's watermark: only what it raises that is not raised is told, late. */
export function alarmLateRecord(ctx: Context, s: AlarmsState, r: StreamRecord, plan: StreamPlan, soc: number): void {
  const raises = r.alarmValues & r.alarmMask & ~s.raised;
  if (raises === 0) return;
  s.raised |= raises;
  for (const a of plan.alarms) if (raises & (1 << a.bit)) emitEvent(ctx, `${a.name}_raised`, r.time, 1, { ...readings(r, plan, soc), late: 1 });
}

/** The soc (the record's, else the stream's last), voltage and current a record carried, as an event's fields. */
export function readings(r: StreamRecord, plan: StreamPlan, soc: number): Record<string, number> {
  const f: Record<string, number> = {};
  const sc = valueOf(r, plan.soc) ?? (soc === soc ? soc : undefined);
  if (sc !== undefined) f[SOC_FIELD] = sc;
  const v = valueOf(r, plan.voltage);
  if (v !== undefined) f[VOLTAGE] = v;
  const i = valueOf(r, plan.current);
  if (i !== undefined) f[CURRENT] = i;
  return f;
}

export const ALARMS_SLICE: Slice<AlarmsState> = flatSlice(2, 'alarms', ['raised'], () => ({ raised: 0 }));
