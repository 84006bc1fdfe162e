import { PACK_VALUES } from '../packValues.js';
import { influxSelect, quoteIdent, quoteString, timeLiteral, type InfluxTarget } from '../../read/influxql.js';
import { RECORD_TYPES } from '../../../telemetry/vehicleData.js';
import { inputOf, STREAM_BY_ID, valueAt, type EventInput, type StreamPlan, type StreamRecord } from '../inputs.js';

/**
 * A vehicle's records for a correction's replay, read back from InfluxDB, which holds every record the
 * service stored (README.md beside this file, "Where the records come from"): per stream, the fields
 * derivation reads, after a time and up to another, with InfluxQL (every version answers it), in pages.
 * A record carrying none of those fields is no row, as it is no record to derivation.
 */
export interface RecordSource {
  /** Each stream's records after `after` and up to `until` (by stream id), oldest first. */
  read(vehicleno: string, after: ReadonlyMap<number, number>, until: ReadonlyMap<number, number>): Promise<EventInput[]>;
}

/** Rows a page asks for: a day of a record a second, four pages. */
const PAGE = 25_000;

const MEASUREMENT = new Map(RECORD_TYPES.map((t) => [t.name, t.measurement]));

/**
 * The fields of a stream's records derivation reads, as InfluxDB stores them: its named values', the fields
 * its pack values are computed from (a pack value, `pack:…`, is no field: a record read back has them
 * computed again, as at its arrival), and its alarms'.
 */
export const fieldsOf = (plan: StreamPlan): string[] => [...plan.fields.filter((f) => !PACK_VALUE_NAMES.has(f)), ...(plan.pack?.names ?? []), ...plan.alarms.map((a) => a.name)];
const PACK_VALUE_NAMES: ReadonlySet<string> = new Set(PACK_VALUES.map((v) => v.name));

export class InfluxRecordSource implements RecordSource {
  constructor(private readonly target: InfluxTarget) {}

  async read(vehicleno: string, after: ReadonlyMap<number, number>, until: ReadonlyMap<number, number>): Promise<EventInput[]> {
    const out: EventInput[] = [];
    for (const [streamId, from] of after) {
      const plan = STREAM_BY_ID.get(streamId)!;
      const to = until.get(streamId) ?? -Infinity;
      if (!(to > from)) continue;
      const fields = fieldsOf(plan);
      let since = from;
      for (;;) {
        const where = [`${quoteIdent('vehicleno')} = ${quoteString(vehicleno)}`, `time <= ${timeLiteral(to)}`];
        if (since > -Infinity) where.push(`time > ${timeLiteral(since)}`);
        const q = `SELECT ${fields.map(quoteIdent).join(', ')} FROM ${quoteIdent(MEASUREMENT.get(plan.name)!)} WHERE ${where.join(' AND ')} ORDER BY time ASC LIMIT ${PAGE}`;
        const rows = await influxSelect(this.target, q);
        for (const row of rows) {
          const values: Record<string, number> = {};
          for (const f of fields) {
            const v = row[f];
            if (typeof v === 'number') values[f] = v;
            else if (typeof v === 'boolean') values[f] = v ? 1 : 0;
          }
          out.push(inputOf(plan.name, Number(row.time), values));
        }
        if (rows.length < PAGE) break;
        since = Number(rows[rows.length - 1]!.time);
      }
    }
    return out;
  }
}

/** A stream's record (pending or held) as the input it came from, for a replay that has it from Redis. */
export function inputOfRecord(plan: StreamPlan, r: StreamRecord): EventInput {
  const values: Record<string, number> = {};
  plan.fields.forEach((f, i) => {
    const x = valueAt(r, i);
    if (x === x) values[f] = x;
  });
  for (const a of plan.alarms) if (r.alarmMask & (1 << a.bit)) values[a.name] = (r.alarmValues >> a.bit) & 1;
  return inputOf(plan.name, r.time, values);
}
