import type { Redis } from 'ioredis';
import { isCluster, mastersOf, type RedisClient } from '../../redis/connect.js';
import { sampleEvery, type Sampler } from '../../metrics/sampler.js';
import { queuedJobs, type Backlog } from './backlog.js';

/**
 * Load shedding: when workers fall behind (queue too deep) or Redis fills up, the receiver
 * answers 429/503 with Retry-After instead of queueing without limit until Redis refuses
 * writes. Sampled in the background so the push path reads a field, not Redis. With partitions
 * the depth is summed over them; on a cluster memory is read on every master, and one master at its
 * bound sheds every push, since any push may touch any partition.
 */
export interface LoadSheddingOptions {
  maxQueuedJobs: number;
  /** Bytes, per master; 0 means 90% of each master's own maxmemory, or no bound when that is unset too. */
  redisMemoryLimit: number;
  retryAfterSeconds: number;
  /** How often the bounds are sampled; pushes read the last sample. */
  intervalMs?: number;
}

export type AdmissionState =
  | { open: true }
  | { open: false; status: 429 | 503; reason: string; retryAfterSeconds: number };

/** Often enough that a push is shed within half a second of the bound, rarely enough to cost Redis nothing. */
const SAMPLE_INTERVAL_MS = 500;

/** Closed at the bound, open again only below this share of it, so it does not flap. */
const REOPEN_AT = 0.8;

/**
 * Jobs waiting (not taken by a worker) from which the receiver deflates the jobs it writes: below it
 * workers keep up, a job lives in Redis for milliseconds and deflating it costs the receiver and the
 * worker CPU for nothing; above it a backlog builds, and its size in Redis is what matters. At most this
 * many jobs are ever stored undeflated (64 bulk jobs of 1,000 full CAN records: about 25 MB).
 */
export const DEFLATE_FROM_WAITING = 64;

export class LoadShedding {
  private current: AdmissionState = { open: true };
  /** Jobs queued at the last sample; unknown (a backlog assumed) until the first. */
  private depth = Infinity;
  private sampler: Sampler | undefined;

  constructor(
    private readonly backlog: Backlog,
    private readonly redis: RedisClient,
    private readonly opts: LoadSheddingOptions,
  ) {}

  state(): AdmissionState {
    return this.current;
  }

  /** Whether a backlog is building (DEFLATE_FROM_WAITING), as of the last sample. */
  backlogged(): boolean {
    return this.depth >= DEFLATE_FROM_WAITING;
  }

  /** Idempotent: called again on every Redis reconnect. */
  start(): void {
    // Redis trouble shows up on the enqueue itself as a 503; a failed sample keeps the last state.
    this.sampler ??= sampleEvery(this.opts.intervalMs ?? SAMPLE_INTERVAL_MS, async () => void (await this.sample()), { ready: () => this.redis.status === 'ready' });
  }

  stop(): void {
    this.sampler?.stop();
    this.sampler = undefined;
  }

  /** One measurement: the backlog (fresh) and every master's memory. */
  private async sample(): Promise<AdmissionState> {
    const [backlog, memories] = await Promise.all([
      this.backlog.read(),
      Promise.all(mastersOf(this.redis).map((node) => this.memory(node))),
    ]);
    const depth = queuedJobs(backlog);
    this.depth = depth;
    const wasOpen = this.current.open;
    const depthBound = wasOpen ? this.opts.maxQueuedJobs : this.opts.maxQueuedJobs * REOPEN_AT;
    const full = memories.find((m) => m.limit > 0 && m.used >= (wasOpen ? m.limit : m.limit * REOPEN_AT));
    if (full) {
      this.current = {
        open: false,
        status: 503,
        reason: `Redis memory${full.node} ${full.used} bytes is at its bound of ${full.limit}; retry later`,
        retryAfterSeconds: this.opts.retryAfterSeconds,
      };
    } else if (depth >= depthBound) {
      this.current = {
        open: false,
        status: 429,
        reason: `${depth} jobs are waiting for workers (bound ${this.opts.maxQueuedJobs}); slow down and retry later`,
        retryAfterSeconds: this.opts.retryAfterSeconds,
      };
    } else {
      this.current = { open: true };
    }
    return this.current;
  }

  private async memory(node: Redis): Promise<{ used: number; limit: number; node: string }> {
    const info = await node.info('memory');
    const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    const used = field('used_memory');
    const limit = this.opts.redisMemoryLimit > 0 ? this.opts.redisMemoryLimit : Math.floor(field('maxmemory') * 0.9);
    return { used, limit, node: isCluster(this.redis) ? ` of master ${node.options.host}:${node.options.port}` : '' };
  }
}
