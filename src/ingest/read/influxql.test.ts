import { describe, expect, it } from 'vitest';
import { influxTargetOf, quoteIdent, quoteString, timeLiteral } from './influxql.js';

describe('InfluxQL reads', () => {
  it('quotes what a sender or an operator named so that it never ends the statement or the string', () => {
    expect(quoteString(`KA01'; DROP MEASUREMENT x; --\nnext`)).toBe(`'KA01\\'; DROP MEASUREMENT x; --\\nnext'`);
    expect(quoteString('a\\b')).toBe(`'a\\\\b'`);
    expect(quoteIdent('end')).toBe('"end"');
    expect(quoteIdent('we"ird')).toBe('"we\\"ird"');
    expect(timeLiteral(Date.UTC(2026, 0, 5, 8))).toBe(`'2026-01-05T08:00:00.000Z'`);
  });

  it('reads where the service writes: a bucket naming a retention policy is db/rp', () => {
    const cfg = { INFLUX_URL: 'http://127.0.0.1:8086/', INFLUX_TOKEN: 't', INFLUX_TIMEOUT: 5_000 };
    expect(influxTargetOf({ ...cfg, INFLUX_BUCKET: 'telematics/autogen' })).toEqual({ url: 'http://127.0.0.1:8086', token: 't', db: 'telematics', rp: 'autogen', timeoutMs: 5_000 });
    expect(influxTargetOf({ ...cfg, INFLUX_BUCKET: 'telematics' })).toEqual({ url: 'http://127.0.0.1:8086', token: 't', db: 'telematics', timeoutMs: 5_000 });
  });
});
