import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { influxQL, startInflux, type LocalInflux } from '../../devstack/influxd.js';
import { CoalescingSink } from './coalesce.js';
import { InfluxSink } from './influx.js';
import { IsolatingSink } from './isolate.js';
import { PartialWriteError, WriteError, type PointSink } from './sink.js';
import { Lines } from './lines.js';

let influx: LocalInflux;
beforeAll(async () => {
  influx = await startInflux();
});
afterAll(async () => influx?.stop());

async function sinkFor(db: string) {
  await influx.createDatabase(db);
  const inner = new InfluxSink({ url: influx.url, token: influx.token, org: '', bucket: db, timeoutMs: 5_000 });
  return new CoalescingSink(new IsolatingSink(inner), { maxLines: 50, maxInFlight: 1 });
}
const line = (v: string, i: number, field = `soc=${i}.5`) => `can,vehicleno=${v} ${field} ${1_763_700_000_000 + i}`;

it('merges writes that wait for a request slot into fewer requests, up to maxLines, and every point lands', async () => {
  const sink = await sinkFor('coalesce_merge');
  influx.front.setWriteDelay(200);
  const before = influx.front.writesStarted();
  // 20 callers of 10 lines: the first goes alone, the rest wait and go 5 to a request (50 lines).
  await Promise.all(Array.from({ length: 20 }, (_, c) => sink.write(Lines.of(Array.from({ length: 10 }, (_, i) => line(`C${c}`, i))))));
  influx.front.setWriteDelay(0);
  expect(influx.front.writesStarted() - before).toBe(1 + Math.ceil(190 / 50));
  expect(await influxQL(influx.rawUrl, 'coalesce_merge', 'SELECT count(soc) FROM can')).toEqual([{ time: 0, count: 200 }]);
});

it('when the store refuses data in a merged request, only the caller whose lines were refused is told so', async () => {
  const sink = await sinkFor('coalesce_poison');
  influx.front.setWriteDelay(200);
  const first = sink.write(Lines.of([line('A', 0)]));
  const results = await Promise.allSettled([
    sink.write(Lines.of([line('B', 1), line('B', 2)])),
    sink.write(Lines.of([line('C', 3, 'soc="text"')])), // a string where the others write floats: a type conflict
    sink.write(Lines.of([line('D', 4)])),
  ]);
  influx.front.setWriteDelay(0);
  await first;
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  const refused = (results[1] as PromiseRejectedResult).reason as WriteError;
  expect(refused).toBeInstanceOf(WriteError);
  expect(refused.retryable).toBe(false);
  expect(refused.message).toMatch(/^InfluxDB answered 400: partial write: field type conflict/);
  const rows = await influxQL(influx.rawUrl, 'coalesce_poison', 'SELECT soc, vehicleno FROM can');
  expect(rows.map((r) => r.vehicleno)).toEqual(['A', 'B', 'B', 'D']);
});

it('splits a write larger than maxLines over requests, and names refused lines by their place in that write', async () => {
  const sink = await sinkFor('coalesce_split');
  const before = influx.front.writesStarted();
  const lines = Array.from({ length: 120 }, (_, i) => line('S', i));
  lines[7] = line('S', 7, 'soc="seven"');
  lines[101] = line('S', 101, 'soc="one-oh-one"');
  const err = await sink.write(Lines.of(lines)).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(PartialWriteError);
  expect((err as PartialWriteError).refused.map((r) => r.line)).toEqual([7, 101]);
  expect((err as PartialWriteError).refused[0]!.error).toMatch(/^InfluxDB answered 400: partial write: field type conflict/);
  // 120 lines at 50 a request are 3 requests before any isolation.
  expect(influx.front.writesStarted() - before).toBeGreaterThanOrEqual(3);
  expect(await influxQL(influx.rawUrl, 'coalesce_split', 'SELECT count(soc) FROM can')).toEqual([{ time: 0, count: 118 }]);
});

it('with INFLUX_CONTENT_ENCODING=gzip sends gzip bodies, and InfluxDB stores exactly the same points', async () => {
  await influx.createDatabase('gzip_plain');
  await influx.createDatabase('gzip_gz');
  const lines = Array.from({ length: 2_000 }, (_, i) => line(`GZ${i % 50}`, i, `soc=${i}.25,battery_voltage=${48 + i / 1000},current=-${i % 17}.5`));
  const sinks = {
    gzip_plain: new InfluxSink({ url: influx.url, token: influx.token, org: '', bucket: 'gzip_plain', timeoutMs: 5_000 }),
    gzip_gz: new InfluxSink({ url: influx.url, token: influx.token, org: '', bucket: 'gzip_gz', timeoutMs: 5_000, gzip: true }),
  };
  const wire: Record<string, { gzipped: number; bytes: number }> = {};
  for (const [db, sink] of Object.entries(sinks)) {
    const before = influx.front.wire();
    await sink.write(Lines.of(lines));
    const after = influx.front.wire();
    wire[db] = { gzipped: after.gzipped - before.gzipped, bytes: after.bytes - before.bytes };
  }
  expect(wire.gzip_plain).toEqual({ gzipped: 0, bytes: Buffer.byteLength(`${lines.join('\n')}\n`) });
  expect(wire.gzip_gz!.gzipped).toBe(1);
  expect(wire.gzip_gz!.bytes * 5).toBeLessThan(wire.gzip_plain!.bytes);
  const q = 'SELECT * FROM can ORDER BY time';
  const plain = await influxQL(influx.rawUrl, 'gzip_plain', q);
  expect(plain).toHaveLength(2_000);
  expect(await influxQL(influx.rawUrl, 'gzip_gz', q)).toEqual(plain);
});
