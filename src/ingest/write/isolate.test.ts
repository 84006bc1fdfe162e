import { describe, expect, it } from 'vitest';
import { IsolatingSink } from './isolate.js';
import { Lines } from './lines.js';
import { PartialWriteError, WriteError, type PointSink, type WriteAnswer } from './sink.js';

/** A store that answers each request by `judge` (undefined: written), and keeps what it wrote and every request. */
function store(judge: (lines: string[]) => { message: string; answer?: WriteAnswer; written?: string[] } | undefined) {
  const written: string[] = [];
  const requests: string[][] = [];
  const sink: PointSink = {
    write: async (l) => {
      const lines = l.texts();
      requests.push(lines);
      const refusal = judge(lines);
      if (refusal === undefined) {
        written.push(...lines);
        return;
      }
      written.push(...(refusal.written ?? []));
      throw new WriteError(`InfluxDB answered 400: ${refusal.message}`, 400, false, undefined, refusal.answer ?? {});
    },
    ready: async () => true,
    close: async () => {},
  };
  return { sink, written, requests };
}
const lines = (n: number, bad: readonly number[] = []) => Array.from({ length: n }, (_, i) => (bad.includes(i) ? `can,vehicleno=V soc="x" ${i}` : `can,vehicleno=V soc=${i} ${i}`));
const refused = async (p: Promise<void>) => {
  const err = await p.then(() => undefined, (e: unknown) => e);
  return err instanceof PartialWriteError ? err.refused.map((r) => r.line) : err;
};

describe('IsolatingSink', () => {
  it('halves a request refused without a line named until the refused lines stand alone; every other line is written', async () => {
    const s = store((ls) => (ls.some((l) => l.includes('"x"')) ? { message: 'unable to parse: invalid field value' } : undefined));
    expect(await refused(new IsolatingSink(s.sink).write(Lines.of(lines(64, [5, 40]))))).toEqual([5, 40]);
    expect(new Set(s.written).size).toBe(62);
  });

  it('takes the lines the store names, and sends nothing again where it wrote the rest', async () => {
    const all = lines(50, [3, 31]);
    const s = store((ls) => (ls.length === 50 ? { message: 'partial write has occurred', answer: { named: [{ line: 3, error: 'x' }, { line: 31, error: 'y' }], partial: true }, written: ls.filter((l) => !l.includes('"x"')) } : undefined));
    expect(await refused(new IsolatingSink(s.sink).write(Lines.of(all)))).toEqual([3, 31]);
    expect(s.requests).toHaveLength(1);
    expect(s.written).toHaveLength(48);
  });

  it('sends the runs between named lines again where the store wrote nothing', async () => {
    const s = store((ls) => (ls.length === 10 ? { message: 'line 5 bad', answer: { named: [{ line: 4, error: 'bad' }] } } : undefined));
    expect(await refused(new IsolatingSink(s.sink).write(Lines.of(lines(10))))).toEqual([4]);
    expect(s.requests.map((r) => r.length)).toEqual([10, 4, 5]);
    expect(s.written).toHaveLength(9);
  });

  it('takes a refusal in the same words of every part for one of the request: retried, no line refused', async () => {
    const s = store(() => ({ message: 'organization has been suspended' }));
    const err = await new IsolatingSink(s.sink).write(Lines.of(lines(100))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteError);
    expect(err).not.toBeInstanceOf(PartialWriteError);
    expect((err as WriteError).retryable).toBe(true);
    expect((err as WriteError).answer.ofRequest).toBe(true);
    // The whole and its two halves: no line-by-line halving of a refusal of the request.
    expect(s.requests).toHaveLength(3);
  });

  it('splits a request too large, and refuses no line for it; a single line too large is refused', async () => {
    const s = store((ls) => (ls.join('\n').length > 200 ? { message: 'request too large', answer: { tooLarge: true } } : undefined));
    await new IsolatingSink(s.sink).write(Lines.of(lines(40)));
    expect(new Set(s.written).size).toBe(40);
    const huge = `can,vehicleno=V ${'f=1,'.repeat(100)}g=1 1`;
    expect(await refused(new IsolatingSink(store((ls) => (ls.join('\n').length > 200 ? { message: 'request too large', answer: { tooLarge: true } } : undefined)).sink).write(Lines.of([huge, 'can,vehicleno=V soc=1 2'])))).toEqual([0]);
  });

  it('sends the halves side by side, never more than maxInFlight requests at once', async () => {
    let now = 0;
    let most = 0;
    const sink: PointSink = {
      write: async (l) => {
        most = Math.max(most, ++now);
        await new Promise((r) => setTimeout(r, 5));
        now--;
        if (l.texts().some((t) => t.includes('"x"'))) throw new WriteError('InfluxDB answered 400: unable to parse', 400, false);
      },
      ready: async () => true,
      close: async () => {},
    };
    expect(await refused(new IsolatingSink(sink, 2).write(Lines.of(lines(64, [3, 40, 41]))))).toEqual([3, 40, 41]);
    expect(most).toBe(2);
  });
});
