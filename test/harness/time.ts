/**
 * A base time for records the tests push: a day ago, on the hour. Recent, because the receiver
 * refuses a time older than TIME_MAX_AGE (90 days by default) as a broken clock; fixed within a run.
 */
export const T0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 24 * 3_600_000;
