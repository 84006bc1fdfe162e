import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pickedValues } from '../../../telemetry/record.js';
import { DEFAULT_DERIVE_OPTIONS, DERIVE_FIELDS, DERIVE_PICK, ingest, newState } from '../derive.js';
import { STREAMS, valueAt } from '../inputs.js';
import { restore } from '../wire.js';
import { COMMIT_BODY, COMMIT_HEAD, CommitArgs, luaTokens, readCommit, readCommitArgs, unpackTokens } from './commit.js';

const SCRIPT = readFileSync(new URL('../../../redis/scripts/events-commit.lua', import.meta.url), 'utf8');
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);

describe('the events’ commit, one field list', () => {
  it('is what the script unpacks, item by item and in order', () => {
    // The script reads ARGV[1] (the head) first, then ARGV[3] (the body): its formats, in the order they
    // appear, spell the head's list and then the body's.
    expect(unpackTokens(SCRIPT)).toEqual([...luaTokens(COMMIT_HEAD), ...luaTokens(COMMIT_BODY)]);
  });

  it('would catch a script that reads one double more or less than the list', () => {
    const strayed = SCRIPT.replace("struct.unpack('>I4c0d', s, pos)", "struct.unpack('>I4c0dd', s, pos)");
    expect(strayed).not.toBe(SCRIPT);
    expect(unpackTokens(strayed)).not.toEqual([...luaTokens(COMMIT_HEAD), ...luaTokens(COMMIT_BODY)]);
  });

  it('reads bytes laid out by the list, and refuses bytes left over or missing', () => {
    const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
    const dbl = (x: number) => {
      const b = Buffer.alloc(8);
      b.writeDoubleBE(x);
      return b;
    };
    const bytes = (s: string) => Buffer.concat([u32(Buffer.byteLength(s)), Buffer.from(s)]);
    const head = Buffer.concat([u32(1), bytes('KA01'), bytes('')]);
    // One vehicle, one stream: its committed part, since NaN; the stream's watermark, one replace, one add; one entry;
    // one late item: the vehicle, no reset, a correction due from 3, one checkpoint, one ledger entry.
    const late = Buffer.concat([dbl(0), dbl(0), dbl(3), u32(1), dbl(2), dbl(-Infinity), bytes('c'), u32(1), bytes('t2:x'), bytes('{}')]);
    const body = Buffer.concat([bytes('1 x'), dbl(NaN), dbl(5), u32(1), dbl(7), u32(1), dbl(8), bytes('r'), u32(1), bytes('{}'), u32(1), late]);
    const { head: h, body: b } = readCommit([head, body], 1);
    expect((h.vehicles as Array<Record<string, unknown>>)[0]!.vehicleno).toEqual(Buffer.from('KA01'));
    const v = (b.vehicles as Array<Record<string, unknown>>)[0]!;
    expect(v.since).toBeNaN();
    expect(v.streams).toEqual([{ watermark: 5, replaces: [{ time: 7 }], adds: [{ time: 8, record: Buffer.from('r') }] }]);
    expect(b.lates).toEqual([{ vehicle: 0, reset: 0, correctFrom: 3, checkpoints: [{ epoch: 2, cut: -Infinity, committed: Buffer.from('c') }], told: [{ field: Buffer.from('t2:x'), lines: Buffer.from('{}') }] }]);
    expect(() => readCommit([head, Buffer.concat([body, Buffer.from([0])])], 1)).toThrow(/after the last item/);
    expect(() => readCommit([head, body.subarray(0, body.length - 1)], 1)).toThrow(RangeError);
  });

  it('packs a commit past its first size and reads back what it packed', () => {
    const args = new CommitArgs(0);
    const plates = Array.from({ length: 40 }, (_, i) => `Ünïcødé ${i}`);
    const can = STREAMS.get('can')!;
    plates.forEach((v, i) => {
      const state = newState();
      const values = pickedValues(DERIVE_PICK, 1);
      values[DERIVE_FIELDS.indexOf('soc')] = 60;
      const d = ingest(v, state, [{ type: 'can', time: T0 + i, values, at: 0 }], T0 + 1_000, DEFAULT_DERIVE_OPTIONS);
      args.vehicle(v, i, state, d, DEFAULT_DERIVE_OPTIONS);
    });
    const read = readCommitArgs(args.finish(['{"kind":"event"}', 'ü']));
    expect(read.vehicles.map((v) => [v.vehicleno, v.version, v.written.version, v.since, v.streams.map((st) => st.adds.length)])).toEqual(plates.map((v, i) => [v, i === 0 ? '' : String(i), i + 1, T0 + 1_000, [0, 1, 0]]));
    const back = read.vehicles.map((v) => {
      const st = v.streams.find((x) => x.streamId === can.streamId)!;
      return restore(v.written.committed, [{ streamId: can.streamId, members: st.adds.map((a) => a[1]) }]).streams[can.streamId]!.pending.records();
    });
    expect(back.map((p) => p.map((r) => [r.time, valueAt(r, can.socAt)]))).toEqual(plates.map((_, i) => [[T0 + i, 60]]));
    expect(read.entries).toEqual(['{"kind":"event"}', 'ü']);
  });
  it('writes only the records a call added: one merged into is replaced, a duplicate not written again', () => {
    const can = STREAMS.get('can')!;
    const rec = (time: number, soc: number) => {
      const values = pickedValues(DERIVE_PICK, 1);
      values[DERIVE_FIELDS.indexOf('soc')] = soc;
      return { type: 'can', time, values, at: 0 };
    };
    const state = newState();
    const commit = (records: ReturnType<typeof rec>[], version: number) => {
      const args = new CommitArgs(1);
      args.vehicle('KA01', version, state, ingest('KA01', state, records, T0 + 5_000, DEFAULT_DERIVE_OPTIONS), DEFAULT_DERIVE_OPTIONS);
      const st = readCommitArgs(args.finish([])).vehicles[0]!.streams.find((x) => x.streamId === can.streamId)!;
      return { replaces: st.replaces, adds: st.adds.map(([time]) => time) };
    };
    expect(commit([rec(T0, 50), rec(T0 + 1_000, 51), rec(T0 + 2_000, 52)], 0)).toEqual({ replaces: [], adds: [T0, T0 + 1_000, T0 + 2_000] });
    // Within the window: nothing committed, the first three still pending.
    expect(commit([rec(T0, 50), rec(T0 + 1_000, 60), rec(T0 + 3_000, 53)], 1)).toEqual({ replaces: [T0 + 1_000], adds: [T0 + 1_000, T0 + 3_000] });
  });
});
