import { FIELD_DICTIONARY } from '../../telemetry/fields.js';
import { MAX_PARAMETERS } from '../../telemetry/record.js';
import { packKind, sensorNumber } from './packHealth.js';

/**
 * Field names by slot: the dictionary's names at their wire ids, then the names outside it that
 * records have carried (a CAN object is dynamic), so that both the receiver's scanner (by the bytes
 * of a name) and the general path (by the string) find what a name is to the flatten rules once per
 * name, not once per value. Bounded: past EXTRA_MAX names outside the dictionary, those are forgotten
 * at the start of a record (a slot is only ever held for the record being written).
 */
export const DICTIONARY_SIZE = FIELD_DICTIONARY.length;
/** Names outside the dictionary remembered at most; a record adds at most MAX_PARAMETERS (256). */
const EXTRA_MAX = 4_096;
/** Names one record may add: its parameters, and a few that a record refused later had. */
const RECORD_MAX = MAX_PARAMETERS + 16;
export const SLOTS = DICTIONARY_SIZE + EXTRA_MAX;

export class NameTable {
  /** The name of each slot. */
  readonly names: string[] = [...FIELD_DICTIONARY];
  /** Its bytes (names are ASCII: letters, digits and _). */
  readonly bytes: Buffer[] = FIELD_DICTIONARY.map((n) => Buffer.from(n, 'latin1'));
  /** What the name is to the battery rule: a temperature sensor's number (-1: none), and its pack-health kind. */
  readonly sensor = new Int32Array(SLOTS);
  readonly pack = new Int32Array(SLOTS);
  /** Bumped when the names outside the dictionary are forgotten: caches by slot start again. */
  generation = 0;
  private readonly byName = new Map<string, number>();
  private readonly byHash = new Map<number, number>();
  /** Slots whose hash another name shares: found by comparing bytes. */
  private readonly collisions = new Map<number, number[]>();

  constructor() {
    for (let s = 0; s < DICTIONARY_SIZE; s++) this.index(s);
  }

  /** A record begins: room for all its names. */
  beginRecord(): void {
    if (this.names.length + RECORD_MAX <= SLOTS) return;
    this.names.length = this.bytes.length = DICTIONARY_SIZE;
    this.byName.clear();
    this.byHash.clear();
    this.collisions.clear();
    for (let s = 0; s < DICTIONARY_SIZE; s++) this.index(s);
    this.generation++;
  }

  /** The slot of a valid field name (added when new). */
  slotOf(name: string): number {
    const s = this.byName.get(name);
    return s !== undefined ? s : this.add(name, Buffer.from(name, 'latin1'));
  }

  /** The slot of the name in bytes `from`..`to` whose hash is `h` (`hashName`), or -1 when it has none yet. */
  find(b: Uint8Array, from: number, to: number, h: number): number {
    const s = this.byHash.get(h);
    if (s === undefined) return -1;
    if (sameBytes(this.bytes[s]!, b, from, to)) return s;
    for (const c of this.collisions.get(h) ?? []) if (sameBytes(this.bytes[c]!, b, from, to)) return c;
    return -1;
  }

  /** A slot for the name in bytes `from`..`to`, which the caller found to have none and checked is a valid field name. */
  addBytes(b: Uint8Array, from: number, to: number): number {
    const bytes = Buffer.from(b.subarray(from, to));
    return this.add(bytes.toString('latin1'), bytes);
  }

  private add(name: string, bytes: Buffer): number {
    const s = this.names.length;
    if (s >= SLOTS) throw new Error('name table: more names in one record than a record may carry');
    this.names.push(name);
    this.bytes.push(bytes);
    this.index(s);
    return s;
  }

  private index(s: number): void {
    const name = this.names[s]!;
    const bytes = this.bytes[s]!;
    this.byName.set(name, s);
    const h = hashName(bytes, 0, bytes.length);
    if (!this.byHash.has(h)) this.byHash.set(h, s);
    else {
      const list = this.collisions.get(h) ?? [];
      list.push(s);
      this.collisions.set(h, list);
    }
    this.sensor[s] = sensorNumber(name);
    this.pack[s] = packKind(name);
  }
}

/** FNV-1a of a name's bytes; the scanner computes the same as it reads a name (FNV_OFFSET, FNV_PRIME). */
export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;
export function hashName(b: Uint8Array, from: number, to: number): number {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i]!, FNV_PRIME);
  return h >>> 0;
}

function sameBytes(name: Buffer, b: Uint8Array, from: number, to: number): boolean {
  if (name.length !== to - from) return false;
  for (let k = 0; k < name.length; k++) if (name[k] !== b[from + k]) return false;
  return true;
}

/** The process's one table: writing a record is synchronous. */
export const NAMES = new NameTable();
