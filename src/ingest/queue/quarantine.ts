import type { RedisClient } from '../../redis/connect.js';

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
   * (a vehicle event, trip or session: `raw` its outbox entry, `route` its outbox stream) the store refused.
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

export class Quarantine {
  constructor(
    private readonly redis: RedisClient,
    /** The stream's key (`RedisKeys.quarantine`). */
    readonly key: string,
    private readonly bound?: {
      /** Entries kept (QUARANTINE_MAX_ENTRIES); Redis drops the oldest beyond, in whole blocks (`MAXLEN ~`). */
      maxEntries: number;
      /** Told, with the stream's length, when an add finds the stream at its bound. */
      onFull: (length: number) => void;
    },
  ) {}

  /** Resolves once Redis holds every entry (one round trip). */
  async add(entries: readonly NewQuarantineEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const multi = this.redis.multi();
    const cap = this.bound ? ['MAXLEN', '~', String(this.bound.maxEntries)] : [];
    for (const e of entries) {
      multi.xadd(
        this.key,
        ...cap,
        '*',
        'deliveryId', e.deliveryId,
        'sender', e.sender,
        'index', String(e.index),
        'reason', e.reason,
        'raw', e.raw,
        'truncated', e.truncated ? '1' : '0',
        'receivedAt', String(e.receivedAt),
        'route', e.route,
        'stage', e.stage,
      );
    }
    if (this.bound) multi.xlen(this.key);
    const res = await multi.exec();
    const failed = res?.find(([err]) => err);
    if (!res || failed) throw failed?.[0] ?? new Error('quarantine write was aborted');
    const length = this.bound ? Number(res[res.length - 1]![1]) : 0;
    if (this.bound && length >= this.bound.maxEntries) this.bound.onFull(length);
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

  async remove(ids: readonly string[]): Promise<number> {
    return ids.length ? this.redis.xdel(this.key, ...ids) : 0;
  }
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
