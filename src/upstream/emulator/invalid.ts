/**
 * Records that break the spec's shapes on purpose, for demos of a receiver's quarantine. Each one is
 * invalid under any reading of the spec, not merely unusual.
 */
import type { Rng } from './prng.js';
import type { PushRecord } from './records.js';

type Spoiler = (r: PushRecord) => unknown;

const SPOILERS: readonly Spoiler[] = [
  // No vehicle.
  ({ type, data }) => ({ type, data }),
  // A type the spec does not have.
  (r) => ({ ...r, type: 'obd' }),
  // data not an object.
  (r) => ({ ...r, data: 'n/a' }),
  // A gps record without its timestamp (a CAN record without one may be stamped on receipt, so it
  // gets a fractional timestamp instead).
  (r) => {
    if (r.type === 'can') return { ...r, data: { ...r.data, time: r.data.time + 0.5 } };
    const { time: _dropped, ...data } = r.data;
    return { ...r, data };
  },
  // Timestamp not an integer.
  (r) => ({ ...r, data: { ...r.data, time: new Date(r.data.time).toISOString() } }),
  // A number sent as a word.
  (r) => ({ ...r, data: r.type === 'gps' ? { ...r.data, lat: 'north' } : { ...r.data, soc: 'full' } }),
];

export function spoil(record: PushRecord, rng: Rng): unknown {
  return rng.pick(SPOILERS)(record);
}
