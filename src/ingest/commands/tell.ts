import type { Logger } from '../../log/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { RedisClient } from '../../redis/connect.js';
import { COMMANDS } from '../../telemetry/derivedMeasurements.js';
import { formatLine } from '../../telemetry/lineProtocol.js';
import type { WebhookPayload } from '../events/webhook.js';
import { Lines } from '../write/lines.js';
import { PartialWriteError, type PointSink } from '../write/sink.js';
import type { CommandLedger } from './ledger.js';
import type { CommandEntry, CommandState } from './model.js';

/**
 * Each state change of a command, published once it is stored: a point of measurement `commands` (the
 * history, kept after the live ledger forgets the command), a webhook delivery signed as the events' are
 * (`command.<state>`, `webhook-id` `<command id>.<state>`), and `telematics_commands_total{type,outcome}`.
 * The scripts append each change to a stream (CommandKeys.changes) in the same step as the state; a
 * consumer group reads it on the workers, and a change is acknowledged only once its point is written
 * and its delivery queued: at least once, the same point and the same `webhook-id` each time.
 */

const GROUP = 'tell';
const COUNT = 200;
const CLAIM_IDLE_MS = 60_000;

/** A change's point: tags say which command, of what, by whom and why; fields the vehicle's state when asked. */
export function commandPoint(c: CommandEntry, state: CommandState, at: number): string {
  const tags: Record<string, string> = { vehicleno: c.vehicleno, id: c.id, command: c.op, type: c.type, state, author: c.author.name, author_kind: c.author.kind, reason: c.reason };
  const fields: Record<string, number> = { value: 1, immediate: c.immediate ? 1 : 0, requested_at: c.requestedAt };
  const v = c.vehicle;
  if (v.fixTime !== undefined) fields.fix_time = v.fixTime;
  if (v.lat !== undefined) fields.lat = v.lat;
  if (v.lng !== undefined) fields.lng = v.lng;
  if (v.speed !== undefined) fields.speed = v.speed;
  if (v.ignition !== undefined) fields.ignition = v.ignition;
  if (v.soc !== undefined) fields.soc = v.soc;
  if (v.allowCharging !== undefined) fields.allow_charging = v.allowCharging;
  if (v.allowDischarging !== undefined) fields.allow_discharging = v.allowDischarging;
  return formatLine(COMMANDS.name, tags, fields, at);
}

/** A change as the webhook posts it: the command whole, as the ledger holds it, with the state it moved to. */
export function commandPayload(c: CommandEntry, state: CommandState, at: number): WebhookPayload {
  const note = [...c.history].reverse().find((h) => h.state === state && h.at === at)?.note;
  return { id: `${c.id}.${state}`, type: `command.${state}`, timestamp: new Date(at).toISOString(), data: { ...c, told: state, ...(note !== undefined ? { note } : {}) } as unknown as Record<string, unknown> };
}

export interface TellDeps {
  redis: RedisClient;
  ledger: CommandLedger;
  sink: PointSink;
  /** Queues webhook deliveries (the events' queue); undefined without EVENTS_WEBHOOK_URL. */
  webhook?: ((out: WebhookPayload[]) => Promise<unknown>) | undefined;
  metrics?: Metrics | undefined;
  consumer: string;
  log: Logger;
}

/** Publishes what the changes stream holds, until it is empty; returns how many changes were published. */
export async function tellChanges(d: TellDeps): Promise<number> {
  const key = d.ledger.keys.changes;
  await d.redis.xgroup('CREATE', key, GROUP, '0', 'MKSTREAM').catch((err: Error) => {
    if (!/BUSYGROUP/.test(err.message)) throw err;
  });
  let told = 0;
  // Our own unacknowledged changes first (a write that failed), then others' long idle (a worker died), then new ones.
  const own = (await d.redis.xreadgroup('GROUP', GROUP, d.consumer, 'COUNT', COUNT, 'STREAMS', key, '0')) as Array<[string, Array<[string, string[]]>]> | null;
  told += await tellEntries(d, key, own?.[0]?.[1] ?? []);
  const claimed = (await d.redis.xautoclaim(key, GROUP, d.consumer, CLAIM_IDLE_MS, '0', 'COUNT', COUNT)) as [string, Array<[string, string[]]>];
  told += await tellEntries(d, key, claimed[1] ?? []);
  for (;;) {
    const got = (await d.redis.xreadgroup('GROUP', GROUP, d.consumer, 'COUNT', COUNT, 'STREAMS', key, '>')) as Array<[string, Array<[string, string[]]>]> | null;
    const entries = got?.[0]?.[1] ?? [];
    if (entries.length === 0) return told;
    told += await tellEntries(d, key, entries);
  }
}

async function tellEntries(d: TellDeps, key: string, entries: Array<[string, string[] | null]>): Promise<number> {
  const live = entries.filter((e): e is [string, string[]] => e[1] !== null);
  if (entries.length === 0) return 0;
  const changes = live.map(([, kv]) => {
    const m = new Map<string, string>();
    for (let i = 0; i + 1 < kv.length; i += 2) m.set(kv[i]!, kv[i + 1]!);
    return { id: m.get('id')!, state: m.get('state') as CommandState, at: Number(m.get('at')) };
  });
  const lines: string[] = [];
  const payloads: WebhookPayload[] = [];
  const counted: Array<{ type: string; outcome: string }> = [];
  for (const ch of changes) {
    const c = await d.ledger.get(ch.id);
    // A command the bounded ledger already forgot: its change can no longer be published.
    if (!c) continue;
    try {
      lines.push(commandPoint(c, ch.state, ch.at));
    } catch (err) {
      d.log.warn({ command: c.id, err: (err as Error).message }, 'commands: a change could not be written as a point; told to the webhook only');
    }
    payloads.push(commandPayload(c, ch.state, ch.at));
    counted.push({ type: c.type, outcome: ch.state });
  }
  if (lines.length > 0) {
    try {
      await d.sink.write(Lines.of(lines));
    } catch (err) {
      // A point InfluxDB refuses for good (a field-type conflict) would hold every later change back if
      // retried: the ledger in Redis and the webhook still have the change; the log names it.
      if (!(err instanceof PartialWriteError)) throw err;
      d.log.error({ refused: err.refused.length, first: err.refused[0]?.error }, 'commands: InfluxDB refused history points of the command ledger; the ledger and the webhook have them');
      d.metrics?.pointsRefused.inc(err.refused.length);
    }
  }
  if (payloads.length > 0) await d.webhook?.(payloads);
  for (const c of counted) d.metrics?.commands.inc(c);
  const ids = entries.map((e) => e[0]);
  await d.redis.xack(key, GROUP, ...ids);
  await d.redis.xdel(key, ...ids);
  return changes.length;
}
