import { describe, expect, it } from 'vitest';
import { readCapped } from './capped.js';

/** A stream of `n` chunks of `size` bytes, counting how many were pulled. */
function chunks(n: number, size: number) {
  const pulled = { count: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled.count === n) return c.close();
      pulled.count++;
      c.enqueue(new Uint8Array(size).fill(pulled.count));
    },
    cancel() {
      pulled.cancelled = true;
    },
  });
  return { stream, pulled };
}

describe('readCapped', () => {
  it('reads a stream up to its cap whole, bytes in order', async () => {
    const { stream } = chunks(3, 4);
    const r = await readCapped(stream, 12);
    expect(r).toEqual({ ok: true, bytes: Buffer.from([1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]) });
  });

  it('stops at the chunk that passes the cap, cancels the stream and says how much came', async () => {
    const { stream, pulled } = chunks(1_000, 1_024);
    const r = await readCapped(stream, 10_000);
    expect(r).toEqual({ ok: false, read: 10 * 1_024 });
    expect(pulled.cancelled).toBe(true);
    expect(pulled.count).toBeLessThan(20);
  });
});
