import { recordsOf } from '../flatten/points.js';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../log/index.js';
import { Metrics } from '../../metrics/index.js';
import type { NewQuarantineEntry } from '../queue/quarantine.js';
import { quarantineInMemory } from '../queue/quarantine.testkit.js';
import type { TelemetryRecord } from '../../telemetry/record.js';
import { pushRoutes } from './app.js';

const T = Date.now() - 60_000;

function receiver() {
  const enqueued: TelemetryRecord[] = [];
  const quarantined: NewQuarantineEntry[] = [];
  const metrics = new Metrics({ version: 'test', mode: 'receiver' });
  const routes = pushRoutes(
    { partitions: 1, enqueueRows: async (rows) => void enqueued.push(...rows.flatMap(recordsOf)), enqueueRowsOnce: async (rows) => void enqueued.push(...rows.flatMap(recordsOf)) },
    quarantineInMemory(quarantined),
    { senders: undefined, signatureToleranceMs: 300_000, bodyLimit: 1_000_000, maxRecords: 1_000, quarantineRawLimit: 10_000, flatten: { temperatureSentinels: [] }, retryAfterSeconds: 1, log: createLogger('silent'), metrics },
  );
  const post = (path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) =>
    routes.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { post, metrics, enqueued, quarantined };
}

/** The rejection counter's lines, as a scrape reads them. */
async function rejectedLines(metrics: Metrics): Promise<string[]> {
  return (await metrics.text()).split('\n').filter((l) => l.startsWith('telematics_records_rejected_total{'));
}

describe('a body that cannot be read as records', () => {
  it('is refused, its bytes quarantined under the delivery id it was answered with', async () => {
    const { post, quarantined } = receiver();
    const bytes = new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad]);
    const res = await post('/push/bulk', bytes, { 'content-encoding': 'gzip' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ status: 'FAILURE', data: null, err: 'bad_encoding', msg: 'body is not valid gzip data' });
    expect(quarantined).toMatchObject([
      { deliveryId: res.headers.get('x-delivery-id'), sender: 'anonymous', route: '/push/bulk', index: -1, reason: 'body is not valid gzip data', raw: 'base64:H4sIAN6t' },
    ]);
  });
});

describe('a push with a number beyond a double', () => {
  it('is refused saying so, not as null', async () => {
    const { post, enqueued, quarantined } = receiver();
    const res = await post('/push/realtime', `{"vehicleno":"V","type":"can","data":{"time":${T},"soc":1e400}}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      status: 'FAILURE',
      data: null,
      err: 'invalid_record',
      msg: 'invalid record (quarantined): data.soc: expected a finite number or numeric string, got a number out of range of a double (read as Infinity)',
    });
    expect(enqueued).toEqual([]);
    expect(quarantined.map((e) => e.reason)).toEqual(['data.soc: expected a finite number or numeric string, got a number out of range of a double (read as Infinity)']);
    expect(quarantined[0]!.raw).toBe(`{"vehicleno":"V","type":"can","data":{"time":${T},"soc":1e400}}`);
  });

  it('in a bulk push, is quarantined as sent (not with null for the value), and the records beside it are stored', async () => {
    const { post, enqueued, quarantined } = receiver();
    const bad = `{"vehicleno":"V", "type":"can", "data":{"time":${T}, "soc":1e400, "soh":98}}`;
    const res = await post('/push/bulk', `{"bulkData":[{"vehicleno":"W","type":"can","data":{"time":${T},"soc":50.5}},${bad}]}`);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ data: { accepted: 1, rejected: [{ index: 1 }] } });
    expect(enqueued.map((r) => [r.vehicleno, r.fields.soc])).toEqual([['W', 50.5]]);
    expect(quarantined.map((e) => [e.index, e.raw, e.truncated])).toEqual([[1, bad, false]]);
  });
});

describe('telematics_records_rejected_total', () => {
  it('counts each refused record by the rule it broke, with the label values dashboards select on', async () => {
    const { post, metrics, enqueued } = receiver();
    const can = (data: string, vehicleno = '"V"') => `{"vehicleno":${vehicleno},"type":"can","data":${data}}`;
    const bulk = [
      can(`{"time":${T},"soc":1}`),
      '"junk"',
      '7',
      can(`{"soc":${'['.repeat(40)}${']'.repeat(40)}}`),
      can('{"soc":1}', '""'),
      '{"vehicleno":"V","type":"bus","data":{"soc":1}}',
      can('{"soc":"x"}'),
      can(`{"time":${T},"timestamp":"x"}`),
      can('{"time":"yesterday","soc":1}'),
      `{"vehicleno":"V","type":"gps","data":{"lat":1,"lng":2,"alti":3,"speed":4,"ignstatus":1,"time":1763700000}}`,
    ];
    const res = await post('/push/bulk', `{"bulkData":[${bulk.join(',')}]}`);
    expect(res.status).toBe(202);
    expect(enqueued).toHaveLength(1);
    expect(await rejectedLines(metrics)).toEqual([
      'telematics_records_rejected_total{reason="not_a_record"} 2',
      'telematics_records_rejected_total{reason="nesting"} 1',
      'telematics_records_rejected_total{reason="vehicleno"} 1',
      'telematics_records_rejected_total{reason="type"} 1',
      'telematics_records_rejected_total{reason="data"} 2',
      'telematics_records_rejected_total{reason="time"} 2',
    ]);
  });
});
