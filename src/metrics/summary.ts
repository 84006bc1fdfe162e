import type { Logger } from '../log/index.js';
import type { Metrics } from './index.js';

/** A counter's total over its label sets. */
async function total(metric: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> {
  return (await metric.get()).values.reduce((sum, v) => sum + v.value, 0);
}

async function gauge(metric: { get(): Promise<{ values: Array<{ value: number; labels: Record<string, unknown> }> }> }, labels: Record<string, string> = {}): Promise<number> {
  const v = (await metric.get()).values.find((x) => Object.entries(labels).every(([k, want]) => x.labels[k] === want));
  return v?.value ?? 0;
}

/**
 * One info line every `intervalMs` with what an operator tailing the logs wants: records in,
 * rejected and written in the interval, the backlog and the lag. Read from the process's metrics, so
 * the line and the scrape never disagree.
 */
export function logSummaries(metrics: Metrics, log: Logger, intervalMs: number): { stop(): void } {
  let last = { received: 0, accepted: 0, rejected: 0, written: 0, refused: 0 };
  const timer = setInterval(() => {
    void (async () => {
      const now = {
        received: await total(metrics.recordsReceived),
        accepted: await total(metrics.recordsAccepted),
        rejected: await total(metrics.recordsRejected),
        written: await total(metrics.pointsWritten),
        refused: await total(metrics.pointsRefused),
      };
      const seconds = intervalMs / 1000;
      log.info(
        {
          recordsPerSecond: Math.round((now.accepted - last.accepted) / seconds),
          received: now.received - last.received,
          rejected: now.rejected - last.rejected,
          written: now.written - last.written,
          refused: now.refused - last.refused,
          backlogJobs: await gauge(metrics.queueJobs, { state: 'waiting' }),
          lagSeconds: await gauge(metrics.oldestWaitingAge),
        },
        'summary',
      );
      last = now;
    })();
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
