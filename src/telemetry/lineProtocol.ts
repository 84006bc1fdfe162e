/**
 * Line protocol text, written by hand: `Point` of @influxdata/influxdb-client costs about three
 * times the rest of the pipeline per record, and our points have one fixed shape.
 * Correctness is held against the library's output and against a real influxd in tests.
 */

/** What a tag key or value escapes with a backslash: commas, equals signs and spaces; nothing else. */
const TAG_SPECIAL_CHARS = ',= ';
const TAG_SPECIAL = new RegExp(`[${TAG_SPECIAL_CHARS}]`);
const TAG_SPECIAL_ALL = new RegExp(`[${TAG_SPECIAL_CHARS}]`, 'g');
/** The same set by byte (UTF-8 leaves ASCII bytes alone, so escaping a tag's bytes is escaping its text). */
export const TAG_ESCAPED: Uint8Array = new Uint8Array(128);
for (const c of TAG_SPECIAL_CHARS) TAG_ESCAPED[c.charCodeAt(0)] = 1;

export function escapeTag(s: string): string {
  return TAG_SPECIAL.test(s) ? s.replace(TAG_SPECIAL_ALL, '\\$&') : s;
}

/**
 * A field name every InfluxDB version stores as it is: a letter, then letters, digits and _ (at most
 * 128; `_`-prefixed keys are reserved by Flux), so a field key never needs escaping.
 */
export const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;
export const FIELD_NAME_MAX = 128;
export function isFieldName(s: string): boolean {
  return FIELD_NAME.test(s);
}
/** The same rule by byte: `first` for a name's first byte. */
export function fieldNameByte(c: number, first: boolean): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (!first && ((c >= 0x30 && c <= 0x39) || c === 0x5f));
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

/** C0, DEL and C1 control characters: never part of a tag (a newline would start another line). */
export const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why `s` cannot be a tag value (or key), or undefined when it can: empty, a control character, or a
 * backslash line protocol cannot carry. The one rule every tag passes before it is written (`formatLine`,
 * and the record path's own validation of plates), whatever it came from.
 */
export function tagValueFaults(s: string): string | undefined {
  if (s.length === 0) return 'must not be empty';
  if (CONTROL_CHARS.test(s)) return 'must not contain control characters';
  return unrepresentableTag(s);
}

/** A point that cannot be written as given: named, so that it is refused and said why, never written raw. */
export class UnwritablePoint extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnwritablePoint';
  }
}

/**
 * A float field value. Every numeric field is written as a float whatever its value, so a
 * field never changes type between points (85 then 85.5 would otherwise conflict).
 * `String` gives the shortest text that reads back as the same double, which line protocol accepts.
 */
export function formatFloat(n: number): string {
  return Object.is(n, -0) ? '0' : String(n);
}

/**
 * One point as a line: tags sorted by key (InfluxDB's preferred order), every field a float, time in
 * milliseconds. For the few points built outside the record path (fuel readings, derived points);
 * the record path's hand-tuned copy of the same rules is `src/ingest/flatten/flatten.ts`. A tag or field
 * that line protocol cannot carry as given (a geofence's name, a plate from the upstream) throws
 * UnwritablePoint naming it: refused, never written raw into another line.
 */
export function formatLine(measurement: string, tags: Readonly<Record<string, string>>, fields: Readonly<Record<string, number>>, timeMs: number): string {
  const keys = Object.keys(tags).sort();
  for (const k of keys) {
    const fault = tagValueFaults(k) ?? tagValueFaults(tags[k]!);
    if (fault !== undefined) throw new UnwritablePoint(`${measurement} tag ${JSON.stringify(k)}=${JSON.stringify(tags[k])}: ${fault}`);
  }
  const names = Object.keys(fields);
  if (names.length === 0) throw new UnwritablePoint(`${measurement}: a point has at least one field`);
  for (const k of names) {
    if (!FIELD_NAME.test(k)) throw new UnwritablePoint(`${measurement} field ${JSON.stringify(k)}: a field name is a letter, then letters, digits and _`);
    if (!Number.isFinite(fields[k])) throw new UnwritablePoint(`${measurement} field ${k}=${fields[k]}: not a finite number`);
  }
  if (!Number.isSafeInteger(timeMs)) throw new UnwritablePoint(`${measurement}: time ${timeMs} is not a whole number of milliseconds`);
  const tagText = keys.map((k) => `,${escapeTag(k)}=${escapeTag(tags[k]!)}`).join('');
  const fieldText = names.map((k) => `${k}=${formatFloat(fields[k]!)}`).join(',');
  return `${measurement.replace(/[, ]/g, '\\$&')}${tagText} ${fieldText} ${timeMs}`;
}
