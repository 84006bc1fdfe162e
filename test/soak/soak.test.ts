import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { processLabels, writeSamples } from './report.js';
import { runSoak } from './soak.js';

it('short soak: mixed load with random worker kills ends with zero loss, sampled every second', async () => {
  const { report: r, samples } = await runSoak({
    // A reorder window of 5 s (the default is 30): the soak reads the pack events once the streams' window
    // has passed after the feed, and a partition's jobs are derived in the order they were accepted, kills or not.
    durationMs: 8_000, rate: 400, workers: 2, vehicles: 30, killEveryMs: 2_500, seed: 3, sampleEveryMs: 1_000, env: { WORKER_CONCURRENCY: '2', EVENTS_WINDOW: '5s' },
  });
  expect(r.workerKills).toBeGreaterThanOrEqual(2);
  expect(r.acknowledged).toBe(r.sent);
  expect({ missing: r.missing, wrong: r.wrong, extra: r.extra, failedDeliveries: r.failedDeliveries }).toEqual({ missing: 0, wrong: 0, extra: 0, failedDeliveries: 0 });
  expect(r.verified).toBe(r.acknowledged);
  expect(r.redis).toEqual({ appendonly: 'yes', appendfsync: 'always' });
  expect(r.checks.filter((c) => c.ok === false)).toEqual([]);
  expect(r.ok).toBe(true);
  // The pack events read back and judged by the emulator's truth (packs.ts): none of a pack without its
  // trouble; the BMS's health and cell drift need days of charges, so seconds are "not enough sessions".
  expect(r.packs).not.toBeNull();
  expect(r.checks.find((c) => c.name.startsWith('pack events never'))?.ok).toBe(true);
  const needCharges = r.checks.filter((c) => c.name.includes(' only on packs with its trouble'));
  expect(needCharges.map((c) => c.name.split(' ')[0])).toEqual(expect.arrayContaining(['bms_soh_disagrees', 'bms_soh_stuck', 'cell_drifting']));
  for (const c of needCharges) expect([c.ok, c.detail.startsWith('not enough sessions')]).toEqual([null, true]);

  // A sample at the start, one a second, one at the end: each with the receiver's and the workers'
  // memory (a worker being replaced may miss one), Redis, the queue and the rate.
  expect(samples.length).toBeGreaterThanOrEqual(8);
  expect(processLabels(samples)).toEqual(['receiver', 'worker-1', 'worker-2']);
  for (const s of samples) {
    expect(s.procs.receiver?.rssMiB).toBeGreaterThan(10);
    expect(s.procs.receiver?.heapUsedMiB).toBeGreaterThan(1);
    expect(s.redisUsedMiB).toBeGreaterThan(0);
    // The queue gauges are sampled every METRICS_SAMPLE_INTERVAL (5 s): none before the first.
    if (s.elapsedS > 6) expect(s.queueWaiting).not.toBeNull();
    expect(s.soak.rssMiB).toBeGreaterThan(10);
  }
  expect(samples.at(-1)!.acknowledged).toBe(r.acknowledged);
  expect(Math.max(...samples.map((s) => s.ratePerS))).toBeGreaterThan(100);
  expect(r.figures.maxRssMiB.receiver).toBeGreaterThan(10);
  expect(r.figures.heapTrend.receiver).not.toBeNull();
  expect(r.figures.trendWindows.scaled).toBe(true);

  const dir = mkdtempSync(join(tmpdir(), 'soak-test-'));
  try {
    const files = writeSamples(join(dir, 'soak-test'), samples, 'short soak', ['a line of figures']);
    const csv = readFileSync(files.csv, 'utf8').trimEnd().split('\n');
    expect(csv).toHaveLength(samples.length + 1);
    const header = csv[0]!.split(',');
    expect(header).toEqual(expect.arrayContaining(['time', 'elapsed_s', 'rate_per_s', 'queue_waiting', 'redis_used_mib', 'receiver_rss_mib', 'receiver_heap_mib', 'worker-2_heap_mib', 'soak_rss_mib']));
    expect(csv.every((line) => line.split(',').length === header.length)).toBe(true);
    const svg = readFileSync(files.svg, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('receiver RSS');
    expect(svg).toContain('Redis used_memory');
    expect(svg).toContain('acknowledged/s');
    expect(svg.match(/<polyline /g)?.length).toBeGreaterThanOrEqual(5);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
