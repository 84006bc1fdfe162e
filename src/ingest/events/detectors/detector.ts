import type { FieldAt, StreamPlan, StreamRecord } from '../inputs.js';
import type { Context, Step } from './context.js';
import type { DerivedMeasurement } from '../../../telemetry/derivedMeasurements.js';
import type { Slice } from './slice.js';

/**
 * A detector's declaration (one a module of this folder, as Traccar has one handler a kind of event):
 * its key and slice in the vehicle state, what it reads, the settings it takes, what it writes, and what
 * it does with a committed record (`on`). The list of them (`../kinds.ts`, `DETECTORS`) is the one place a
 * kind is added; the vehicle state, its slices, the order the detectors run in (`runOrder`, from what each
 * reads and writes into), the event names (the CLI's `--event`, its help) and the documentation's tables
 * are derived from it.
 */
export interface Detector<K extends string = string, S = unknown, V = unknown> {
  /** Its slice's key in the vehicle state (derive.ts `VehicleState`). */
  readonly key: K;
  /** Its state, stored under the slice's frozen id. */
  readonly slice: Slice<S>;
  /** The record fields it reads, by their place in a stream's record (`../inputs.ts` NAMED_FIELDS; `alarms`: every alarm). */
  readonly fields: readonly (FieldAt | 'alarms')[];
  /** What it reads, as the detectors' table says it: record fields, other detectors' state. */
  readonly input: string;
  /** Other detectors' slices it reads, by key (it does not change them): it runs after each of them. */
  readonly reads: readonly string[];
  /** Other detectors' slices it reads as the records before left them (it does not change them): it runs before each. */
  readonly readsBefore: readonly string[];
  /** Other detectors' slices it adds to before their detector takes the record (the time of an idle to the open trip): it runs before each. */
  readonly writesInto: readonly string[];
  /** Other detectors' slices it changes after their detector took the record (the trips settle the track at a trip's end): it runs after each. */
  readonly amends: readonly string[];
  /** Other detectors it runs after, or before, for what they change in a slice it reads (named so, as no slice of theirs says it). */
  readonly after: readonly string[];
  readonly before: readonly string[];
  /** What it does with a committed record, by what the record carries (derive.ts runs each `Phase` in turn). */
  readonly on: Hooks<V>;
  /** The settings it takes (their names, docs/operating.md). */
  readonly settings: readonly string[];
  /** What it derives, in the detectors' table (src/ingest/events/README.md). */
  readonly derives: string;
  /** Its rules, in the detectors' table. */
  readonly rules: string;
  /** Its outputs as operators and analysts meet them (docs/events.md); none for a slice other detectors read. */
  readonly outputs: readonly Output[];
}

/**
 * When a committed record reaches a detector, in this order (derive.ts `apply`): a GPS record (a position or
 * an ignition) first to what its gap since the last one ends (`gap`), then, once the track took its fix, to
 * `position` (`steps`: the fixes it confirmed); a record with a soc to `soc`; one with battery ids to
 * `battery`; one of a stream reporting its pack (cell voltages and temperatures, or its capacity) to
 * `pack`; one with alarms to `alarms`. (Charging and the drain take CAN records when the track has passed
 * their time, not here: derive.ts, "Waits".)
 */
export const PHASES = ['gap', 'position', 'soc', 'battery', 'pack', 'alarms'] as const;
export type Phase = (typeof PHASES)[number];

/** A detector's hooks, each handed the context and the state's slices it declared (`V`: its own, what it reads, writes into and amends). */
export interface Hooks<V> {
  gap?(ctx: Context, s: V, time: number): void;
  position?(ctx: Context, s: V, r: StreamRecord, plan: StreamPlan, steps: Step[]): void;
  soc?(ctx: Context, s: V, r: StreamRecord, plan: StreamPlan): void;
  battery?(ctx: Context, s: V, r: StreamRecord, plan: StreamPlan): void;
  pack?(ctx: Context, s: V, r: StreamRecord, plan: StreamPlan): void;
  alarms?(ctx: Context, s: V, r: StreamRecord, plan: StreamPlan): void;
}

/**
 * One output of a detector: events of `vehicle_events`, or rows of a measurement of their own (a trip, a
 * stop, a charging session), each with the fields it carries. Its row of docs/events.md and the webhook's
 * body table there are derived from it, and outputs.test.ts checks the derivation emits exactly these
 * fields.
 */
export interface Output {
  /** The event names it writes, every one (the CLI's `--event` takes them); none for a row of its own measurement. */
  readonly events: readonly string[];
  /** For a row of its own measurement: its outbox entry's `kind`, which the webhook's type `vehicle.<kind>` is made of. */
  readonly kind?: 'trip' | 'stop' | 'charging' | 'pack_life';
  /** How the documentation names it (`<flag>_raised` / `<flag>_cleared`, "a trip"). */
  readonly shown: string;
  /** The measurement it is written to: its point's time, and each field's InfluxDB name and unit. */
  readonly measurement: DerivedMeasurement;
  /** What it carries beyond what every output of its sort does (`OUTPUT_COMMON_FIELDS`), each once. */
  readonly fields: readonly OutputField[];
  /** When, in the words of docs/events.md. */
  readonly what: string;
}

