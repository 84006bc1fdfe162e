/**
 * The number rules every side shares: what a string-shaped number is (the telematics service sends
 * some numbers as strings, "12.50"), and how an epoch time in seconds is told from one in milliseconds.
 */

/** A number written as a string: optional sign, digits with an optional fraction, optional exponent; surrounding blanks allowed. */
export const NUMERIC_STRING = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/**
 * Epoch values below this are seconds: 1e11 s is the year 5138, 1e11 ms is March 1973. It is also
 * the earliest epoch-milliseconds time a push record may carry.
 */
export const SECONDS_THRESHOLD = 100_000_000_000;

/** The latest epoch-milliseconds time a record may carry (InfluxDB's nanosecond range ends in 2262). */
export const EPOCH_MS_MAX = 9_200_000_000_000;

/** Whether `n` is a time a record may carry: whole epoch milliseconds that InfluxDB can store (1973 to 2261). */
export function isEpochMs(n: number): boolean {
  return Number.isInteger(n) && n >= SECONDS_THRESHOLD && n <= EPOCH_MS_MAX;
}

/** An epoch time in seconds or milliseconds, to milliseconds. */
export function toEpochMs(value: number): number {
  return Math.abs(value) < SECONDS_THRESHOLD ? Math.round(value * 1000) : Math.round(value);
}

const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * The number written in bytes `from`..`to` (a decimal as formatFloat writes it): up to 15 significant
 * digits without an exponent it is the digits over a power of ten (one correctly rounded division of
 * exact doubles, so the double Number would give); anything else goes through Number.
 */
export function decimalAt(b: Uint8Array, from: number, to: number): number {
  let i = from;
  const neg = b[i] === 45;
  if (neg) i++;
  let mantissa = 0, sig = 0, frac = 0, point = false;
  for (; i < to; i++) {
    const c = b[i]!;
    if (c >= 48 && c <= 57) {
      if (sig > 0 || c !== 48) sig++;
      mantissa = mantissa * 10 + (c - 48);
      if (point) frac++;
    } else if (c === 46 && !point) point = true;
    else return Number(Buffer.from(b.buffer, b.byteOffset + from, to - from).toString('latin1'));
  }
  if (sig > 15 || frac > 22 || i === from) return Number(Buffer.from(b.buffer, b.byteOffset + from, to - from).toString('latin1'));
  const v = mantissa / POW10[frac]!;
  return neg ? -v : v;
}

const SCALE = 1e7;
const HEAD_OF = new Float64Array(8).fill(NaN);
const HEADS: string[] = new Array<string>(8).fill('');
const POW10_SMALL = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/**
 * Text that `Number` and `JSON.parse` read back as exactly `x` (finite), as `String(x)` gives, in a
 * third of its time for what vehicles send: integers (epoch times among them) and decimals of up to
 * seven places. Those are written from integers, which V8 turns into text far faster than doubles: a
 * decimal `n / 10^d` is the double nearest that rational, which is what reading its text gives.
 * Anything else is `String(x)`.
 */
export function numberText(x: number): string {
  if (Number.isSafeInteger(x)) {
    if (x < 1e9) return String(x);
    // Epoch times and scores: the digits above the last six change every 1000 s, so their text is kept.
    const hi = Math.floor(x / 1e6);
    const slot = hi & 7;
    let head = HEADS[slot]!;
    if (HEAD_OF[slot] !== hi) {
      HEAD_OF[slot] = hi;
      HEADS[slot] = head = String(hi);
    }
    return `${head}${String(x - hi * 1e6 + 1e6).slice(1)}`;
  }
  const n0 = Math.round(x * SCALE);
  if (!Number.isSafeInteger(n0) || n0 / SCALE !== x) return String(x);
  let n = n0 < 0 ? -n0 : n0;
  let d = 7;
  while (d > 0 && n % 10 === 0) {
    n /= 10;
    d--;
  }
  const p = POW10_SMALL[d]!;
  const whole = Math.floor(n / p);
  const text = `${whole}.${String(n - whole * p + p).slice(1)}`;
  return n0 < 0 ? `-${text}` : text;
}
