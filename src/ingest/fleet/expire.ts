import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import type { RedisKeys } from '../queue/keys.js';

/** Vehicles looked at per partition and run: a fleet that fell silent at once is forgotten over several runs. */
const PER_RUN = 1_000;

type WithExpire = { telematicsVehicleExpire(n: number, ...args: string[]): Promise<number> };

/**
 * Forgets the vehicles not heard from since `now - expiryMs` (VEHICLE_EXPIRY): their last seen, position,
 * silences, latest values and everything their events are derived from, so that what Redis holds is bounded by the
 * fleet that reports, not by every plate ever seen. Each in one script that first checks it is still
 * silent (`vehicle-expire.lua`). A vehicle that reports again starts afresh: its events from its new
 * records. Run by the fleet status job (one replica a run). Returns the plates removed.
 */
export async function expireVehicles(
  redis: RedisClient,
  keys: RedisKeys,
  /** The ids of a vehicle's record sets (the events' RECORD_SETS), whose keys go with it. */
  recordSets: readonly number[],
  silentLabels: readonly string[],
  now: number,
  expiryMs: number,
): Promise<string[]> {
  if (expiryMs <= 0) return [];
  defineScript(redis, 'telematicsVehicleExpire', 'vehicle-expire');
  const cutoff = now - expiryMs;
  const removed: string[] = [];
  for (let i = 0; i < keys.partitions.length; i++) {
    const fleet = keys.fleet(i);
    // Strictly before the cutoff: `(`.
    const stale = await redis.zrangebyscore(fleet.seen, '-inf', `(${cutoff}`, 'LIMIT', 0, PER_RUN);
    for (const plate of stale) {
      const own = [keys.vehicleCorrections(i, plate), ...recordSets.map((id) => keys.vehicleRecords(i, plate, id))];
      const list = [fleet.seen, fleet.positions, fleet.resumed, keys.vehicleState(i), keys.vehiclesPending(i), keys.eventsCorrections(i), ...own, ...silentLabels.flatMap((l) => [fleet.silent(l), fleet.silentLastSeen(l)])];
      const done = await (redis as unknown as WithExpire).telematicsVehicleExpire(list.length, ...list, plate, String(cutoff), String(own.length));
      if (done === 1) {
        removed.push(plate);
        // Its latest values (commands/latest.ts) go with it; a record arriving meanwhile sets them again.
        await redis.hdel(fleet.latest, plate);
      }
    }
  }
  return removed;
}
