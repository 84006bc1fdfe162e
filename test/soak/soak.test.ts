import { expect, it } from 'vitest';
import { runSoak } from './soak.js';

it('short soak: mixed load with random worker kills ends with zero loss', async () => {
  const r = await runSoak({ durationMs: 8_000, rate: 400, workers: 2, vehicles: 30, killEveryMs: 2_500, seed: 3 });
  expect(r.workerKills).toBeGreaterThanOrEqual(2);
  expect(r.acknowledged).toBe(r.sent);
  expect({ missing: r.missing, wrong: r.wrong, extra: r.extra, failedDeliveries: r.failedDeliveries }).toEqual({ missing: 0, wrong: 0, extra: 0, failedDeliveries: 0 });
}, 120_000);
