import type { Slice } from './slice.js';

/**
 * A detector's declaration (one a module of this folder, as Traccar has one handler a kind of event):
 * its key and slice in the vehicle state, what it reads, the settings it takes, and what it writes. The
 * list of them (`../kinds.ts`, `DETECTORS`) is the one place a kind is added; the vehicle state, its slices,
 * the event names (the CLI's `--event`, its help) and the documentation's tables are derived from it.
 */
export interface Detector<K extends string = string, S = unknown> {
  /** Its slice's key in the vehicle state (derive.ts `VehicleState`). */
  readonly key: K;
  /** Its state, stored under the slice's frozen id. */
  readonly slice: Slice<S>;
  /** What it reads: record fields, and other detectors' slices by key (read-only). */
  readonly reads: string;
  /** Other detectors' slices it writes into, by key (declared, so that no write is hidden). */
  readonly writesInto?: readonly string[];
  /** The settings it takes (their names, docs/operating.md). */
  readonly settings: readonly string[];
  /** What it derives, in the detectors' table (src/ingest/events/README.md). */
  readonly derives: string;
  /** Its rules, in the detectors' table. */
  readonly rules: string;
  /** Its outputs as operators and analysts meet them (docs/events.md); none for a slice other detectors read. */
  readonly outputs: readonly Output[];
}

/** One output of a detector: events of `vehicle_events`, or rows of a measurement of their own. */
export interface Output {
  /** The event names it writes, every one (the CLI's `--event` takes them); none for a row of its own measurement. */
  readonly events: readonly string[];
  /** How the documentation names it (`<flag>_raised` / `<flag>_cleared`, "a trip"). */
  readonly shown: string;
  /** Where it is written and what it carries. */
  readonly where: string;
  /** When, in the words of docs/events.md. */
  readonly what: string;
}

/** A declaration, its key kept as a literal type (so the vehicle state's type is derived from the list). */
export const detector = <const K extends string, S>(d: Detector<K, S>): Detector<K, S> => d;

/** The event names of outputs, in order. */
export const eventNamesOf = (outputs: readonly Output[]): string[] => outputs.flatMap((o) => o.events);
