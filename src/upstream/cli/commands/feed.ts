/** feed: run the push feed at a receiver. */
import type { FeedMode, FeedResult } from '../../emulator/feed.js';
import { noPositionals, parse, parseDurationFlag, parseNumber } from '../../../cli/args.js';
import { elapsed, progress } from '../../../cli/progress.js';
import { type Command, showHelp } from '../../../cli/command.js';
import { EXIT, UsageError } from '../../../cli/exit.js';
import { printJson, table } from '../../../cli/format.js';

const MODES: readonly FeedMode[] = ['bulk', 'realtime', 'mixed'];

export const feed: Command = {
  name: 'feed',
  summary: 'send emulated gps and can pushes to a receiver',
  help: `Usage: telematics feed --url <receiver> [--count <n> | --duration <d>] [options]

Sends the emulated fleet's gps and can records to a receiver: bulk deliveries to
POST <url>/push/bulk, realtime ones to POST <url>/push/realtime. Retries 408, 429, 5xx, network
errors and timeouts with backoff (honouring Retry-After); stops after --count records or --duration
(default: 1000 records). Prints what the receiver acknowledged.

  --url <url>          receiver base URL, e.g. http://127.0.0.1:8080   (required)
  --token <token>      sent as Authorization: Bearer (never printed)   [env PUSH_TOKEN]
  --sign <whsec_…>     sign every delivery (Standard Webhooks)           [env PUSH_SIGNING_SECRET]
  --mode <m>           bulk, realtime or mixed                         [default bulk]
  --rate <n>           records per second, or "inf"                    [default 100]
  --bulk-size <n>      records per bulk delivery                       [default 100]
  --count <n>          stop after n records
  --duration <d>       stop after this long, e.g. 30s, 5m
  --concurrency <n>    deliveries in flight                            [default 4]
  --timeout <d>        per attempt                                     [default 10s]
  --max-attempts <n>   attempts per delivery                           [default 5]
  --seed <n>           fleet and feed seed                             [default 1]
  --vehicles <n>       fleet size                                      [default 10]
  --invalid-ratio <r>  share of records made invalid on purpose, 0..1  [default 0]
  --json               print the summary as JSON
  -h, --help           this help

Exit status: 0 every valid record acknowledged; 1 the receiver refused valid records (or accepted
injected invalid ones); 3 deliveries failed (attempts exhausted) or went unconfirmed; 2 usage;
130 interrupted.
`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, {
      url: { type: 'string' },
      token: { type: 'string' },
      sign: { type: 'string' },
      mode: { type: 'string' },
      rate: { type: 'string' },
      'bulk-size': { type: 'string' },
      count: { type: 'string' },
      duration: { type: 'string' },
      concurrency: { type: 'string' },
      timeout: { type: 'string' },
      'max-attempts': { type: 'string' },
      seed: { type: 'string' },
      vehicles: { type: 'string' },
      'invalid-ratio': { type: 'string' },
      json: { type: 'boolean' },
    });
    if (values.help) return showHelp(io, this.help);
    noPositionals(positionals, this.name);
    const n = this.name;
    if (!values.url) throw new UsageError('--url is required (the receiver, e.g. http://127.0.0.1:8080)', n);
    const mode = values.mode ?? 'bulk';
    if (!MODES.some((m) => m === mode)) throw new UsageError(`--mode must be bulk, realtime or mixed, not "${mode}"`, n);
    const opt = (v: string | undefined, parser: (s: string) => number): number | undefined => (v === undefined ? undefined : parser(v));
    const token = values.token ?? io.env.PUSH_TOKEN;
    const signingSecret = values.sign ?? io.env.PUSH_SIGNING_SECRET;
    const controller = new AbortController();
    let stoppedBy: string | undefined;
    void io.interrupted().then((signal) => {
      stoppedBy = signal;
      controller.abort();
    });
    const { runFeed } = await import('../../emulator/feed.js');
    const started = Date.now();
    let soFar: { acknowledged: number; sent: number; retries: number; failed: number; rejected: number } = { acknowledged: 0, sent: 0, retries: 0, failed: 0, rejected: 0 };
    const shown = progress(io.stderr, () => {
      const ms = Date.now() - started;
      return `feed ${elapsed(ms)}: ${soFar.acknowledged} acknowledged of ${soFar.sent} sent (${Math.round((soFar.acknowledged * 1000) / Math.max(1, ms))} records/s), ${soFar.retries} retries, ${soFar.rejected} rejected, ${soFar.failed} failed`;
    });
    const result = await runFeed({
      onProgress: (r) => {
        soFar = { acknowledged: r.acknowledged, sent: r.sent, retries: r.retries, failed: r.failed, rejected: r.rejected };
      },
      url: values.url,
      ...(token ? { token } : {}),
      ...(signingSecret ? { signingSecret } : {}),
      mode: mode as FeedMode,
      rate: opt(values.rate, (s) => parseNumber(s, '--rate', n, { min: Number.MIN_VALUE })),
      bulkSize: opt(values['bulk-size'], (s) => parseNumber(s, '--bulk-size', n, { integer: true, min: 1 })),
      count: opt(values.count, (s) => parseNumber(s, '--count', n, { integer: true, min: 0 })),
      durationMs: opt(values.duration, (s) => parseDurationFlag(s, '--duration', n)),
      concurrency: opt(values.concurrency, (s) => parseNumber(s, '--concurrency', n, { integer: true, min: 1 })),
      timeoutMs: opt(values.timeout, (s) => parseDurationFlag(s, '--timeout', n)),
      maxAttempts: opt(values['max-attempts'], (s) => parseNumber(s, '--max-attempts', n, { integer: true, min: 1 })),
      seed: opt(values.seed, (s) => parseNumber(s, '--seed', n, { integer: true })),
      vehicles: opt(values.vehicles, (s) => parseNumber(s, '--vehicles', n, { integer: true, min: 1 })),
      invalidRatio: opt(values['invalid-ratio'], (s) => parseNumber(s, '--invalid-ratio', n, { min: 0, max: 1 })),
      signal: controller.signal,
    }).finally(() => shown.stop());
    const summary = summarise(result);
    if (values.json) printJson(io.stdout, summary);
    else io.stdout.write(table(Object.entries(summary).filter(([k]) => k !== 'errors'), [
      { header: 'METRIC', value: ([k]) => k },
      { header: 'VALUE', value: ([, v]) => String(v), align: 'right' },
    ]) + summary.errors.map((e) => `error: ${e}\n`).join(''));
    if (stoppedBy) return EXIT.interrupted;
    if (result.failedDeliveries > 0 || result.unconfirmed > 0) return EXIT.network;
    if (result.rejected > result.rejectedInjected || result.acknowledgedInvalid > 0) return EXIT.failure;
    return EXIT.ok;
  },
};

function summarise(r: FeedResult) {
  // The result lists its distinct errors by outcome, rejected ones first as before.
  const ordered = [...r.errors.filter((e) => e.outcome === 'rejected'), ...r.errors.filter((e) => e.outcome === 'failed')];
  const errors = [...new Set(ordered.map((e) => e.error))].slice(0, 10);
  return {
    sent: r.sent,
    deliveries: r.deliveries,
    acknowledged: r.acknowledged,
    rejected: r.rejected,
    rejectedInjected: r.rejectedInjected,
    failed: r.failed,
    unconfirmed: r.unconfirmed,
    acknowledgedInvalid: r.acknowledgedInvalid,
    injectedInvalid: r.injectedInvalid,
    failedDeliveries: r.failedDeliveries,
    retries: r.retries,
    durationMs: r.durationMs,
    /** Distinct error texts, at most ten. */
    errors,
  };
}
