import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CONFIG_KEYS, ConfigError, declaredSettings, formerNamesIn, loadConfig, redactedConfig, RENAMED_SETTINGS, renamedWarning, SETTINGS } from './index.js';
import { setting, SETTING_GROUPS } from './settings.js';
import { DEFAULT_DERIVE_OPTIONS, deriveOptions } from '../ingest/events/detectors/context.js';

const TOKEN = 'a-token-of-sixteen-chars';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const cfg = loadConfig({ PUSH_TOKENS: TOKEN });
    expect(cfg).toMatchObject({
      SERVICE_MODE: 'all',
      PORT: 8080,
      REDIS_URL: 'redis://127.0.0.1:6379',
      INFLUX_URL: 'http://127.0.0.1:8086',
      INFLUX_BUCKET: 'telematics',
      BODY_LIMIT: 10 * 1_048_576,
      WRITE_BATCH_LINES: 5_000,
      RETRY_SPAN: 6 * 3_600_000,
      CAN_TEMP_SENTINELS: [-40, -80, -273.15],
      PUSH_TOKENS: [TOKEN],
    });
  });

  it('parses sizes, durations and lists', () => {
    const cfg = loadConfig({ PUSH_TOKENS: `${TOKEN}, ${TOKEN}-2 `, BODY_LIMIT: '512KiB', RETRY_SPAN: '90m', CAN_TEMP_SENTINELS: '-40,-128.5' });
    expect([cfg.BODY_LIMIT, cfg.RETRY_SPAN, cfg.CAN_TEMP_SENTINELS, cfg.PUSH_TOKENS]).toEqual([524_288, 5_400_000, [-40, -128.5], [TOKEN, `${TOKEN}-2`]]);
  });

  it('reads durations by one rule: a unit is required, a bare number is refused', () => {
    const cfg = loadConfig({ PUSH_TOKENS: TOKEN, ENQUEUE_TIMEOUT: '250ms', RETRY_SPAN: '1.5h', FUEL_SYNC_LOOKBACK: '2d', RETRY_BASE_DELAY: '0', RETRY_AFTER: '30 s' });
    expect([cfg.ENQUEUE_TIMEOUT, cfg.RETRY_SPAN, cfg.FUEL_SYNC_LOOKBACK, cfg.RETRY_BASE_DELAY, cfg.RETRY_AFTER]).toEqual([250, 5_400_000, 172_800_000, 0, 30_000]);
    expect(() => loadConfig({ PUSH_TOKENS: TOKEN, ENQUEUE_TIMEOUT: '5000' })).toThrow(
      /ENQUEUE_TIMEOUT: expected a duration with a unit such as 500ms, 30s, 5m, 6h or 1d/,
    );
  });

  it('names every bad value at once', () => {
    try {
      loadConfig({ PUSH_TOKENS: TOKEN, PORT: 'eighty', SERVICE_MODE: 'both', INFLUX_URL: 'localhost', WRITE_BATCH_LINES: '6000' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).problems).toEqual([
        'SERVICE_MODE: Invalid option: expected one of "all"|"receiver"|"worker"',
        'PORT: expected a whole number',
        'INFLUX_URL: expected a URL such as http://127.0.0.1:8086',
        'WRITE_BATCH_LINES: Too big: expected number to be <=5000',
      ]);
    }
  });

  it('refuses to start a receiver with no token unless PUSH_AUTH=none', () => {
    expect(() => loadConfig({})).toThrow(/PUSH_TOKENS: set at least one token, or PUSH_AUTH=none/);
    expect(loadConfig({ PUSH_AUTH: 'none' }).PUSH_TOKENS).toEqual([]);
    expect(loadConfig({ SERVICE_MODE: 'worker' }).SERVICE_MODE).toBe('worker');
    expect(() => loadConfig({ PUSH_TOKENS: 'short' })).toThrow(/at least 16 characters/);
    // A battery's low and recovered thresholds must leave a gap, or it flaps at the threshold.
    expect(() => loadConfig({ PUSH_AUTH: 'none', SOC_LOW: '25', SOC_RECOVERED: '25' })).toThrow(/SOC_RECOVERED: must be above SOC_LOW \(25\)/);
  });

  it('fuel thresholds: litres or percent of the tank, in one unit the sync pulls; the fleet’s zone an IANA name', () => {
    const up = { PUSH_AUTH: 'none', UPSTREAM_URL: 'http://127.0.0.1:9', UPSTREAM_TOKEN: 't' };
    expect(loadConfig({ ...up, FUEL_UNITS: 'percent', FUEL_DROP_MIN: '8%', FUEL_REFUEL_MIN: '10 %' })).toMatchObject({ FUEL_DROP_MIN: { amount: 8, unit: 'percent' }, FUEL_REFUEL_MIN: { amount: 10, unit: 'percent' } });
    expect(loadConfig({ PUSH_AUTH: 'none' })).toMatchObject({ FUEL_DROP_MIN: { amount: 5, unit: 'litres' }, FLEET_TIMEZONE: 'UTC' });
    expect(() => loadConfig({ ...up, FUEL_DROP_MIN: '8%' })).toThrow(/FUEL_REFUEL_MIN: must be in the unit of FUEL_DROP_MIN/);
    expect(() => loadConfig({ ...up, FUEL_DROP_MIN: '8%', FUEL_REFUEL_MIN: '8%' })).toThrow(/FUEL_DROP_MIN: in percent, which FUEL_UNITS \(litres\) does not sync/);
    expect(() => loadConfig({ PUSH_AUTH: 'none', FUEL_DROP_MIN: '5 gallons' })).toThrow(/FUEL_DROP_MIN: expected litres such as 5l/);
    expect(() => loadConfig({ PUSH_AUTH: 'none', FUEL_DROP_MIN: '0l' })).toThrow(/FUEL_DROP_MIN.*must be above 0/);
    expect(loadConfig({ PUSH_AUTH: 'none', FLEET_TIMEZONE: 'Europe/Berlin' }).FLEET_TIMEZONE).toBe('Europe/Berlin');
    expect(() => loadConfig({ PUSH_AUTH: 'none', FLEET_TIMEZONE: 'Mars/Olympus' })).toThrow(/FLEET_TIMEZONE: expected an IANA time zone name/);
  });

  it('a tool needs no push token but must be pointed at its Redis', () => {
    expect(() => loadConfig({}, 'tool')).toThrow(/^invalid configuration:\n  - REDIS_URL: set it to the Redis the service uses; this tool does not assume one$/);
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:7000' }, 'tool').REDIS_URL).toBe('redis://127.0.0.1:7000');
  });

  it('never exposes secrets when logged', () => {
    const cfg = loadConfig({ PUSH_TOKENS: TOKEN, INFLUX_TOKEN: 'influx-secret', REDIS_URL: 'redis://:hunter2@redis:6379' });
    const text = JSON.stringify(redactedConfig(cfg));
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('influx-secret');
    expect(text).not.toContain('hunter2');
  });

  it('cuts credentials out of every URL it shows, a password holding @ too, and refuses them in the webhook URL', () => {
    const cfg = loadConfig({
      PUSH_TOKENS: TOKEN,
      REDIS_URL: 'redis://ops:p@ss:w0rd@redis:6379/0',
      INFLUX_URL: 'https://reader:in@flux@influx.example:8086',
      UPSTREAM_URL: 'https://u:up@stream@api.example/api',
      UPSTREAM_TOKEN: 't',
    });
    const shown = redactedConfig(cfg);
    expect(shown).toMatchObject({
      REDIS_URL: 'redis://[credentials]@redis:6379/0',
      INFLUX_URL: 'https://[credentials]@influx.example:8086',
      UPSTREAM_URL: 'https://[credentials]@api.example/api',
    });
    for (const secret of ['p@ss', 'ss:w0rd', 'in@flux', 'up@stream']) expect(JSON.stringify(shown)).not.toContain(secret);
    expect(() => loadConfig({ PUSH_TOKENS: TOKEN, EVENTS_WEBHOOK_URL: 'https://user:pass@hooks.example/t', EVENTS_WEBHOOK_SECRET: `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}` })).toThrow(
      /EVENTS_WEBHOOK_URL: must not carry credentials \(user:password@\): the receiver verifies each delivery by its signature/,
    );
  });

  it('reads the data-quality and fleet settings, and names what is wrong with them', () => {
    const cfg = loadConfig({ PUSH_TOKENS: TOKEN, TIME_MAX_AGE: '0', PLAUSIBLE_RANGES: 'battery_voltage=0..60, speed=off,power=-5000..5000.5', SILENT_AFTER: '1h,15m' });
    expect(cfg.TIME_MAX_AHEAD).toBe(15 * 60_000);
    expect(cfg.TIME_MAX_AGE).toBe(0);
    expect(cfg.PLAUSIBLE_RANGES).toEqual([
      { name: 'battery_voltage', min: 0, max: 60 },
      { name: 'speed', off: true },
      { name: 'power', min: -5000, max: 5000.5 },
    ]);
    expect(cfg.SILENT_AFTER).toEqual([
      { label: '15m', ms: 900_000 },
      { label: '1h', ms: 3_600_000 },
    ]);
    expect(loadConfig({ PUSH_TOKENS: TOKEN }).SILENT_AFTER.map((t) => t.label)).toEqual(['15m', '1h', '24h']);
    const bad = () => loadConfig({ PUSH_TOKENS: TOKEN, PLAUSIBLE_RANGES: 'soc=100..0,zero_position=0..1', SILENT_AFTER: '60' });
    expect(bad).toThrow(/PLAUSIBLE_RANGES\.0: "soc=100\.\.0": expected rule=min\.\.max or rule=off/);
    expect(bad).toThrow(/PLAUSIBLE_RANGES\.1: "zero_position=0\.\.1"/);
    expect(bad).toThrow(/SILENT_AFTER\.0: "60": expected a duration with a unit/);
  });
});

