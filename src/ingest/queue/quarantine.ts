import type { RedisClient } from '../../redis/connect.js';
import { defineScript } from '../../redis/scripts.js';
import type { RedisKeys } from './keys.js';

/**
 * Records the receiver could not accept, kept whole in a Redis stream so nothing a sender
 * delivered is lost: an operator reads the reason, fixes the cause and replays.
 */
export interface QuarantineEntry {
  /** Stream id, which also orders entries by time. */
  id: string;
  deliveryId: string;
  /** The sender's name (`anonymous` without authentication; empty for entries of older releases). */
  sender: string;
  /** Position in the delivery's bulkData, or -1 for a body that could not be read as records. */
  index: number;
  reason: string;
  /** The record as JSON (a push record, so replay validates it again like any push), or the raw body (bounded) when it was not JSON. */
  raw: string;
  /** True when `raw` was cut at the configured limit. */
  truncated: boolean;
  receivedAt: number;
  route: string;
  /**
   * Where it was refused: by the receiver's validation, by the store when written, or a derived point
   * (a vehicle event, trip, charging session or stop: `raw` its outbox entry, `route` its outbox stream) the store refused.
   */
  stage: 'receive' | 'write' | 'derive';
}

export type NewQuarantineEntry = Omit<QuarantineEntry, 'id'>;

/** Where and when a delivery was refused: what every entry of one delivery shares. */
export type QuarantineOrigin = Pick<QuarantineEntry, 'deliveryId' | 'sender' | 'receivedAt' | 'route' | 'stage'>;

/** One entry of `origin`, its raw text cut at `rawLimit` characters (marked so; replay refuses a cut entry). */
export function quarantineEntry(origin: QuarantineOrigin, index: number, reason: string, raw: string, rawLimit = Infinity): NewQuarantineEntry {
  const truncated = raw.length > rawLimit;
  return { ...origin, index, reason, raw: truncated ? raw.slice(0, rawLimit) : raw, truncated };
}

/** Room in a sender's share, taken before its push is answered: kept once its records are queued, or given back. */
export type Reservation =
  | { ok: true; keep(): Promise<void>; release(): Promise<void> }
  | { ok: false; /** Bytes the entries need. */ bytes: number; /** Bytes the sender's entries hold now. */ held: number; share: number };

/**
 * The quarantine stream, its bytes counted per sender. A sender's entries may hold `shareBytes`
 * (QUARANTINE_MAX_BYTES shared by the senders and the service's own stages): a push whose refused
 * records would not fit is refused whole before anything of it is acknowledged, so one sender cannot
 * fill Redis for the others, and nothing kept is ever dropped to make room. Entries of records already
 * acknowledged (InfluxDB refused a point; a derived point) are kept whatever the share, and counted.
 */
export class Quarantine {
  private readonly key: string;
  private readonly bytesKey: string;

  constructor(
    private readonly redis: RedisClient,
    keys: Pick<RedisKeys, 'quarantine' | 'quarantineBytes'>,
    /** Bytes one sender's entries may hold; no bound when unset (tools that only read and remove). */
    private readonly shareBytes = Infinity,
  ) {
    this.key = keys.quarantine;
    this.bytesKey = keys.quarantineBytes;
    defineScript(redis, 'telematicsQuarantineRemove', 'quarantine-remove-2');
  }

  /** Keeps entries whatever the shares (their records were acknowledged); resolves once Redis holds every one. */
  async add(entries: readonly NewQuarantineEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const multi = this.redis.multi();
    const bySender = new Map<string, number>();
    for (const e of entries) {
      const fields = fieldsOf(e);
      multi.xadd(this.key, '*', ...fields);
      bySender.set(e.sender, (bySender.get(e.sender) ?? 0) + Number(fields[fields.length - 1]));
    }
    for (const [sender, bytes] of bySender) multi.hincrby(this.bytesKey, sender, bytes);
    await execAll(multi);
  }

