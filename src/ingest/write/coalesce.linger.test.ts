import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CoalescingSink } from './coalesce.js';
import type { PointSink } from './sink.js';
import { Lines } from './lines.js';

/** The linger (INFLUX_LINGER) on fake time: what is sent when, however busy the machine running the test is. */
describe('linger', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A sink that records each request's size and answers after `ms`. */
  const recording = (ms: number) => {
    const sizes: number[] = [];
    const sink: PointSink = {
      write: async (lines) => {
        sizes.push(lines.length);
        await new Promise((r) => setTimeout(r, ms));
      },
      ready: async () => true,
      close: async () => {},
    };
    return { sizes, sink };
  };
  const tens = (i: number) => Lines.of(Array.from({ length: 10 }, (_, j) => `w${i}.${j}`));

  it('writes at once when idle, however small the write', async () => {
    const { sizes, sink } = recording(1);
    const coalescing = new CoalescingSink(sink, { maxLines: 100, maxInFlight: 2, lingerMs: 500 });
    let done = false;
    void coalescing.write(Lines.of(['a'])).then(() => (done = true));
    expect(sizes).toEqual([1]);
    // The sink's own millisecond, not the 500 of the linger.
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });

  it('under load, holds a request that is not full until the linger ends or it fills', async () => {
    const { sizes, sink } = recording(5);
    const coalescing = new CoalescingSink(sink, { maxLines: 100, maxInFlight: 2, lingerMs: 60 });
    const writes: Array<Promise<void>> = [coalescing.write(Lines.of(['first']))];
    // Busy now: 10-line writes every 5 ms for 100 ms.
    for (let i = 0; i < 20; i++) {
      await vi.advanceTimersByTimeAsync(5);
      writes.push(coalescing.write(tens(i)));
    }
    await vi.advanceTimersByTimeAsync(200);
    await Promise.all(writes);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(201);
    // The first alone, then merged: 60 ms of 10-line writes every 5 ms fill 100-line requests, the rest after the linger.
    expect(sizes[0]).toBe(1);
    expect(sizes.length).toBeLessThanOrEqual(4);
    expect(Math.max(...sizes.slice(1))).toBe(100);
  });

  it('without a linger, the same load goes write by write', async () => {
    const { sizes, sink } = recording(1);
    const coalescing = new CoalescingSink(sink, { maxLines: 100, maxInFlight: 2 });
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(5);
      writes.push(coalescing.write(tens(i)));
    }
    await vi.advanceTimersByTimeAsync(5);
    await Promise.all(writes);
    expect(sizes).toEqual(new Array(10).fill(10));
  });
});
