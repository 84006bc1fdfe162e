/**
 * The emulator's FAILURE codes (`err`). The spec shows none; these are the emulator's choice, listed in
 * the README. Checks run in this order, and the first failing one answers.
 */
export const ERR = {
  /** Body is not a JSON object. */
  invalidJson: 'invalid_json',
  /** `token` missing, not a string, or not a known token. */
  invalidToken: 'invalid_token',
  /** A token issued with an expiry (`state.issueToken`) used at or after it. */
  tokenExpired: 'token_expired',
  /** A required field is missing or has the wrong JSON type (also `immediate` sent to mobilize). */
  invalidField: 'invalid_field',
  /** `type` is a string but not one of the seven command types. */
  invalidCommandType: 'invalid_command_type',
  /** `vehicleno` is not in the caller's fleet. */
  unknownVehicle: 'unknown_vehicle',
  /** starttime is after endtime. */
  invalidRange: 'invalid_range',
  /** endtime − starttime is longer than the maximum range (31 days by default). */
  rangeTooLarge: 'range_too_large',
  /** changepassword for a username other than the token's own. */
  forbidden: 'forbidden',
  /** newpassword shorter than 8 characters. */
  weakPassword: 'weak_password',
  /** Path is not one of the six operations. */
  notFound: 'not_found',
  /** Method other than POST. */
  methodNotAllowed: 'method_not_allowed',
  /** Beyond the calls a second or the gap between calls (limits.ts): HTTP 429 with Retry-After. */
  rateLimited: 'rate_limited',
  /** Beyond a vehicle's getfuelhistory calls of the day (limits.ts): HTTP 429 with Retry-After. */
  historyLimit: 'history_limit',
  /** A fault injected on purpose (EmulatorState.injectFault). */
  injected: 'service_unavailable',
  internal: 'internal_error',
} as const;

export type ErrCode = (typeof ERR)[keyof typeof ERR];

/** Raised by a handler to answer a FAILURE envelope. */
export class Failure extends Error {
  constructor(
    readonly err: ErrCode,
    readonly msg: string,
  ) {
    super(msg);
  }
}
