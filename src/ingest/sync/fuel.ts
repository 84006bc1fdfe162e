import { Lines } from '../write/lines.js';
import type { RedisClient } from '../../redis/connect.js';
import type { FuelUnit, UpstreamClient } from '../../upstream/client/index.js';
import { formatLine } from '../../telemetry/lineProtocol.js';
import { FUEL } from '../../telemetry/derivedMeasurements.js';
import type { PointSink } from '../write/sink.js';

/**
 * Fuel is not in the push feed: this input pulls it. For every vehicle the upstream lists, it
 * reads the fuel history since that vehicle's watermark and writes measurement `fuel`
 * (tag `vehicleno`, tag `unit`, float field `value`). The watermark advances only after
 * InfluxDB accepted the points, so a failed run is simply done again; points are idempotent.
 */
export interface FuelSyncOptions {
  client: Pick<UpstreamClient, 'listVehicles' | 'getFuelHistory'>;
  sink: PointSink;
  redis: RedisClient;
  /** Redis hash of watermarks, field `<vehicleno>|<unit>` → last reading time (ms). */
  watermarkKey: string;
  units: readonly FuelUnit[];
  /** How far back the first run of a vehicle reads. */
  lookbackMs: number;
  /** Longest range asked for in one call (upstreams bound it). */
  maxRangeMs: number;
  now?: () => number;
}

export interface FuelSyncResult {
  vehicles: number;
  readings: number;
  failed: Array<{ vehicleno: string; error: string }>;
}

export function fuelLine(vehicleno: string, unit: FuelUnit, time: number, value: number): string {
  return formatLine(FUEL.name, { unit, vehicleno }, { value }, time);
}

export async function syncFuel(opts: FuelSyncOptions): Promise<FuelSyncResult> {
  const now = (opts.now ?? Date.now)();
  const vehicles = await opts.client.listVehicles();
  const result: FuelSyncResult = { vehicles: vehicles.length, readings: 0, failed: [] };
  for (const { vehicleno } of vehicles) {
    for (const unit of opts.units) {
      const field = `${vehicleno}|${unit}`;
      try {
        const mark = await opts.redis.hget(opts.watermarkKey, field);
        let from = mark === null ? now - opts.lookbackMs : Number(mark) + 1;
        while (from <= now) {
          const to = Math.min(now, from + opts.maxRangeMs);
          const readings = await opts.client.getFuelHistory({ vehicleno, from, to, inLitres: unit === 'litres' });
          const fresh = readings.filter((r) => r.time >= from && r.time <= to);
          if (fresh.length > 0) {
            await opts.sink.write(Lines.of(fresh.map((r) => fuelLine(vehicleno, unit, r.time, r.value))));
            result.readings += fresh.length;
          }
          // Only after the store has them: a crash before this line reads the same range again.
          const newest = fresh.reduce((m, r) => Math.max(m, r.time), mark === null ? -Infinity : Number(mark));
          if (Number.isFinite(newest)) await opts.redis.hset(opts.watermarkKey, field, String(newest));
          from = to + 1;
        }
      } catch (err) {
        result.failed.push({ vehicleno, error: err instanceof Error ? err.message : String(err) });
      }
    }
  }
  return result;
}
