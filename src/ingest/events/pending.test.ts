import { describe, expect, it } from 'vitest';
import { emptyRecord, MAX_VALUES, STREAMS, valueAt, type StreamRecord } from './inputs.js';
import { PendingRecords } from './pending.js';

const rec = (time: number, v0 = NaN, alarmMask = 0, alarmValues = 0): StreamRecord => ({ ...emptyRecord(1, time), v0, alarmMask, alarmValues });
const times = (p: PendingRecords) => p.records().map((r) => r.time);

describe('a stream’s pending records as columns', () => {
  it('keep every field of a record, in the order inserted at, and read into one reused object', () => {
    const p = new PendingRecords(1, MAX_VALUES);
    p.insert(0, { ...rec(30, 1.5, 0b11, 0b01), v1: 2, v2: -0, v3: 1e300, v4: 123_456, v5: -7, v6: 6, v7: 7, v8: 8, v9: 9, v10: -10, v11: 0.25, v12: 12.5, v13: 3.312, v14: 16 });
    p.insert(0, rec(10, 7));
    p.insert(1, rec(20));
    expect(times(p)).toEqual([10, 20, 30]);
    const into = emptyRecord(0, 0);
    expect(p.read(2, into)).toEqual({ stream: 1, time: 30, v0: 1.5, v1: 2, v2: -0, v3: 1e300, v4: 123_456, v5: -7, v6: 6, v7: 7, v8: 8, v9: 9, v10: -10, v11: 0.25, v12: 12.5, v13: 3.312, v14: 16, alarmMask: 3, alarmValues: 1, merged: false });
    expect(p.read(0, into)).toBe(into);
    expect(into.v0).toBe(7);
    expect(Number.isNaN(p.read(1, into).v0)).toBe(true);
    expect(p.lowerBound(20)).toBe(1);
    expect(p.lowerBound(21)).toBe(2);
    expect(p.lowerBound(99)).toBe(3);
  });

  it('keep as many values a record as their stream’s plan has fields, the rest read as absent', () => {
    for (const plan of STREAMS.values()) {
      const p = new PendingRecords(plan.streamId);
      p.insert(0, { ...rec(10, 1), v1: 2, v2: 3, v3: 4, v4: 5, v5: 6, v6: 7, v7: 8, v8: 9, v9: 10, v10: 11, v11: 12, v12: 13, v13: 14, v14: 15 });
      const back = p.read(0, emptyRecord(0, 0));
      for (let i = 0; i < MAX_VALUES; i++) expect(valueAt(back, i)).toBe(i < plan.fields.length ? i + 1 : NaN);
    }
  });

  it('merge as InfluxDB merges a point: later values win, a raised alarm stays raised, and only a change counts', () => {
    const p = PendingRecords.of(1, [rec(10, 1, 0b10, 0b10)]);
    expect(p.mergeAt(0, rec(10, NaN, 0b10, 0))).toBe(false);
    expect(p.mergedAt(0)).toBe(false);
    expect(p.mergeAt(0, rec(10, 2, 0b01, 0b01))).toBe(true);
    expect(p.mergedAt(0)).toBe(true);
    expect(p.records()[0]).toMatchObject({ v0: 2, alarmMask: 0b11, alarmValues: 0b11, merged: true });
  });

  it('drop committed records from the front, grow for a burst and shrink once it has passed', () => {
    const p = new PendingRecords(1);
    for (let t = 0; t < 1_000; t++) p.insert(p.length, rec(t, t));
    expect(p.length).toBe(1_000);
    p.dropFirst(998);
    expect(times(p)).toEqual([998, 999]);
    const cells = (p as unknown as { cells: number[] }).cells.length;
    // Room for the fewest a shrunk array keeps (8), each its time, values, alarms' mask and values, merged.
    expect(cells).toBeLessThanOrEqual(8 * (MAX_VALUES + 4));
    // In a steady stream (one in, one out) the array neither grows nor is replaced.
    for (let t = 1_000; t < 3_000; t++) {
      p.insert(p.length, rec(t, t));
      p.dropFirst(1);
    }
    expect(times(p)).toEqual([2_998, 2_999]);
    expect(p.records().map((r) => r.v0)).toEqual([2_998, 2_999]);
    expect((p as unknown as { cells: number[] }).cells.length).toBe(cells);
  });
});
