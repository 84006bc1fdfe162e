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
  /**
   * Where a slice's save leaves out the doubles at its end that hold what a fresh state holds (`flatSlice`):
   * those doubles, by place, each what the slice reads an absent double as. For the checks that a state is
   * read exactly (wire.ts `sectionsLost`), which take a double left out as this one.
   */
  readonly leftOut?: Float64Array;
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
 *
 * A state is written on every commit, and most of a vehicle's slices hold what a fresh one does most of
 * the time (no trip open, no alarm raised, no spell under way): so the doubles at the slice's end that
 * hold `fresh`'s values are left out, and read back as absent, which `load` takes as `fresh`'s (as every
 * release's flatSlice has: a release before reads them exactly). Never a copy, nor anything before one:
 * a release that reads the copy reads it stored. `part`: the slice is a part of one (charging's), with
 * more after it, so every double is written.
 */
export function flatSlice<S extends { [K in keyof S]: number }, const C extends string = never>(
  id: number,
  name: string,
  keys: ReadonlyArray<keyof S | NoInfer<C>>,
  fresh: () => S,
  copies?: Readonly<Record<C, StoredCopy>>,
  part = false,
): Slice<S> {
  for (const k of keys) if (!/^[A-Za-z_$][\w$]*$/.test(String(k))) throw new Error(`vehicle events: slice ${name}: key ${String(k)} is not an identifier`);
  const copied = (k: keyof S | C): k is C => copies !== undefined && Object.hasOwn(copies, k);
  const template = fresh() as Record<keyof S, number>;
  const leftOut = Float64Array.from(keys, (k) => (copied(k) ? NaN : template[k as keyof S]));
  // The doubles that may be left out: those after the last copy.
  let kept = 0;
  keys.forEach((k, i) => {
    if (copied(k)) kept = i + 1;
  });
  if (part) kept = keys.length;
  // Compiled once a slice, with each key a named property access: a loop over `keys` reads `s[key]` with
  // a key that changes every step, which V8 serves from its megamorphic cache (about a third of writing a
  // committed part, measured). The keys are identifiers from the code (checked above), never input.
  const body = keys.map((k, i) => (copied(k) ? `out[at + ${i}] = c.${String(k)}(state);` : `out[at + ${i}] = s.${String(k)};`)).join('\n');
  // Fresh's doubles at the end left out: x is f, told apart from NaN and from -0 as Object.is does.
  const trim =
    kept === keys.length
      ? `return at + ${keys.length};`
      : `let end = at + ${keys.length};\nwhile (end > at + ${kept}) {\nconst x = out[end - 1], f = f0[end - 1 - at];\nif (x === f ? x === 0 && 1 / x !== 1 / f : x === x || f === f) break;\nend--;\n}\nreturn end;`;
  const save = new Function('c', 'f0', `return function save(s, out, at, state) {\n${body}\n${trim}\n};`)(copies ?? {}, leftOut) as Slice<S>['save'];
  return {
    id,
    name,
    fresh,
    save,
    ...(kept === keys.length ? {} : { leftOut }),
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