describe('settings declared once', () => {
  it('every setting has a description and a group; a schema entry made without setting() is refused', () => {
    for (const [name, d] of SETTINGS) {
      expect(d.description.trim(), name).not.toBe('');
      expect(Object.keys(SETTING_GROUPS), name).toContain(d.group);
    }
    expect(SETTINGS.map(([name]) => name)).toEqual(CONFIG_KEYS);
    expect(() => declaredSettings({ SOME_SETTING: z.string().default('x') })).toThrow(/SOME_SETTING: declared without setting\(\)/);
    expect(() => setting(z.string(), { group: 'service', default: 'x', description: ' ' })).toThrow(/needs a description/);
    expect(declaredSettings({ SOME_SETTING: setting(z.string(), { group: 'service', default: 'x', description: 'what it does' }) })).toEqual([['SOME_SETTING', { group: 'service', default: 'x', description: 'what it does' }]]);
  });

  it('a declared default is parsed by the setting’s own rule: one it refuses fails at once', () => {
    expect(() => setting(z.string().regex(/^\d+$/, 'expected a whole number'), { group: 'service', default: 'ten', description: 'a count' })).toThrow(/expected a whole number/);
  });

  it('the events’ derive options are the settings’ defaults, units as the options name them', () => {
    const opts = DEFAULT_DERIVE_OPTIONS;
    expect(opts).toMatchObject({ windowMs: 30_000, maxGapMs: 3_600_000, tripMinDistanceM: 500, maxJumpSpeedKmh: 300, chargingMinCurrentA: 0.5, socDrainWindowMs: 6 * 3_600_000, speedLimitPreferLowest: true });
    const cfg = loadConfig({ PUSH_AUTH: 'none', EVENTS_MAX_GAP: '2h', SPEED_LIMIT: '80', SPEED_LIMIT_PREFER_LOWEST: 'off' });
    expect(deriveOptions(cfg)).toEqual({ ...opts, maxGapMs: 7_200_000, speedLimitKmh: 80, speedLimitPreferLowest: false });
  });
});

