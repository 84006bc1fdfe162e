import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '../../redis/connect.js';
import type { JobPayloadV3 } from './codec.js';

/**
 * The receiver's seal on the jobs it writes: an HMAC-SHA256 of a v3 payload (its counts and rows) under
 * a key the deployment keeps in Redis. A worker copies a sealed job's rows into its request as they are,
 * since a receiver validated and judged every record in them; anything else it reads (a job of an older
 * release or format, one added by hand through the queue UI, one whose data was edited) it
 * validates and judges record by record as the receiver would (worker/unsealed.ts), so nothing on the
 * queue skips the push path's checks.
 *
 * The key is made once per deployment (`SET NX`) and read by every process; until a process has read it,
 * its jobs go unsealed, which costs their worker the checks, never their correctness. Whoever can write
 * Redis itself can read the key: the seal keeps out what only speaks BullMQ (the queue UI), not Redis's
 * own users, who need no job to change what is stored.
 */
export class JobSeal {
  private key: Buffer | undefined;
  private loading: Promise<Buffer> | undefined;

  constructor(
    private readonly redis: RedisClient,
    /** The key's Redis key (`RedisKeys.jobSeal`). */
    private readonly redisKey: string,
  ) {}

  /** Reads (or first makes) the deployment's key; once read, kept for the process's life. */
  load(): Promise<Buffer> {
    if (this.key) return Promise.resolve(this.key);
    this.loading ??= (async () => {
      await this.redis.set(this.redisKey, randomBytes(32).toString('base64'), 'NX');
      const text = await this.redis.get(this.redisKey);
      if (!text) throw new Error(`job seal key ${this.redisKey} is missing`);
      return (this.key = Buffer.from(text, 'base64'));
    })().finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** `p` sealed, when the key is read; else as it is (and the key is asked for, for the next jobs). */
  seal(p: JobPayloadV3): JobPayloadV3 {
    if (!this.key) {
      this.load().catch(() => {});
      return p;
    }
    p.s = sealOf(p, this.key);
    return p;
  }

  /** Whether `p` carries this deployment's seal. */
  async sealed(p: JobPayloadV3): Promise<boolean> {
    if (typeof p.s !== 'string') return false;
    const given = Buffer.from(p.s, 'base64url');
    const want = Buffer.from(sealOf(p, await this.load()), 'base64url');
    return given.length === want.length && timingSafeEqual(given, want);
  }
}

/** The seal of a payload: its first 16 bytes of HMAC-SHA256 over `n.d.k.` and its rows as stored (`t`, or `z` deflated). */
export function sealOf(p: JobPayloadV3, key: Buffer): string {
  const h = createHmac('sha256', key).update(`${p.n}.${p.d}.${p.k ?? ''}.${p.t === undefined ? 'z' : 't'}.`);
  h.update(p.t ?? p.z ?? '');
  return h.digest().subarray(0, 16).toString('base64url');
}
