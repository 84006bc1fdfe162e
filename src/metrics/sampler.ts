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
