import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mulberry32 } from '../../../upstream/emulator/prng.js';
import type { EventInput } from '../derive.js';
import { history, HISTORY_OPTS, quiet, runOrdered, V, type Named } from '../events.testkit.js';
import type { OutboxEntry } from '../outbox.js';
import { entryId } from './ledger.js';
import { CorrectedVehicle } from './model.testkit.js';
import { cases } from '../../../../test/harness/short.js';

/**
 * Outputs that follow from the records, not from when they arrive (issue #45): a vehicle's records
 * delivered re-sent, late past the window, after lost coverage, with one stream minutes behind the
 * other, through slow writes; once all are in and every correction has run, what a consumer holds is
 * what in-order delivery tells, output by output, with the same ids (marks of lateness and revision aside).
 */

const MIN = 60_000;
const OPTS = { ...HISTORY_OPTS, checkpointIntervalMs: 5 * MIN };

type Scenario = 'resent' | 'coverage' | 'gpsBehind' | 'canBehind' | 'slowWrites' | 'all';

interface Arrival {
  at: number;
  tie: number;
  r: Named;
}

/** When each record arrives, by scenario: most within the window, the rest as the scenario has them late. */
function arrivals(records: readonly Named[], seed: number, scenario: Scenario): Arrival[] {
  const rnd = mulberry32(seed ^ 0x2545f491);
  const W = OPTS.windowMs;
  const first = records[0]!.time;
  const last = records.at(-1)!.time;
  const out: Arrival[] = [];
  const has = (s: Scenario) => scenario === s || scenario === 'all';
  // Lost coverage: a span of both streams (or of one) held by the device, uploaded in 60-s bulks after it ends, live data flowing meanwhile.
  const lossFrom = first + rnd() * (last - first) * 0.6;
  const lossTo = lossFrom + (5 + rnd() * 35) * MIN;
  const lossTypes = rnd() < 0.6 ? ['gps', 'can'] : [rnd() < 0.5 ? 'gps' : 'can'];
  const uploadAt = lossTo + rnd() * 20 * MIN;
  const bulk = (t: number, size: number) => Math.floor((t - first) / size);
  for (const r of records) {
    let at = r.time + Math.floor(rnd() * (W - 1));
    let tie = rnd();
    if (has('coverage') && r.time >= lossFrom && r.time <= lossTo && lossTypes.includes(r.type)) {
      at = uploadAt + bulk(r.time, MIN) * 1_000;
      tie = r.time / 1e13;
    } else if (has('gpsBehind') && r.type === 'gps') {
      // GPS in 8-minute bulks, each up to a minute after it ends.
      const end = first + (bulk(r.time, 8 * MIN) + 1) * 8 * MIN;
      at = end + (bulk(r.time, 8 * MIN) % 7) * 8_000;
      tie = r.time / 1e13;
    } else if (has('canBehind') && r.type === 'can') {
      // CAN in 15-minute bulks: past EVENTS_MAX_SKEW behind the GPS stream.
      const end = first + (bulk(r.time, 15 * MIN) + 1) * 15 * MIN;
      at = end + 5_000;
      tie = r.time / 1e13;
    }
    out.push({ at, tie, r });
    // A sender's re-send after a timeout: minutes to hours later.
    if (has('resent') && rnd() < 0.05) out.push({ at: at + MIN + rnd() * 120 * MIN, tie: rnd(), r });
  }
  out.sort((a, b) => a.at - b.at || a.tie - b.tie);
  // Slow writes: a job written seconds to minutes after the next ones, its records derived after theirs.
  if (has('slowWrites')) {
    for (let i = 0; i < out.length; i += 20) if (rnd() < 0.1) for (let j = i; j < Math.min(i + 20, out.length); j++) out[j]!.at += 5_000 + rnd() * 3 * MIN;
    out.sort((a, b) => a.at - b.at || a.tie - b.tie);
  }
  return out;
}

/** The vehicle through the service's corrections: delivered in batches as they arrive, corrections run as they come due. */
function corrected(records: readonly Named[], seed: number, scenario: Scenario): CorrectedVehicle {
  const v = new CorrectedVehicle(V, OPTS);
  const rnd = mulberry32(seed ^ 0x51ed270b);
  const all = arrivals(records, seed, scenario);
  let now = -Infinity;
  let lastCorrection = -Infinity;
  for (let j = 0; j < all.length; ) {
    const n = 1 + Math.floor(rnd() * 25);
    const batch = all.slice(j, j + n);
    j += n;
    now = Math.max(now, batch.at(-1)!.at);
    v.deliver(batch.map((a) => a.r), now);
    if (now - lastCorrection >= 5_000) {
      lastCorrection = now;
      v.correct(now);
    }
  }
  // Once everything is in: the vehicle falls quiet, and every correction due runs.
  for (let round = 0; round < 10; round++) {
    now += quiet(OPTS);
    v.flush(now);
    if (!v.correct(now)) break;
  }
  expect(v.state.late.correctFrom).toBe(Infinity);
  return v;
}

const MARKS = new Set(['late', 'revision', 'retracted']);
const plain = (e: OutboxEntry): string => JSON.stringify(e, (k, val: unknown) => (MARKS.has(k) ? undefined : val));

/** What in-order delivery tells, by id. */
function inOrder(records: readonly EventInput[]): Map<string, string> {
  const d = runOrdered(records, OPTS);
  const entries: OutboxEntry[] = [...d.events.map((e) => ({ kind: 'event' as const, ...e })), ...d.trips.map((t) => ({ kind: 'trip' as const, ...t })), ...d.sessions.map((c) => ({ kind: 'charging' as const, ...c })), ...d.stops.map((p) => ({ kind: 'stop' as const, ...p }))];
  return new Map(entries.map((e) => [entryId(e), plain(e)]));
}

const held = (v: CorrectedVehicle): Map<string, string> => new Map([...v.told].map(([id, e]) => [id, plain(e)]));

describe('outputs that follow from the records, not from when they arrive', () => {
  it('any delivery, late past the window up to hours, re-sent, after lost coverage, one stream behind the other, through slow writes: once all are in, what was told is what in-order delivery tells', () => {
    const seen: Record<string, number> = {};
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.constantFrom<Scenario>('resent', 'coverage', 'gpsBehind', 'canBehind', 'slowWrites', 'all'), (seed, scenario) => {
        const records = history(seed) as Named[];
        const want = inOrder(records);
        const v = corrected(records, seed, scenario);
        expect(held(v)).toEqual(want);
        seen.corrections = (seen.corrections ?? 0) + v.corrections;
        seen.late = (seen.late ?? 0) + v.late;
        seen.tooLate = (seen.tooLate ?? 0) + v.tooLate;
      }),
      { numRuns: cases(60) },
    );
    // The scenarios came late, and were corrected; nothing was past the horizon.
    expect(seen.late).toBeGreaterThan(cases(200));
    expect(seen.corrections).toBeGreaterThan(cases(60));
    expect(seen.tooLate).toBe(0);
  });
});


