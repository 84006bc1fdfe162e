import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisClient } from '../../redis/connect.js';
import type { Logger } from '../../log/index.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import { FIELD_DICTIONARY } from '../../telemetry/fields.js';
import type { FlattenOptions } from '../flatten/flatten.js';
import { payloadFormat } from './codec.js';

/**
 * Releases that mix. Receivers and workers of two releases run side by side during every rolling
 * upgrade (and a rollback), so a job must be written in a format every live worker reads, and a worker
 * must never fail a job it cannot read (a failed attempt costs backoff; enough of them make a dead letter).
 *
 * - A job says its format: its payload version `v` and the dictionary size `k` its numbered names stay
 *   below (codec.ts).
 * - A worker that cannot read a job (a newer version, a larger dictionary) leaves it for one that can,
 *   without spending an attempt (worker/processor.ts).
 * - Workers announce what they read, in one Redis hash with a TTL a process (`ReadsAnnouncer`);
 *   receivers write the newest format all live workers read (`FormatWatch`), as Kafka clients and
 *   brokers agree on API versions. With no announcement (no worker up yet, or only workers of the
 *   release before this one, which do not announce) receivers write their own newest format: see
 *   docs/upgrading.md.
 */

/** What a worker reads: payload versions, and the dictionary size its names go up to. */
export interface Reads {
  formats: readonly number[];
  dictionary: number;
}

/** A format receivers write: a payload version, and the dictionary size its numbered names stay below. */
export interface JobFormat {
  v: number;
  dictionary: number;
}

/** This release: v1 to v3, the whole dictionary. Tests give workers and receivers less, to stand for an older release. */
export const THIS_RELEASE: Reads = Object.freeze({ formats: Object.freeze([1, 2, 3]), dictionary: FIELD_DICTIONARY.length });

export const newestOf = (reads: Reads): JobFormat => ({ v: Math.max(...reads.formats), dictionary: reads.dictionary });

/**
 * The format to write: the newest version every live reader reads, the smallest dictionary among them,
 * neither beyond what this release writes (`own`). With no reader, or none in common, `own`'s newest
 * (a job no live worker reads then waits, deferred, for one that does).
 */
export function agreed(own: Reads, live: readonly Reads[]): JobFormat {
  let formats = own.formats;
  let dictionary = own.dictionary;
  for (const r of live) {
    formats = formats.filter((v) => r.formats.includes(v));
    dictionary = Math.min(dictionary, r.dictionary);
  }
  if (live.length === 0 || formats.length === 0) return newestOf(own);
  return { v: Math.max(...formats), dictionary };
}

export type DeferReason = 'format' | 'dictionary';

export interface Unreadable {
  reason: DeferReason;
  /** For the log: what the job is written in, against what this worker reads. */
  message: string;
}

/**
 * Why a worker reading `reads` cannot read job `data`, or undefined when it can. A payload with no
 * version at all is not a newer release's: it fails as malformed, and ends as a dead letter.
 */
export function unreadable(data: unknown, reads: Reads): Unreadable | undefined {
  const f = payloadFormat(data);
  if (!f || f.v < 1) return undefined;
  if (!reads.formats.includes(f.v)) {
    return { reason: 'format', message: `job written by a newer release (payload v${f.v}, this worker reads ${reads.formats.map((v) => `v${v}`).join(', ')}): this worker leaves it for one that reads it; upgrade the workers` };
  }
  if (f.k > reads.dictionary) {
    return { reason: 'dictionary', message: `job written by a newer release (dictionary ${f.k} > ${reads.dictionary}): this worker leaves it for one that reads it; upgrade the workers` };
  }
  return undefined;
}

/** One worker process's announcement: what it reads, and until when it holds (epoch ms, its own clock). */
interface Announcement extends Reads {
  until: number;
}

/** An announcement as stored, or undefined when it is not one (a later release's fields are ignored, not refused). */
function parseAnnouncement(text: string): Announcement | undefined {
  let a: Partial<Announcement>;
  try {
    a = JSON.parse(text) as Partial<Announcement>;
  } catch {
    return undefined;
  }
  if (!a || !Array.isArray(a.formats) || !a.formats.every((v) => Number.isInteger(v)) || !Number.isInteger(a.dictionary) || typeof a.until !== 'number') return undefined;
  return { formats: a.formats, dictionary: a.dictionary!, until: a.until };
}

/** Announcements are refreshed this often, and hold this long: a worker killed stops counting within TTL_MS. */
export const ANNOUNCE_EVERY_MS = 10_000;
export const ANNOUNCE_TTL_MS = 30_000;
/** How often receivers read the announcements. */
export const WATCH_EVERY_MS = 2_000;