  /**
   * Takes room for one sender's entries from its share (optimistically: what takes a share past its
   * bound gives it back at once, so the share is never exceeded, at worst refused a moment too early
   * for a concurrent push). One round trip; none when there is nothing to keep.
   */
  async reserve(sender: string, entries: readonly NewQuarantineEntry[]): Promise<Reservation> {
    const rows = entries.map(fieldsOf);
    const bytes = rows.reduce((n, f) => n + Number(f[f.length - 1]), 0);
    const noop = async () => {};
    if (rows.length === 0) return { ok: true, keep: noop, release: noop };
    const held = await this.redis.hincrby(this.bytesKey, sender, bytes);
    if (held > this.shareBytes) {
      await this.redis.hincrby(this.bytesKey, sender, -bytes);
      return { ok: false, bytes, held: held - bytes, share: this.shareBytes };
    }
    const release = async () => void (await this.redis.hincrby(this.bytesKey, sender, -bytes));
    return {
      ok: true,
      release,
      keep: async () => {
        const multi = this.redis.multi();
        for (const f of rows) multi.xadd(this.key, '*', ...f);
        try {
          await execAll(multi);
        } catch (err) {
          // Not kept (the push is answered 503 and sent again): its room goes back.
          await release().catch(() => {});
          throw err;
        }
      },
    };
  }

  /** Bytes held per sender (the service's own stages under the empty name). */
  async bytesBySender(): Promise<Map<string, number>> {
    const all = await this.redis.hgetall(this.bytesKey);
    return new Map(Object.entries(all).map(([sender, n]) => [sender, Number(n)]));
  }

  async list(opts: { count?: number; after?: string } = {}): Promise<QuarantineEntry[]> {
    const start = opts.after ? `(${opts.after}` : '-';
    const rows = await this.redis.xrange(this.key, start, '+', 'COUNT', opts.count ?? 100);
    return rows.map(([id, kv]) => parse(id, kv));
  }

  async get(id: string): Promise<QuarantineEntry | undefined> {
    const rows = await this.redis.xrange(this.key, id, id);
    const row = rows[0];
    return row ? parse(row[0], row[1]) : undefined;
  }

  /** Removes entries and frees their bytes in their senders' shares; resolves to how many were there. */
  async remove(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const remove = (this.redis as unknown as { telematicsQuarantineRemove(...args: string[]): Promise<number> }).telematicsQuarantineRemove;
    return remove.call(this.redis, this.key, this.bytesKey, ...ids);
  }
}

/**
 * An entry's fields as stored, `bytes` last: the UTF-8 bytes of every other name and value, what
 * its sender's share is charged (Redis's own overhead per entry is a few dozen bytes on top).
 */
function fieldsOf(e: NewQuarantineEntry): string[] {
  const fields = [
    'deliveryId', e.deliveryId,
    'sender', e.sender,
    'index', String(e.index),
    'reason', e.reason,
    'raw', e.raw,
    'truncated', e.truncated ? '1' : '0',
    'receivedAt', String(e.receivedAt),
    'route', e.route,
    'stage', e.stage,
  ];
  let bytes = 0;
  for (const f of fields) bytes += Buffer.byteLength(f);
  fields.push('bytes', String(bytes));
  return fields;
}

async function execAll(multi: ReturnType<RedisClient['multi']>): Promise<void> {
  const res = await multi.exec();
  const failed = res?.find(([err]) => err);
  if (!res || failed) throw failed?.[0] ?? new Error('quarantine write was aborted');
}

function parse(id: string, kv: string[]): QuarantineEntry {
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < kv.length; i += 2) m.set(kv[i]!, kv[i + 1]!);
  return {
    id,
    deliveryId: m.get('deliveryId') ?? '',
    sender: m.get('sender') ?? '',
    index: Number(m.get('index') ?? -1),
    reason: m.get('reason') ?? '',
    raw: m.get('raw') ?? '',
    truncated: m.get('truncated') === '1',
    receivedAt: Number(m.get('receivedAt') ?? 0),
    route: m.get('route') ?? '',
    stage: m.get('stage') === 'write' || m.get('stage') === 'derive' ? (m.get('stage') as 'write' | 'derive') : 'receive',
  };
}
