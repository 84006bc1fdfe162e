import type { RedisClient } from '../../redis/connect.js';
import { partitionOf, type FleetKeys } from '../queue/keys.js';

export interface VehicleAdmissionOptions {
  /** MAX_VEHICLES: the vehicles the service keeps state for; beyond it a new plate's records are refused. */
  maxVehicles: number;
  /** How long a plate found known is taken as known without asking Redis again. */
  recheckMs?: number;
  now?: () => number;
}

/** A known count older than this is read again before a new vehicle is admitted. */
const COUNT_FRESH_MS = 1_000;
const RECHECK_MS = 3_600_000;

/**
 * Which new vehicles the receiver admits: every vehicle it already keeps state for (the fleet's last-seen
 * sets, fleet/state.ts), every vehicle the upstream lists (its `listvehicles`, kept by the fuel sync), and
 * others while the fleet holds fewer than MAX_VEHICLES. A flood of invented plates is thus refused at
 * the edge, before it costs Redis state, InfluxDB series or a real vehicle's place: a real vehicle is one
 * already known or listed.
 *
 * Plates found known are remembered for `recheckMs`, so a push of known vehicles asks Redis nothing; a
 * push with new plates costs one round trip. Receivers admit without agreeing with each other: between
 * two counts (a second apart) each may admit its own new vehicles, so the bound may be passed by the new
 * vehicles a second brings to all receivers, never more.
 */
export class VehicleAdmission {
  private readonly known = new Map<string, number>();
  private counted = { at: -Infinity, vehicles: 0 };
  /** New vehicles this process admitted since the last count. */
  private admittedSince = 0;
  private readonly now: () => number;
  private readonly recheckMs: number;

  constructor(
    private readonly redis: RedisClient,
    /** The fleet's keys, partition i at index i. */
    private readonly fleet: readonly FleetKeys[],
    /** Set: the plates the upstream lists (RedisKeys.listedVehicles). */
    private readonly listedKey: string,
    readonly opts: VehicleAdmissionOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.recheckMs = opts.recheckMs ?? RECHECK_MS;
  }

  /** Whether `plate` is known to this process (no Redis): a push of known vehicles is admitted at once. */
  isKnown(plate: string): boolean {
    const at = this.known.get(plate);
    return at !== undefined && this.now() - at < this.recheckMs;
  }

  /** Of `plates` (none known to this process), those refused: neither known, nor listed, nor within MAX_VEHICLES. */
  async refused(plates: ReadonlySet<string>): Promise<Set<string>> {
    const asked = [...plates];
    // Commands one by one, sent together: on a Redis Cluster their keys lie on several slots, which one pipeline may not span.
    const answers = await Promise.all(
      asked.map((p) => Promise.all([this.redis.zscore(this.fleet[partitionOf(p, this.fleet.length)]!.seen, p), this.redis.sismember(this.listedKey, p)])),
    );
    const now = this.now();
    const fresh: string[] = [];
    asked.forEach((p, i) => {
      const [seen, listed] = answers[i]!;
      if (seen !== null || listed === 1) this.remember(p, now);
      else fresh.push(p);
    });
    const refused = new Set<string>();
    if (fresh.length === 0) return refused;
    let room = this.opts.maxVehicles - (await this.count()) - this.admittedSince;
    for (const p of fresh) {
      if (room > 0) {
        room--;
        this.admittedSince++;
        this.remember(p, now);
      } else refused.add(p);
    }
    return refused;
  }

  /** Vehicles the fleet keeps state for, counted at most COUNT_FRESH_MS ago. */
  private async count(): Promise<number> {
    if (this.now() - this.counted.at < COUNT_FRESH_MS) return this.counted.vehicles;
    const counts = await Promise.all(this.fleet.map((k) => this.redis.zcard(k.seen)));
    this.counted = { at: this.now(), vehicles: counts.reduce((n, c) => n + c, 0) };
    this.admittedSince = 0;
    return this.counted.vehicles;
  }

  /** Remembered plates stay below MAX_VEHICLES and a tenth: the oldest go first. */
  private remember(plate: string, at: number): void {
    this.known.delete(plate);
    this.known.set(plate, at);
    const cap = Math.ceil(this.opts.maxVehicles * 1.1) + 1;
    if (this.known.size > cap) for (const oldest of this.known.keys()) if (this.known.size > cap) this.known.delete(oldest); else break;
  }
}
