/**
 * How a detector's slice of a vehicle's state is stored (src/ingest/events/wire.ts): as doubles (NaN
 * where a value is absent), under the slice's frozen id. A slice may gain doubles at its end: a state
 * stored before has fewer, and `load` gets NaN for the rest, so an upgrade keeps every stored state.
 */
export interface Slice<S> {
  /** Frozen: a stored state names its slices by it. */
  readonly id: number;
  readonly name: string;
  fresh(): S;
  /**
   * Writes its doubles into `out` from `at` (room for 255 there); returns where they end. `state`: the
   * vehicle state it is a slice of, for a double stored as a copy of a fact kept elsewhere (`flatSlice`'s
   * `copies`).
   */
  save(s: S, out: Float64Array, at: number, state?: unknown): number;
  /** From the doubles stored (NaN past what was stored). */
  load(x: (i: number) => number, stored: number): S;
}

export const orNaN = (x: number | undefined): number => (x === undefined ? NaN : x);

/**
 * A double a slice's layout holds that its detector no longer keeps: a copy of a fact kept once elsewhere
 * in the vehicle state (the GPS stream's last record time, the ignition), written from it for the release
 * before, which reads it there; never read back (the fact is).
 */
export type StoredCopy = (state: never) => number;

/**
 * The slice of a state that is a flat record of numbers: its `keys`, in the order stored (append only:
 * a key's place is the layout), each read back as stored, or as `fresh`'s value where none was; a key of
 * `copies` is written from its fact, and not read back.
 */
export function flatSlice<S extends { [K in keyof S]: number }, const C extends string = never>(
  id: number,
  name: string,
  keys: ReadonlyArray<keyof S | NoInfer<C>>,
  fresh: () => S,
  copies?: Readonly<Record<C, StoredCopy>>,
): Slice<S> {
  for (const k of keys) if (!/^[A-Za-z_$][\w$]*$/.test(String(k))) throw new Error(`vehicle events: slice ${name}: key ${String(k)} is not an identifier`);
  const copied = (k: keyof S | C): k is C => copies !== undefined && Object.hasOwn(copies, k);
  // Compiled once a slice, with each key a named property access: a loop over `keys` reads `s[key]` with
  // a key that changes every step, which V8 serves from its megamorphic cache (about a third of writing a
  // committed part, measured). The keys are identifiers from the code (checked above), never input.
  const body = keys.map((k, i) => (copied(k) ? `out[at + ${i}] = c.${String(k)}(state);` : `out[at + ${i}] = s.${String(k)};`)).join('\n');
  const save = new Function('c', `return function save(s, out, at, state) {\n${body}\nreturn at + ${keys.length};\n};`)(copies ?? {}) as Slice<S>['save'];
  return {
    id,
    name,
    fresh,
    save,
    load(x) {
      const s = fresh();
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const v = x(i);
        if (v === v && !copied(k)) (s as Record<keyof S, number>)[k] = v;
      }
      return s;
    },
  };
}
export const orUndefined = (x: number): number | undefined => (x === x ? x : undefined);
