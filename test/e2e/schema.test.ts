/**
 * The record's schema is the one place a record is defined: here a fixture schema adds what a release
 * would (a CAN parameter with a range, and a third record type with its own measurement and rules), as
 * schema entries and nothing else, and the real service stores them through both paths: the
 * receiver's scanner (plainly valid records) and the general path (a record it hands over: a numeric
 * string, an escaped plate, a value its rules refuse).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FieldSpec, RecordTypeSpec } from '../../src/telemetry/vehicleData.js';
import { RecordSorter } from '../../src/ingest/receive/sort.js';
import { startTestService, type TestService } from '../harness/service.js';

vi.mock('../../src/telemetry/vehicleData.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/telemetry/vehicleData.js')>();
  const field = (id: number, name: string, range: FieldSpec['range'], unit: string): FieldSpec => ({ id, name, json: 'number', unit, range, stored: 'float', description: name });
  const motor = field(real.CAN.fields.length + 6, 'motor_temperature', { rule: 'motor_temperature', min: -40, max: 200, refuses: 'field', why: 'physics: a motor beyond 200 °C has failed' }, '°C');
  const pressure = { rule: 'tyre_pressure', min: 0, max: 1_000, refuses: 'field', why: 'physics: no road tyre holds 10 bar' } as const;
  const tpms: RecordTypeSpec = {
    name: 'tpms',
    measurement: 'tyres',
    row: 't',
    streamId: 2,
    description: 'tyre pressures',
    time: 'required',
    minParameters: 1,
    flatten: 'plain',
    fields: [field(motor.id + 1, 'tyre_front_left', pressure, 'kPa'), field(motor.id + 2, 'tyre_front_right', pressure, 'kPa')],
  };
  const CAN = { ...real.CAN, fields: [...real.CAN.fields, motor] };
  return { ...real, CAN, RECORD_TYPES: [real.GPS, CAN, tpms] };
});

const NOW = Math.floor(Date.now() / 1000) * 1000;
let svc: TestService;
/** Records the general path was handed: the scanner's refusals to read a record itself. */
const handedOver: unknown[] = [];

beforeAll(async () => {
  const item = RecordSorter.prototype.item;
  vi.spyOn(RecordSorter.prototype, 'item').mockImplementation(function (this: RecordSorter, i, record, text) {
    handedOver.push(record);
    return item.call(this, i, record, text);
  });
  svc = await startTestService();
});
afterAll(async () => svc?.close());

const quote = (s: string) => `'${s.replace(/'/g, "\\'")}'`;

describe('a CAN parameter added to the schema with a range', () => {
  it('is stored exactly through the scanner and the general path, and judged by its range on both', async () => {
    const v = 'MOTOR-1';
    handedOver.length = 0;
    const res = await svc.post('/push/bulk', {
      bulkData: [
        { vehicleno: v, type: 'can', data: { time: NOW - 3000, soc: 80, motor_temperature: 85.25 } }, // scanner
        { vehicleno: v, type: 'can', data: { time: NOW - 2000, soc: 81, motor_temperature: '-12.5' } }, // general path: a string
        { vehicleno: v, type: 'can', data: { time: NOW - 1000, soc: 82, motor_temperature: 250 } }, // refused field
      ],
    });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { data: { refusedFields: Array<{ index: number; field: string; rule: string }> } };
    expect(body.data.refusedFields).toEqual([expect.objectContaining({ index: 2, field: 'motor_temperature', rule: 'motor_temperature' })]);
    // The plain record was read by the scanner; the other two were handed over.
    expect(handedOver).toHaveLength(2);
    const rows = await svc.waitForRows(`SELECT soc, motor_temperature FROM can WHERE vehicleno = ${quote(v)}`, 3);
    expect(rows.map((r) => [r.time, r.soc, r.motor_temperature])).toEqual([
      [NOW - 3000, 80, 85.25],
      [NOW - 2000, 81, -12.5],
      [NOW - 1000, 82, null],
    ]);
  });
});

describe('a third record type added to the schema', () => {
  it('lands in its own measurement through both paths, with its own plausibility rule', async () => {
    const v = 'TYRES-1';
    handedOver.length = 0;
    const res = await svc.post('/push/bulk', {
      bulkData: [
        { vehicleno: v, type: 'tpms', data: { time: NOW - 3000, tyre_front_left: 231.5, tyre_front_right: 229 } }, // scanner
        { vehicleno: `${v} B`, type: 'tpms', data: { time: NOW - 2000, tyre_front_left: 230, tyre_front_right: 4000 } }, // refused field: general path
        { vehicleno: v, type: 'tpms', data: { tyre_front_left: 230 } }, // refused record: its time is required
      ],
    });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { data: { accepted: number; rejected: Array<{ index: number; error: string }>; refusedFields: Array<{ index: number; rule: string }> } };
    expect(body.data.accepted).toBe(2);
    expect(body.data.rejected).toEqual([{ index: 2, error: 'data.time: is required' }]);
    expect(body.data.refusedFields).toEqual([expect.objectContaining({ index: 1, rule: 'tyre_pressure' })]);
    expect(handedOver).toHaveLength(2);
    const rows = await svc.waitForRows(`SELECT * FROM tyres WHERE vehicleno =~ /^TYRES-1/`, 2);
    expect(rows.map((r) => [r.time, r.vehicleno, r.tyre_front_left, r.tyre_front_right])).toEqual([
      [NOW - 3000, v, 231.5, 229],
      [NOW - 2000, `${v} B`, 230, null],
    ]);
    // Nothing of it went to another type's measurement.
    expect(await svc.query(`SELECT * FROM can WHERE vehicleno =~ /^TYRES/`)).toEqual([]);
    expect(await svc.query(`SELECT * FROM gps WHERE vehicleno =~ /^TYRES/`)).toEqual([]);
  });

  it('is counted by type, and a realtime push of it is taken too', async () => {
    const res = await svc.post('/push/realtime', { vehicleno: 'TYRES-2', type: 'tpms', data: { time: NOW - 500, tyre_front_left: 220 } });
    expect(res.status).toBe(202);
    await svc.waitForRows(`SELECT * FROM tyres WHERE vehicleno = 'TYRES-2'`, 1);
    const metrics = await (await fetch(`${svc.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^telematics_records_accepted_total\{type="tpms"\} 3$/m);
  });
});