describe('a renamed setting', () => {
  const base = { PUSH_AUTH: 'none' };
  const warn = { formerly: 'TRIP_MAX_GAP', name: 'EVENTS_MAX_GAP' };

  it('is read by its former name for one release, with a warning naming the new one', () => {
    expect(RENAMED_SETTINGS).toContainEqual(warn);
    expect(loadConfig({ ...base, TRIP_MAX_GAP: '2h' }).EVENTS_MAX_GAP).toBe(7_200_000);
    expect(loadConfig({ ...base, EVENTS_MAX_GAP: '3h' }).EVENTS_MAX_GAP).toBe(10_800_000);
    expect(loadConfig({ ...base, TRIP_MAX_GAP: '' }).EVENTS_MAX_GAP).toBe(3_600_000);
    expect(formerNamesIn({ ...base, TRIP_MAX_GAP: '2h' })).toEqual([warn]);
    expect(formerNamesIn({ ...base, EVENTS_MAX_GAP: '2h' })).toEqual([]);
    expect(renamedWarning(warn)).toMatch(/TRIP_MAX_GAP is now EVENTS_MAX_GAP/);
  });

  it('refuses both names set, naming both, and names a bad value by the name it was given', () => {
    expect(() => loadConfig({ ...base, TRIP_MAX_GAP: '2h', EVENTS_MAX_GAP: '2h' })).toThrow(/EVENTS_MAX_GAP, TRIP_MAX_GAP: both set/);
    expect(() => loadConfig({ ...base, TRIP_MAX_GAP: '2h', EVENTS_MAX_GAP: '2h', SOC_LOW: '50' })).toThrow(/both set[\s\S]*SOC_RECOVERED/);
    expect(() => loadConfig({ ...base, TRIP_MAX_GAP: '2', EVENTS_MAX_GAP: '2h' })).toThrow(/both set/);
    expect(() => loadConfig({ ...base, TRIP_MAX_GAP: '2' })).toThrow(/TRIP_MAX_GAP \(now EVENTS_MAX_GAP\): expected a duration/);
  });

  it('is not a setting of its own: .env.example and the docs list the new name', () => {
    expect(CONFIG_KEYS).not.toContain('TRIP_MAX_GAP');
  });
});
