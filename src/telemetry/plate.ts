import { VEHICLENO_MAX } from './record.js';
import { CONTROL_CHARS, unrepresentableTag } from './lineProtocol.js';

/**
 * What a plate (`vehicleno`) may be: it becomes an InfluxDB tag value, so no control characters, not
 * blank, nothing line protocol cannot store; at most VEHICLENO_MAX characters. One definition for the
 * validator (`plateFaults`, which words every fault) and the receiver's scanner (`plainPlateByte`, a
 * byte-level subset it checks as it reads: a plate of such bytes, not all spaces, has no fault).
 */

const NO_FAULTS: readonly string[] = [];

/** A byte that cannot make a plate faulty: printable ASCII other than the backslash. */
export function plainPlateByte(c: number): boolean {
  return c >= 0x20 && c < 0x7f && c !== 0x5c;
}

/** A plate of `length` plain bytes, `blank` when all spaces: whether it is a plate at all. */
export function plainPlate(length: number, blank: boolean): boolean {
  return length > 0 && length <= VEHICLENO_MAX && !blank;
}

/**
 * What keeps a non-empty plate from being a tag, in the order zod reports it. Control characters
 * cannot be written as an InfluxDB tag and are never a real plate or id.
 */
export function plateFaults(s: string): readonly string[] {
  const control = CONTROL_CHARS.test(s);
  const blank = s.length > 0 && s.trim().length === 0;
  const why = unrepresentableTag(s);
  if (!control && !blank && why === undefined) return NO_FAULTS;
  const faults: string[] = [];
  if (control) faults.push('must not contain control characters');
  if (blank) faults.push('must not be blank');
  if (why !== undefined) faults.push(why);
  return faults;
}
