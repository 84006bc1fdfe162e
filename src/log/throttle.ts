/**
 * A log line at most once per interval, counting the ones held back: for causes that repeat many
 * times a second (a refused fetch, a full quarantine) and must neither flood the log nor go unsaid.
 */
export class LogThrottle {
  private at = -Infinity;
  private held = 0;

  constructor(private readonly everyMs = 60_000) {}

  /** Runs `write` with how many occurrences it stands for when a line may go out now; else counts this one. */
  pass(write: (times: number) => void): void {
    this.held++;
    const now = Date.now();
    if (now - this.at < this.everyMs) return;
    write(this.held);
    this.at = now;
    this.held = 0;
  }
}

/** One throttle per logger and cause: each process's log (and each test's service) says each cause once an interval. */
const byLogger = new WeakMap<object, Map<string, LogThrottle>>();

/** The throttle of `cause` on `log`, made on first use; causes are a fixed few (reasons, senders), never a value a sender chooses. */
export function throttleOf(log: object, cause: string): LogThrottle {
  let causes = byLogger.get(log);
  if (!causes) byLogger.set(log, (causes = new Map()));
  let t = causes.get(cause);
  if (!t) causes.set(cause, (t = new LogThrottle()));
  return t;
}
