/**
 * Line protocol text, written by hand: `Point` of @influxdata/influxdb-client costs about three
 * times the rest of the pipeline per record, and our points have one fixed shape.
 * Correctness is held against the library's output and against a real influxd in tests.
 */

const TAG_SPECIAL = /[,= ]/;
const TAG_SPECIAL_ALL = /[,= ]/g;

/** Tag keys and values: commas, equals signs and spaces are escaped; nothing else is. */
export function escapeTag(s: string): string {
  return TAG_SPECIAL.test(s) ? s.replace(TAG_SPECIAL_ALL, '\\$&') : s;
}

/**
 * Why a tag value cannot be written so that it reads back the same, or undefined when it can.
 * InfluxDB's parser keeps a backslash literally except before a comma, space or equals sign,
 * where it becomes an escape; so a backslash there, or at the end, is lost or breaks the line.
 */
export function unrepresentableTag(s: string): string | undefined {
  // Both rules are about backslashes; most plates have none.
  if (!s.includes('\\')) return undefined;
  if (/\\$/.test(s)) return 'must not end with a backslash (InfluxDB line protocol cannot store it)';
  if (/\\[,= ]/.test(s)) {
    return 'must not have a backslash before a comma, space or equals sign (InfluxDB line protocol cannot store it)';
  }
  return undefined;
}

/**
 * A float field value. Every numeric field is written as a float whatever its value, so a
 * field never changes type between points (85 then 85.5 would otherwise conflict).
 * `String` gives the shortest text that reads back as the same double, which line protocol accepts.
 */
export function formatFloat(n: number): string {
  return Object.is(n, -0) ? '0' : String(n);
}

/** Tag keys that need escaping are rare; field keys are restricted at validation to letters, digits and _. */
const FIELD_KEY_SPECIAL = /[,= \\]/;

/**
 * One point as a line: tags sorted by key (InfluxDB's preferred order), every field a float, time in
 * milliseconds. For the few points built outside the record path (fuel readings, derived points);
 * the record path's hand-tuned copy of the same rules is `src/ingest/flatten/flatten.ts`.
 */
export function formatLine(measurement: string, tags: Readonly<Record<string, string>>, fields: Readonly<Record<string, number>>, timeMs: number): string {
  const tagText = Object.keys(tags)
    .sort()
    .map((k) => `,${escapeTag(k)}=${escapeTag(tags[k]!)}`)
    .join('');
  const fieldText = Object.keys(fields)
    .map((k) => `${FIELD_KEY_SPECIAL.test(k) ? escapeTag(k) : k}=${formatFloat(fields[k]!)}`)
    .join(',');
  return `${measurement.replace(/[, ]/g, '\\$&')}${tagText} ${fieldText} ${timeMs}`;
}
