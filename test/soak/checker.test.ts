import { expect, it } from 'vitest';
import { inject } from 'vitest';
import { influxQL } from '../../src/devstack/influxd.js';
import type { SentRecord } from '../harness/reconcile.js';
import { uniqueName } from '../harness/service.js';
import { IncrementalChecker } from './checker.js';

const gps = (vehicleno: string, time: number, lat = 18.5): SentRecord => ({ vehicleno, type: 'gps', data: { lat, lng: 73.8, alti: 560, speed: 30, ignstatus: 1, time } });
const line = (r: SentRecord, lat = r.data.lat) => `gps,vehicleno=${r.vehicleno} lat=${String(lat)},lng=73.8,alti=560,speed=30,ignstatus=1 ${String(r.data.time)}`;

it('reconciles window by window: verifies, finds what is wrong, missing or extra, and does not mistake a late acknowledgement for an extra point', async () => {
  const raw = inject('influxRawUrl');
  const db = uniqueName('soakcheck');
  await influxQL(raw, db, `CREATE DATABASE "${db}"`);
  const W = 30_000;
  const T = Math.floor(Date.now() / W) * W - 10 * 60_000;
  const [right, wrong, missing, late] = [gps('A1', T + 1_000), gps('A2', T + 2_000), gps('A3', T + 3_000), gps('A4', T + 4_000)];
  const stray = gps('ZZ', T + 5_000);
  const nextWindow = gps('B1', T + W + 1_000);
  const write = await fetch(`${raw}/write?db=${db}&precision=ms`, {
    method: 'POST',
    body: [line(right!), line(wrong!, 19.9), line(late!), line(stray), line(nextWindow)].join('\n'),
  });
  expect(write.status).toBe(204);

  let now = T + W + 6_000; // the first window is due (ended 6 s ago), the second is not
  const checker = new IncrementalChecker({ rawUrl: raw, db, startMs: T, bucketMs: W, checkAfterMs: 5_000, recheckMs: 5_000, now: () => now });
  checker.add([right!, wrong!, missing!]);
  checker.add([nextWindow]);
  await checker.check();
  // The stray point, the late one and the wrong one are not accounted for yet; the wrong and the
  // missing record wait for another look (InfluxDB may show a point before all its fields).
  expect(checker.snapshot()).toMatchObject({ acknowledged: 4, verified: 1, pending: 3, missing: 0, wrong: 0, extra: 3, windows: 1 });

  now += 6_000;
  checker.add([late!]);
  await checker.check();
  expect(checker.snapshot()).toMatchObject({ verified: 2, pending: 3, extra: 2 });

  const end = await checker.settle(0);
  expect(end).toMatchObject({ acknowledged: 5, verified: 3, wrong: 1, missing: 1, extra: 1, pending: 0, windows: 2 });
  expect(end.problems).toEqual([`gps|A2|${T + 2_000} lat: sent 18.5, stored 19.9`, `gps|A3|${T + 3_000}: missing`]);
});