/** Some process of this host: `hostname:pid:random` (several in one process, as tests run them, each its own). */
export const processId = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/**
 * A worker process's announcement of what it reads, in the hash `key` under its own id, refreshed every
 * ANNOUNCE_EVERY_MS to hold ANNOUNCE_TTL_MS, removed on stop. Single-key commands on one hash, so it
 * runs on a Redis Cluster (wherever the key lives) and through Sentinel alike.
 */
export class ReadsAnnouncer {
  readonly id = processId();
  private sampler: Sampler | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly reads: Reads,
    private readonly log?: Logger,
    private readonly everyMs = ANNOUNCE_EVERY_MS,
    private readonly ttlMs = ANNOUNCE_TTL_MS,
  ) {}

  start(): void {
    this.sampler ??= sampleEvery(this.everyMs, () => this.announce(), {
      ready: () => this.redis.status === 'ready',
      onError: (err) => this.log?.debug({ err: (err as Error).message }, 'announcing what this worker reads failed; retried'),
    });
  }

  async announce(now = Date.now()): Promise<void> {
    const a: Announcement = { formats: this.reads.formats, dictionary: this.reads.dictionary, until: now + this.ttlMs };
    // The hash outlives its last announcement by a while, then goes: no key is left behind a deployment that stopped.
    await this.redis.multi().hset(this.key, this.id, JSON.stringify(a)).pexpire(this.key, this.ttlMs * 4).exec();
  }

  /** Removes the announcement; bounded, since a worker's connection waits for Redis forever. */
  async stop(waitMs = 1_000): Promise<void> {
    this.sampler?.stop();
    this.sampler = undefined;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.redis.hdel(this.key, this.id).catch(() => 0), new Promise((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }
}

export interface FormatChoice {
  format: JobFormat;
  /** What each live worker process announced it reads. */
  live: readonly Reads[];
}

/**
 * The receivers' side: reads the announcements at start and every WATCH_EVERY_MS, deletes those past
 * their `until`, and keeps the agreed format in memory for pushes to read (`current`). A failed read
 * keeps the last choice.
 */
export class FormatWatch {
  private choice: FormatChoice;
  private sampler: Sampler | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly own: Reads = THIS_RELEASE,
    private readonly opts: { everyMs?: number; log?: Logger; onRead?: (c: FormatChoice, changed: boolean) => void } = {},
  ) {
    this.choice = { format: newestOf(own), live: [] };
  }

  get current(): JobFormat {
    return this.choice.format;
  }

  get readers(): readonly Reads[] {
    return this.choice.live;
  }

  /** Idempotent. */
  start(): void {
    this.sampler ??= sampleEvery(this.opts.everyMs ?? WATCH_EVERY_MS, async () => void (await this.read()), {
      ready: () => this.redis.status === 'ready',
      onError: (err) => this.opts.log?.debug({ err: (err as Error).message }, 'reading what workers read failed; the last choice stands'),
    });
  }

  stop(): void {
    this.sampler?.stop();
    this.sampler = undefined;
  }

  async read(now = Date.now()): Promise<FormatChoice> {
    const all = await this.redis.hgetall(this.key);
    const live: Reads[] = [];
    const expired: string[] = [];
    for (const [id, text] of Object.entries(all)) {
      const a = parseAnnouncement(text);
      if (!a) continue;
      if (a.until < now) expired.push(id);
      else live.push(a);
    }
    if (expired.length > 0) await this.redis.hdel(this.key, ...expired);
    const format = agreed(this.own, live);
    const was = this.choice.format;
    const changed = format.v !== was.v || format.dictionary !== was.dictionary;
    this.choice = { format: changed ? format : was, live };
    if (changed) {
      const newest = newestOf(this.own);
      const what = { payload: format.v, dictionary: format.dictionary, workers: live.length };
      if (format.v === newest.v && format.dictionary === newest.dictionary) this.opts.log?.info(what, 'jobs are written in this release’s newest format: every live worker reads it');
      else this.opts.log?.info(what, 'jobs are written in an older format: a live worker reads no newer (workers of an older release); the newest returns once they are upgraded');
    }
    this.opts.onRead?.(this.choice, changed);
    return this.choice;
  }
}

/**
 * `base` for rows whose masks stay below `dictionary` (FlattenOptions.dictionary: wire ids from it on
 * are written by name): `base` itself for the whole dictionary, else one object a dictionary, made once
 * (pushes read it on the hot path; the format changes about once an upgrade).
 */
export function flattenFor(base: FlattenOptions, dictionary: number): FlattenOptions {
  if (dictionary >= FIELD_DICTIONARY.length) return base;
  let byDictionary = limited.get(base);
  if (!byDictionary) limited.set(base, (byDictionary = new Map()));
  let options = byDictionary.get(dictionary);
  if (!options) byDictionary.set(dictionary, (options = { ...base, dictionary }));
  return options;
}
const limited = new WeakMap<FlattenOptions, Map<number, FlattenOptions>>();
