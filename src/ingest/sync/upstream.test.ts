/**
 * What the service tells an operator of its upstream account (issue #47): the token's expiry, read from
 * the token an emulator issued (a JWT with exp), as a metric and in the log, warned before it comes; and
 * a fuel sync that falls behind its plan, in the log and metrics.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { Metrics } from '../../metrics/index.js';
import { EmulatorState } from '../../upstream/emulator/state.js';
import type { FuelSyncResult } from './fuel.js';
import { reportPlan } from './report.js';
import { TokenExpiryWatch } from './upstream.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);

function logger() {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info', formatters: { level: (label) => ({ level: label }) } }, new Writable({ write: (chunk, _e, cb) => (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), cb()) }));
  return { log, lines };
}

const gauge = async (m: Metrics, name: 'upstreamTokenExpiry' | 'fuelSyncBehind') => (await m[name].get()).values.map((v) => v.value);

describe('the upstream token\'s expiry', () => {
  const state = new EmulatorState();

  it('is read from a JWT\'s exp, set as a metric, and warned of within UPSTREAM_TOKEN_WARN_BEFORE, then told expired', async () => {
    const expiresAt = NOW + 2 * DAY;
    const token = state.issueToken('demo', expiresAt, NOW - 13 * DAY);
    let clock = NOW;
    const { log, lines } = logger();
    const metrics = new Metrics({ version: 'test', mode: 'all' });
    const watch = new TokenExpiryWatch(token, 3 * DAY, log, metrics, () => clock);
    watch.start(60_000);
    watch.stop();
    expect(await gauge(metrics, 'upstreamTokenExpiry')).toEqual([expiresAt / 1000]);
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', expiresAt: new Date(expiresAt).toISOString(), inHours: 48, msg: 'upstream token expires soon (UPSTREAM_TOKEN_WARN_BEFORE): set a new UPSTREAM_TOKEN before then' })]);
    expect(JSON.stringify(lines)).not.toContain(token);
    clock = expiresAt;
    expect(watch.check()).toBe(true);
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'upstream token expired: every call to the upstream is refused; set a new UPSTREAM_TOKEN' });
  });

  it('says when it comes, without a warning, while it is further off', async () => {
    const expiresAt = NOW + 10 * DAY;
    const { log, lines } = logger();
    const metrics = new Metrics({ version: 'test', mode: 'all' });
    const watch = new TokenExpiryWatch(state.issueToken('demo', expiresAt, NOW), 3 * DAY, log, metrics, () => NOW);
    watch.start(60_000);
    watch.stop();
    expect(await gauge(metrics, 'upstreamTokenExpiry')).toEqual([expiresAt / 1000]);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', expiresAt: new Date(expiresAt).toISOString(), msg: 'upstream token: expiry read from the token' })]);
  });

  it('is unknown for a token that carries none, and said so; the metric stays absent', async () => {
    const { log, lines } = logger();
    const metrics = new Metrics({ version: 'test', mode: 'all' });
    const watch = new TokenExpiryWatch('emulator-token', 3 * DAY, log, metrics, () => NOW);
    watch.start(60_000);
    watch.stop();
    expect(await gauge(metrics, 'upstreamTokenExpiry')).toEqual([]);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', reason: 'the token is not a JWT (three base64url parts), so it carries no expiry' })]);
    expect(watch.check()).toBe(false);
  });
});

describe('a fuel sync behind its plan', () => {
  const result = (plan: FuelSyncResult['plan'], vehicles: number): FuelSyncResult => ({ vehicles, readings: 0, changes: 0, whileMoving: 0, failedCount: 0, failed: [], plan });

  it('sets how far behind and the vehicles by state, and warns when the pacing cannot carry the fleet', async () => {
    const cfg = loadConfig({ PUSH_AUTH: 'none' });
    const { log, lines } = logger();
    const metrics = new Metrics({ version: 'test', mode: 'all' });
    // 10,000 vehicles synced hourly need 240,000 calls a day; 400 ms and 5 allow about 213,000.
    reportPlan(result({ due: 10_000, synced: 2_100, notReached: 7_900, outOfBudget: 0, behindMs: 1_800_000, spacingMs: 3_600_000 }, 10_000), cfg, log, metrics);
    expect(await gauge(metrics, 'fuelSyncBehind')).toEqual([1_800]);
    expect((await metrics.fuelSyncVehicles.get()).values.map((v) => [v.labels.state, v.value])).toEqual([['due', 10_000], ['synced', 2_100], ['not_reached', 7_900], ['out_of_budget', 0]]);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        notReached: 7_900,
        behindSeconds: 1_800,
        callsNeededPerDay: 240_000,
        callsAllowedPerDay: 213_333,
        msg: 'fuel sync behind: the fleet needs more history calls a day than the account\'s pacing allows; vehicles are synced less often than their budget allows',
      }),
    ]);
  });

  it('logs nothing and shows 0 behind when every due vehicle was reached', async () => {
    const { log, lines } = logger();
    const metrics = new Metrics({ version: 'test', mode: 'all' });
    reportPlan(result({ due: 30, synced: 30, notReached: 0, outOfBudget: 2, behindMs: 0, spacingMs: 3_600_000 }, 40), loadConfig({ PUSH_AUTH: 'none' }), log, metrics);
    expect(await gauge(metrics, 'fuelSyncBehind')).toEqual([0]);
    expect(lines).toEqual([]);
  });
});
