import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/**
 * Load shedding: when workers fall behind (queue too deep) or Redis fills up, the receiver
 * answers 429/503 with Retry-After instead of queueing without limit until Redis refuses
 * writes. Sampled in the background so the push path reads a field, not Redis.
 */
export interface AdmissionOptions {
  maxQueuedJobs: number;
  /** Bytes; 0 means 90% of Redis's own maxmemory, or no bound when that is unset too. */
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

export class Admission {
  private current: AdmissionState = { open: true };
  private timer: NodeJS.Timeout | undefined;
  private sampling = false;

  constructor(
    private readonly queue: Queue,
    private readonly redis: Redis,
    private readonly opts: AdmissionOptions,
  ) {}

  state(): AdmissionState {
    return this.current;
  }

  /** Idempotent: called again on every Redis reconnect. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sample(), this.opts.intervalMs ?? SAMPLE_INTERVAL_MS);
    this.timer.unref();
    void this.sample();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One measurement; exposed so tests and start-up need not wait for the timer. */
  async sample(): Promise<AdmissionState> {
    if (this.sampling || this.redis.status !== 'ready') return this.current;
    this.sampling = true;
    try {
      const [depth, memory] = await Promise.all([
        this.queue.getJobCountByTypes('wait', 'prioritized', 'delayed'),
        this.memory(),
      ]);
      const wasOpen = this.current.open;
      const depthBound = wasOpen ? this.opts.maxQueuedJobs : this.opts.maxQueuedJobs * REOPEN_AT;
      const memBound = memory.limit > 0 ? (wasOpen ? memory.limit : memory.limit * REOPEN_AT) : Infinity;
      if (memory.used >= memBound) {
        this.current = {
          open: false,
          status: 503,
          reason: `Redis memory ${memory.used} bytes is at its bound of ${memory.limit}; retry later`,
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
    } catch {
      // Redis trouble shows up on the enqueue itself as a 503; keep the last state.
    } finally {
      this.sampling = false;
    }
    return this.current;
  }

  private async memory(): Promise<{ used: number; limit: number }> {
    const info = await this.redis.info('memory');
    const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    const used = field('used_memory');
    const limit = this.opts.redisMemoryLimit > 0 ? this.opts.redisMemoryLimit : Math.floor(field('maxmemory') * 0.9);
    return { used, limit };
  }
}
