import type { RedisClient } from '../../redis/connect.js';
import type { Logger } from '../../log/index.js';
import { formatLine, UnwritablePoint } from '../../telemetry/lineProtocol.js';
import { CHARGING_SESSIONS, PACK_LIFE, STOPS, TRIPS, VEHICLE_EVENTS } from '../../telemetry/derivedMeasurements.js';
import { Lines } from '../write/lines.js';
import { PartialWriteError, type PointSink } from '../write/sink.js';
import type { Metrics } from '../../metrics/index.js';
import { eventId, chargingSessionId, packLifeId, stopId, tripId, type ChargingSession, type Derived, type DerivedEvent, type PackLife, type Stop, type Trip } from './derive.js';
import type { WebhookPayload } from './webhook.js';
import { influxName } from './detectors/detector.js';
import { quarantineEntry, type NewQuarantineEntry } from '../queue/quarantine.js';

/**
 * The outbox of derived events, trips, charging sessions, stops and pack_life rows (a stream per partition, written by
 * `store/` in the same script as the states they came from), delivered at least once: each entry is
 * written to InfluxDB (`vehicle_events`, `trips`, `charging`, `stops`, `pack_life`: a point is the same however often it is
 * written) and handed to the webhook (`webhook.ts`, which drops a repeat by the event's id), and only
 * then acknowledged and deleted. An entry a dispatcher took and never acknowledged (it died) is taken
 * over by another after CLAIM_IDLE_MS.
 */

export const MEASUREMENTS = { event: VEHICLE_EVENTS.name, trip: TRIPS.name, charging: CHARGING_SESSIONS.name, stop: STOPS.name, pack_life: PACK_LIFE.name } as const;

/**
 * An entry, by `kind`. A charging session's kind is `charging`: the stored spelling (another release reads
 * these entries during a rolling upgrade, the corrections' ledger keeps it, and the webhook's type
 * `vehicle.charging` is made of it), kept while the code calls the concept `ChargingSession`.
 */
export type OutboxEntry = ({ kind: 'event' } & DerivedEvent) | ({ kind: 'trip' } & Trip) | ({ kind: 'charging' } & ChargingSession) | ({ kind: 'stop' } & Stop) | ({ kind: 'pack_life' } & PackLife);

/** What a derivation call emitted, as outbox entries: events, trips, charging sessions, stops, pack_life rows. */
export function outputsOf(d: Pick<Derived, 'events' | 'trips' | 'chargingSessions' | 'stops' | 'packLife'>): OutboxEntry[] {
  const out: OutboxEntry[] = [];
  for (const e of d.events) out.push({ kind: 'event', ...e });
  for (const t of d.trips) out.push({ kind: 'trip', ...t });
  for (const c of d.chargingSessions) out.push({ kind: 'charging', ...c });
  for (const p of d.stops) out.push({ kind: 'stop', ...p });
  for (const p of d.packLife) out.push({ kind: 'pack_life', ...p });
  return out;
}

const GROUP = 'dispatch';
const COUNT = 500;
const CLAIM_IDLE_MS = 60_000;

/** The entry as a point (its time: the transition's, or the trip's, stop's or charging session's start). */
export function pointOf(e: OutboxEntry): string {
  if (e.kind === 'event') return formatLine(MEASUREMENTS.event, { vehicleno: e.vehicleno, event: e.event, ...e.tags }, { value: e.value, ...snakeFields(e.fields) }, e.time);
  const { kind, vehicleno, start, ...rest } = e;
  return formatLine(MEASUREMENTS[kind], { vehicleno, ...snakeTags(rest) }, snakeFields(rest), start);
}

/** An entry's marks (corrections/ledger.ts): its revision (0 as first emitted) and whether it retracts. */
export function marksOf(e: OutboxEntry): { revision: number; retracted: boolean; late: boolean } {
  const m = (e.kind === 'event' ? e.fields : e) as { revision?: number; retracted?: number; late?: number };
  return { revision: m.revision ?? 0, retracted: m.retracted === 1, late: m.late === 1 };
}

/**
 * The entry as the webhook posts it. First emitted: `vehicle.<event or kind>`, `webhook-id` the output's id.
 * A correction: `….corrected` (what it says now) or `….retracted`, its `webhook-id` the id and revision
 * (`<id>.<revision>`, a delivery of its own that no receiver drops as a repeat); `data.id` is always the
 * output's id, and `data.revision` a correction's number.
 */
export function webhookPayloadOf(e: OutboxEntry): WebhookPayload {
  const { revision, retracted } = marksOf(e);
  const suffix = retracted ? '.retracted' : revision > 0 ? '.corrected' : '';
  if (e.kind === 'event') {
    const id = eventId(e);
    return { id: revision > 0 ? `${id}.${revision}` : id, type: `vehicle.${e.event}${suffix}`, timestamp: new Date(e.time).toISOString(), data: { id, vehicleno: e.vehicleno, event: e.event, time: e.time, value: e.value, ...e.fields, ...e.tags } };
  }
  const { kind, ...data } = e;
  const id = kind === 'trip' ? tripId(e) : kind === 'charging' ? chargingSessionId(e) : kind === 'stop' ? stopId(e) : packLifeId(e);
  return { id: revision > 0 ? `${id}.${revision}` : id, type: `vehicle.${kind}${suffix}`, timestamp: new Date(retracted ? e.start : e.end).toISOString(), data: { id, ...data } };
}

/** Numeric fields with InfluxDB-style names (`durationS` → `duration_s`), as analysts query them. */
function snakeFields(o: Record<string, unknown>): Record<string, number> {
  const fields: Record<string, number> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === 'number' && Number.isFinite(v)) fields[influxName(k)] = v;
  return fields;
}

