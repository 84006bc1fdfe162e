import type { DerivedMeasurement } from '../../../telemetry/derivedMeasurements.js';
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
  readonly kind?: 'trip' | 'stop' | 'charging';
  /** How the documentation names it (`<flag>_raised` / `<flag>_cleared`, "a trip"). */
  readonly shown: string;
  /** The measurement it is written to: its point's time, and each field's InfluxDB name and unit. */
  readonly measurement: DerivedMeasurement;
  /** What it carries beyond what every output of its sort does (`OUTPUT_COMMON_FIELDS`), each once. */
  readonly fields: readonly OutputField[];
  /** When, in the words of docs/events.md. */
  readonly what: string;
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
export const detector = <const K extends string, S>(d: Detector<K, S>): Detector<K, S> => d;

/** The event names of outputs, in order. */
export const eventNamesOf = (outputs: readonly Output[]): string[] => outputs.flatMap((o) => o.events);
