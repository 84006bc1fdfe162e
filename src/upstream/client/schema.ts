/**
 * Wire schemas of the six request operations (spec §4.1–4.6) and of the response envelope (§2.1).
 *
 * One source of truth for both sides: the emulator validates request bodies with `requestSchemas` and
 * builds answers typed from the `*Out` schemas (exactly what it sends); the client builds request
 * bodies typed from `requestSchemas` and parses answers with the `*In` schemas, which are deliberately
 * a superset of `*Out` because the real service's units and shapes are partly "not shown".
 */
import { z } from 'zod';
import { NUMERIC_STRING } from '../../telemetry/numbers.js';

export const OPERATIONS = [
  'getfuelhistory',
  'getfuelused',
  'immobilize',
  'mobilize',
  'changepassword',
  'listvehicles',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** The seven command types of immobilise and mobilise (spec §4.3). */
export const COMMAND_TYPES = [
  'ignition',
  'crank',
  'movement',
  'can',
  'charge',
  'discharge',
  'chargendischarge',
] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

export const isCommandType = (v: unknown): v is CommandType =>
  typeof v === 'string' && (COMMAND_TYPES as readonly string[]).includes(v);

// ---------------------------------------------------------------------------------------------
// Requests

/** An epoch timestamp in a request: a non-negative integer (unit: see the emulator README). */
export const epochSchema = z.number().int().nonnegative();
const nonEmpty = z.string().min(1);

export const requestSchemas = {
  getfuelhistory: z.object({
    token: z.string(),
    vehicleno: nonEmpty,
    inlitres: z.boolean(),
    starttime: epochSchema,
    endtime: epochSchema,
  }),
  getfuelused: z.object({
    token: z.string(),
    vehicleno: nonEmpty,
    starttime: epochSchema,
    endtime: epochSchema,
  }),
  immobilize: z.object({
    vehicleno: nonEmpty,
    type: z.enum(COMMAND_TYPES),
    token: z.string(),
    immediate: z.boolean(),
  }),
  mobilize: z.object({
    vehicleno: nonEmpty,
    type: z.enum(COMMAND_TYPES),
    token: z.string(),
  }),
  changepassword: z.object({
    token: z.string(),
    username: nonEmpty,
    newpassword: nonEmpty,
  }),
  listvehicles: z.object({
    token: z.string(),
  }),
} as const satisfies Record<Operation, z.ZodType>;

export type RequestBody<O extends Operation> = z.infer<(typeof requestSchemas)[O]>;

// ---------------------------------------------------------------------------------------------
// Numbers the service sends as strings ("12.50")

/** A string-shaped number as the service sends it, e.g. "12.50". */
export const numericString = z.string().regex(NUMERIC_STRING, 'expected a string-shaped number');

/** A number sent either as a JSON number or as a string-shaped number; parsed to a number. */
export const numberish = z
  .union([z.number(), numericString])
  .transform((v) => (typeof v === 'number' ? v : Number(v)))
  .refine((v) => Number.isFinite(v), 'expected a finite number');

// ---------------------------------------------------------------------------------------------
// Data, as the emulator sends it (`Out`) and as the client accepts it (`In`)

export const vehicleOut = z.object({ vehicleno: nonEmpty });
export const fuelReadingOut = z.object({ time: epochSchema, value: numericString });
/**
 * A refuel within the range of `getfuelused`. The provider's document names `refueling_events` but not
 * the shape of one: this is the emulator's choice (assumed, README "not shown"): when the level rose
 * (the reading that ended the rise, epoch time in the emulator's unit) and by how many litres.
 */
export const refuelingEventOut = z.object({ time: epochSchema, litres: numericString });
/** An epoch time the service may have none of (no ignition change within the range). */
const epochOrNull = epochSchema.nullable();
/**
 * `getfuelused` as the provider's document gives it: `fuelused` in litres, the range echoed
 * (`starttime`, `endtime`), the fuel level at its start and end in percent (`startfl`, `endfl`) and in
 * litres (`startfl_litres`, `endfl_litres`), the last ignition on and off within it, and the refuels.
 * Levels are null when the range holds no reading; ignition times when it holds no such change.
 */
export const fuelUsedOut = z.object({
  fuelused: numericString,
  starttime: epochSchema,
  endtime: epochSchema,
  startfl: numericString.nullable(),
  endfl: numericString.nullable(),
  startfl_litres: numericString.nullable(),
  endfl_litres: numericString.nullable(),
  lastignon: epochOrNull,
  lastignoff: epochOrNull,
  refueling_events: z.array(refuelingEventOut),
});

export const dataOut = {
  listvehicles: z.array(vehicleOut),
  getfuelhistory: z.array(fuelReadingOut),
  getfuelused: fuelUsedOut,
  immobilize: z.string(),
  mobilize: z.string(),
  changepassword: z.string(),
} as const satisfies Record<Operation, z.ZodType>;

export type DataOut<O extends Operation> = z.infer<(typeof dataOut)[O]>;

/** Extra fields of a listed vehicle are kept: the spec names only `vehicleno`. */
export const vehicleIn = z.looseObject({ vehicleno: nonEmpty });
/** `time` in seconds or milliseconds, as a number or a string; `value` as a number or a string. */
export const fuelReadingIn = z.object({ time: numberish, value: numberish });
/** A number the service may send as a number, a string-shaped number, or not at all (null, absent). */
const maybeNumber = numberish.nullish();
/** A refuel as the emulator sends it; other fields are kept, and each of these may be missing (the shape is assumed). */
export const refuelingEventIn = z.looseObject({ time: numberish.nullish(), litres: maybeNumber });
/**
 * `getfuelused` as the client accepts it, a superset of what it accepted before the document's shape
 * was known (issue #47): the documented object, whose fields other than `fuelused` may each be missing,
 * null, numbers or string-shaped numbers; the emulator's earlier object (`fuelused` with `unit`); or a
 * bare (string-shaped) number.
 */
export const fuelUsedIn = z.union([
  z.looseObject({
    fuelused: numberish,
    unit: z.enum(['litres', 'percent']).optional(),
    starttime: maybeNumber,
    endtime: maybeNumber,
    startfl: maybeNumber,
    endfl: maybeNumber,
    startfl_litres: maybeNumber,
    endfl_litres: maybeNumber,
    lastignon: maybeNumber,
    lastignoff: maybeNumber,
    refueling_events: z.array(refuelingEventIn).nullish(),
  }),
  numberish,
]);

export const dataIn = {
  listvehicles: z.array(vehicleIn),
  getfuelhistory: z.array(fuelReadingIn),
  getfuelused: fuelUsedIn,
  immobilize: z.string(),
  // Answer shapes of mobilize and changepassword are not shown: anything is accepted.
  mobilize: z.unknown(),
  changepassword: z.unknown(),
} as const satisfies Record<Operation, z.ZodType>;
