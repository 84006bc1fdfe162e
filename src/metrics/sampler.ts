/**
 * One sampling loop for every gauge read from elsewhere (queue backlog, fleet, admission bounds): a
 * reader (a scrape, a push) reads numbers already there, so a slow Redis delays a sample, never a
 * reader. Runs at once and then every `intervalMs`, never two at once, skipped while not `ready()`.
 */
export interface Sampler {
  stop(): void;
}

export interface SampleOptions {
  /** Skip a tick while false (Redis not connected): the last numbers stand. */
  ready?: () => boolean;
  /** A failed sample keeps the last numbers; this counts it. */
  onError?: (err: unknown) => void;
}

export function sampleEvery(intervalMs: number, sample: () => Promise<void>, opts: SampleOptions = {}): Sampler {
  let busy = false;
  const tick = async () => {
    if (busy || (opts.ready && !opts.ready())) return;
    busy = true;
    try {
      await sample();
    } catch (err) {
      opts.onError?.(err);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  void tick();
  return { stop: () => clearInterval(timer) };
}

/**
 * A value read from elsewhere (a registry in Redis: the geofences, the speed limits) and read again only
 * when its version moves on, polled every `everyMs`. Until the first read, `empty`; while the source is
 * away, the last value read holds (`onError` is told).
 */
export class VersionedWatch<T extends { readonly version: number }> {
  private value: T;
  private read = false;
  private sampler: Sampler | undefined;

  constructor(
    private readonly source: { version(): Promise<number>; read(): Promise<T> },
    empty: T,
    private readonly onError?: (err: unknown) => void,
    private readonly everyMs = 2_000,
  ) {
    this.value = empty;
  }

  get current(): T {
    return this.value;
  }

  /** Reads the source if its version moved on; resolves once this view is its latest. */
  async refresh(): Promise<void> {
    if (this.read && (await this.source.version()) === this.value.version) return;
    this.value = await this.source.read();
    this.read = true;
  }

  start(): void {
    this.sampler ??= sampleEvery(this.everyMs, () => this.refresh(), this.onError ? { onError: this.onError } : {});
  }

  stop(): void {
    this.sampler?.stop();
    this.sampler = undefined;
  }
}
