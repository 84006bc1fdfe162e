import { inject } from 'vitest';
import { influxQL } from '../../src/devstack/influxd.js';

export type Row = Record<string, unknown>;

/** InfluxQL on the real influxd behind the front; times come back as epoch milliseconds. */
export function influxQuery(db: string, q: string): Promise<Row[]> {
  return influxQL<Row>(inject('influxRawUrl'), db, q);
}