/** Slices by the key of their detector (any slice: the hooks' view takes each one's state type). */
type Slices = Readonly<Record<string, Pick<Slice<unknown>, 'id' | 'fresh'>>>;
type StatesOf<M> = { [k in keyof M]: M[k] extends Slice<infer T> ? T : never };

/** The slices a detector's hooks are handed: its own under its key, the others' it declared under theirs (those it reads, read-only). */
export type ViewOf<K extends string, S, R, W, A, B = {}> = { [k in K]: S } & { readonly [k in keyof R | keyof B]: Readonly<StatesOf<R & B>[k]> } & StatesOf<W> & StatesOf<A>;

/** A detector as its module declares it: the slices it reads, writes into and amends given as slices (so its hooks' view is typed from them). */
export interface Declaration<K extends string, S, R extends Slices, W extends Slices, A extends Slices, B extends Slices>
  extends Omit<Detector<K, S, ViewOf<K, S, R, W, A, B>>, 'reads' | 'readsBefore' | 'writesInto' | 'amends' | 'after' | 'before' | 'on'> {
  readonly reads?: R;
  readonly readsBefore?: B;
  readonly writesInto?: W;
  readonly amends?: A;
  readonly after?: readonly string[];
  readonly before?: readonly string[];
  readonly on?: Hooks<ViewOf<K, S, R, W, A, B>>;
}

/**
 * A field an output carries when known: in the webhook's `data` under `name` (as the derivation emits it),
 * in InfluxDB under its snake_case (`durationS` → `duration_s`), where the measurement declares its unit;
 * text is a tag of the point.
 */
export interface OutputField {
  readonly name: string;
  /** What it says, in this output. */
  readonly meaning: string;
  /** The events that carry it; every event of the output when absent. */
  readonly on?: readonly string[];
}

/**
 * What every output of its sort carries in the webhook's `data`, given by the outbox (outbox.ts
 * `webhookPayloadOf`), not by a detector: an event's, a row's, and a correction's marks.
 */
export const OUTPUT_COMMON_FIELDS = {
  event: ['id', 'vehicleno', 'event', 'time', 'value'],
  row: ['id', 'vehicleno', 'start'],
  marks: ['late', 'revision', 'retracted'],
} as const;

/** A field's InfluxDB name: its webhook name in snake_case (outbox.ts writes points so). */
export const influxName = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The fields `event` (or a row's, `undefined`) of `output` carries, as declared. */
export const fieldsOf = (output: Output, event?: string): OutputField[] => output.fields.filter((f) => event === undefined || f.on === undefined || f.on.includes(event));

/** A declaration, its key kept as a literal type (so the vehicle state's type is derived from the list). */
export function detector<const K extends string, S, const R extends Slices = {}, const W extends Slices = {}, const A extends Slices = {}, const B extends Slices = {}>(
  d: Declaration<K, S, R, W, A, B>,
): Detector<K, S, ViewOf<K, S, R, W, A, B>> {
  // A relation names the other detector by its key (a slice's name is how it is logged, not how the state keys it).
  return { ...d, reads: Object.keys(d.reads ?? {}), readsBefore: Object.keys(d.readsBefore ?? {}), writesInto: Object.keys(d.writesInto ?? {}), amends: Object.keys(d.amends ?? {}), after: d.after ?? [], before: d.before ?? [], on: d.on ?? {} };
}

/** The event names of outputs, in order. */
export const eventNamesOf = (outputs: readonly Output[]): string[] => outputs.flatMap((o) => o.events);

/**
 * The order the detectors run in, derived from what each declares: after those it reads, amends or names in
 * `after`, before those it reads as the records before left them, writes into or names in `before`; otherwise in the list's order (the order kinds were added). Throws,
 * naming them, where the declarations ask for a circle.
 */
export function runOrder<D extends Detector>(list: readonly D[]): D[] {
  const index = new Map(list.map((d, i) => [d.key, i]));
  const before = list.map(() => new Set<number>()); // before[i]: those that must run before i
  const at = (key: string, of: string): number => {
    const i = index.get(key);
    if (i === undefined) throw new Error(`vehicle events: detector ${of} names ${key}, which is no detector`);
    return i;
  };
  list.forEach((d, i) => {
    for (const k of [...d.reads, ...d.amends, ...d.after]) before[i]!.add(at(k, d.key));
    for (const k of [...d.readsBefore, ...d.writesInto, ...d.before]) before[at(k, d.key)]!.add(i);
  });
  const order: D[] = [];
  const done = new Set<number>();
  while (order.length < list.length) {
    const next = list.findIndex((_, i) => !done.has(i) && [...before[i]!].every((j) => done.has(j)));
    if (next < 0) throw new Error(`vehicle events: the detectors' declarations ask for a circle among ${list.filter((_, i) => !done.has(i)).map((d) => d.key).join(', ')}`);
    done.add(next);
    order.push(list[next]!);
  }
  return order;
}
