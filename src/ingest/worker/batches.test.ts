import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { WrittenRecord } from '../../telemetry/record.js';
import { StateUpdateBatches, type BatchOptions } from './batches.js';

/** A job of `n` written records of vehicle `v`. */
const job = (v: string, n = 1): WrittenRecord[] => Array.from({ length: n }, (_, i) => ({ vehicleno: v, type: 'gps', time: i }));

/** The updates a batcher made: partition, the vehicles of the written records in order, and the jobs counted. */
function recorder(opts: Partial<BatchOptions> = {}, update?: (writtenRecords: readonly WrittenRecord[]) => Promise<void>) {
  const updates: Array<{ partition: number; vehicles: string; jobs: number; at: number }> = [];
  const batches = new StateUpdateBatches(
    async (partition, writtenRecords, jobs) => {
      updates.push({ partition, vehicles: writtenRecords.map((s) => s.vehicleno).join(','), jobs, at: Date.now() });
      await update?.(writtenRecords);
    },
    { lingerMs: 500, maxJobs: 32, maxRecords: 10_000, ...opts },
  );
  return { batches, updates };
}

describe('batches of written jobs', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('updates a first job at once; jobs within the linger after it wait for its end and go together', async () => {
    const { batches, updates } = recorder();
    const first = batches.add(0, job('A'));
    await vi.advanceTimersByTimeAsync(0);
    expect(updates).toEqual([{ partition: 0, vehicles: 'A', jobs: 1, at: 1_000_000 }]);
    await first;
    await vi.advanceTimersByTimeAsync(100);
    const second = batches.add(0, job('B'));
    await vi.advanceTimersByTimeAsync(200);
    const third = batches.add(0, job('C', 2));
    await vi.advanceTimersByTimeAsync(199);
    expect(updates).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(updates[1]).toEqual({ partition: 0, vehicles: 'B,C,C', jobs: 2, at: 1_000_500 });
    await Promise.all([second, third]);
    // Long after the last update a job goes at once again.
    await vi.advanceTimersByTimeAsync(5_000);
    void batches.add(0, job('D'));
    await vi.advanceTimersByTimeAsync(0);
    expect(updates[2]).toEqual({ partition: 0, vehicles: 'D', jobs: 1, at: 1_005_500 });
  });

  it('starts a batch at once when it holds maxJobs jobs or maxRecords records', async () => {
    const { batches, updates } = recorder({ lingerMs: 60_000, maxJobs: 3, maxRecords: 10 });
    await batches.add(0, job('A'));
    const full = [batches.add(0, job('B')), batches.add(0, job('C')), batches.add(0, job('D'))];
    const next = batches.add(0, job('E', 10));
    await vi.advanceTimersByTimeAsync(0);
    expect(updates.map((u) => [u.vehicles, u.jobs, u.at])).toEqual([
      ['A', 1, 1_000_000],
      ['B,C,D', 3, 1_000_000],
      ['E,E,E,E,E,E,E,E,E,E', 1, 1_000_000],
    ]);
    await Promise.all([...full, next]);
  });

  it('runs one update of a partition at a time, and partitions apart', async () => {
    let release = (): void => undefined;
    const slow = new Promise<void>((r) => (release = r));
    const { batches, updates } = recorder({ lingerMs: 100 }, (s) => (s[0]!.vehicleno === 'A' ? slow : Promise.resolve()));
    const a = batches.add(0, job('A'));
    await vi.advanceTimersByTimeAsync(50);
    const b = batches.add(0, job('B'));
    const other = batches.add(1, job('X'));
    await vi.advanceTimersByTimeAsync(1_000);
    // B's linger is long over, but A's update still runs; partition 1 went at once.
    expect(updates.map((u) => `${u.partition}:${u.vehicles}`)).toEqual(['0:A', '1:X']);
    await other;
    release();
    await a;
    await vi.advanceTimersByTimeAsync(0);
    expect(updates.map((u) => `${u.partition}:${u.vehicles}`)).toEqual(['0:A', '1:X', '0:B']);
    await b;
  });

  it('retries a failed batch job by job: only a job that cannot be handled fails', async () => {
    const { batches, updates } = recorder({ lingerMs: 0 }, async (s) => {
      if (s.some((x) => x.vehicleno === 'bad')) throw new Error('cannot be derived');
    });
    // Added together, the four go in one batch; it fails, and each job is tried alone.
    const jobs = [batches.add(0, job('A')), batches.add(0, job('ok1')), batches.add(0, job('bad')), batches.add(0, job('ok2'))];
    const results = await Promise.allSettled(jobs);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toEqual(new Error('cannot be derived'));
    expect(updates.map((u) => `${u.vehicles}/${u.jobs}`)).toEqual(['A,ok1,bad,ok2/4', 'A/1', 'ok1/1', 'bad/1', 'ok2/1']);
  });

  describe('in the order jobs were accepted', () => {
    /** A batcher whose partition's active jobs are `active` (the queue's, by any worker). */
    function ordered(active: Set<string>, waitMs = 10_000) {
      return recorder({ lingerMs: 0, order: { active: async () => [...active], waitMs, pollMs: 50 } });
    }

    it('a job written before one accepted ahead of it waits for that one, then both go in their order', async () => {
      const active = new Set(['7', '8']);
      const { batches, updates } = ordered(active);
      // Job 8's write ended first (job 7's is slow): it waits while 7 is active and unwritten.
      const eight = batches.add(0, job('B'), '8');
      await vi.advanceTimersByTimeAsync(3_000);
      expect(updates).toEqual([]);
      const seven = batches.add(0, job('A'), '7');
      await vi.advanceTimersByTimeAsync(0);
      expect(updates.map((u) => `${u.vehicles}/${u.jobs}`)).toEqual(['A,B/2']);
      await Promise.all([seven, eight]);
    });

    it('waits for a job another worker is writing, and goes once it has left the active list', async () => {
      const active = new Set(['3', '4']);
      const { batches, updates } = ordered(active);
      const four = batches.add(0, job('D'), '4');
      await vi.advanceTimersByTimeAsync(500);
      expect(updates).toEqual([]);
      active.delete('3');
      await vi.advanceTimersByTimeAsync(50);
      expect(updates.map((u) => u.vehicles)).toEqual(['D']);
      await four;
    });

    it('past the bound the later jobs go: a job stuck in a write holds nothing longer than EVENTS_ORDER_WAIT', async () => {
      const active = new Set(['1', '2']);
      const { batches, updates } = ordered(active, 2_000);
      const two = batches.add(0, job('B'), '2');
      await vi.advanceTimersByTimeAsync(1_950);
      expect(updates).toEqual([]);
      await vi.advanceTimersByTimeAsync(100);
      expect(updates.map((u) => [u.vehicles, u.at])).toEqual([['B', 1_002_000]]);
      await two;
    });
  });
});