/** Text (which geofence a trip, stop or charging session was in) as tags, so that analysts group and filter by it. */
function snakeTags(o: Record<string, unknown>): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (typeof v === 'string' && v !== '') tags[influxName(k)] = v;
  return tags;
}

export interface DispatchOptions {
  redis: RedisClient;
  outboxes: readonly string[];
  sink: PointSink;
  /** Hands entries to the webhook; undefined without EVENTS_WEBHOOK_URL. */
  webhook?: (out: WebhookPayload[]) => Promise<unknown>;
  /** Where derived points the store refuses are kept for replay (the quarantine, stage `derive`); resolves once kept. */
  quarantine?: (entries: NewQuarantineEntry[]) => Promise<void>;
  /** Called with each delivered entry before it is acknowledged (the command ledger's automation rules): at least once. */
  observe?: (entries: OutboxEntry[]) => Promise<void>;
  consumer: string;
  log: Logger;
  metrics?: Metrics | undefined;
  everyMs?: number;
}

/** Reads the outboxes and delivers what they hold, until `stop`. */
export function startDispatch(opts: DispatchOptions): { stop(): Promise<void>; once(): Promise<number> } {
  const { redis, log } = opts;
  const ready = new Set<string>();
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();

  async function ensureGroup(key: string): Promise<void> {
    if (ready.has(key)) return;
    await redis.xgroup('CREATE', key, GROUP, '0', 'MKSTREAM').catch((err: Error) => {
      if (!/BUSYGROUP/.test(err.message)) throw err;
    });
    ready.add(key);
  }

  async function deliver(key: string, entries: Array<[string, string[]]>): Promise<number> {
    if (entries.length === 0) return 0;
    const at = Date.now();
    const kept: NewQuarantineEntry[] = [];
    const keep = (i: number, reason: string) => kept.push(quarantineEntry({ deliveryId: entries[i]![0], sender: '', receivedAt: at, route: key, stage: 'derive' }, i, reason, entries[i]![1][1] ?? ''));
    // An entry that is not one (a replay's, edited by hand) or whose point line protocol cannot carry (a
    // geofence's name from before names were checked) is kept in the quarantine, never written raw, and
    // never blocks the entries beside it.
    const parsed: OutboxEntry[] = [];
    const lines: string[] = [];
    const lineOf: number[] = [];
    entries.forEach(([, f], i) => {
      let e: OutboxEntry;
      try {
        e = JSON.parse(f[1] ?? '') as OutboxEntry;
        lines.push(pointOf(e));
      } catch (err) {
        keep(i, `not written: ${err instanceof UnwritablePoint ? err.message : `not an outbox entry (${(err as Error).message})`}`);
        return;
      }
      parsed.push(e);
      lineOf.push(i);
    });
    try {
      await opts.sink.write(Lines.of(lines));
    } catch (err) {
      // A point InfluxDB refuses for good (a field-type conflict someone else's writes made) would stall
      // the outbox forever if retried: it is kept in the quarantine (stage `derive`, its outbox entry whole,
      // for `telematics-deadletter replay` once the cause is fixed), logged and counted; the rest is written and posted.
      if (!(err instanceof PartialWriteError)) throw err;
      for (const r of err.refused) keep(lineOf[r.line]!, `InfluxDB refused the derived point: ${r.error}`);
    }
    if (kept.length > 0) {
      await opts.quarantine?.(kept);
      log.error({ refused: kept.length, first: kept[0]!.reason }, 'vehicle events: derived points not written; kept in the quarantine (stage derive)');
      opts.metrics?.pointsRefused.inc(kept.length);
    }
    await opts.webhook?.(parsed.map(webhookPayloadOf));
    await opts.observe?.(parsed);
    const ids = entries.map(([id]) => id);
    await redis.multi().xack(key, GROUP, ...ids).xdel(key, ...ids).exec();
    return entries.length;
  }

  async function once(): Promise<number> {
    let n = 0;
    for (const key of opts.outboxes) {
      await ensureGroup(key);
      // Our own unacknowledged entries first (a write that failed), then others' long idle, then new ones.
      const own = (await redis.xreadgroup('GROUP', GROUP, opts.consumer, 'COUNT', COUNT, 'STREAMS', key, '0')) as Array<[string, Array<[string, string[]]>]> | null;
      n += await deliver(key, own?.[0]?.[1] ?? []);
      const claimed = (await redis.xautoclaim(key, GROUP, opts.consumer, CLAIM_IDLE_MS, '0-0', 'COUNT', COUNT)) as [string, Array<[string, string[]]>];
      n += await deliver(key, claimed[1].filter((e) => e[1] !== null));
      const fresh = (await redis.xreadgroup('GROUP', GROUP, opts.consumer, 'COUNT', COUNT, 'STREAMS', key, '>')) as Array<[string, Array<[string, string[]]>]> | null;
      n += await deliver(key, fresh?.[0]?.[1] ?? []);
    }
    return n;
  }

  const every = opts.everyMs ?? 500;
  let timer: NodeJS.Timeout | undefined;
  const loop = () => {
    if (stopped) return;
    running = once()
      .then((n) => {
        if (!stopped) timer = setTimeout(loop, n >= COUNT ? 0 : every);
      })
      .catch((err: Error) => {
        log.warn({ err: err.message }, 'vehicle events: delivering the outbox failed; retried');
        if (!stopped) timer = setTimeout(loop, every * 4);
      });
  };
  timer = setTimeout(loop, 0);
  return {
    once,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running.catch(() => undefined);
    },
  };
}
