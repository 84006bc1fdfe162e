/** `telematics-deadletter`: the dead letter's commands on the one CLI framework (`src/cli`). */
import { parse, parseTime } from '../../cli/args.js';
import { progress } from '../../cli/progress.js';
import { type Command, showHelp } from '../../cli/command.js';
import { EXIT, UsageError } from '../../cli/exit.js';
import { table } from '../../cli/format.js';
import type { CliIO } from '../../cli/io.js';
import type { Program } from '../../cli/program.js';
import { formatWatchFor, jobSealFor, plausibilityFor, producerFor } from '../service/components.js';
import { keysOf } from '../queue/keys.js';
import { classifyToolError, TOOL_SETTINGS, withServiceRedis } from '../../redis/tool.js';
import { DeadLetters, type DeadLetterItem, type ListFilter } from './index.js';

const SOURCES = ['quarantine', 'failed', 'all'] as const;
type Source = (typeof SOURCES)[number];

const SELECT_OPTIONS = {
  source: { type: 'string' },
  limit: { type: 'string' },
  stage: { type: 'string' },
  delivery: { type: 'string' },
  vehicle: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  all: { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

const FILTER_HELP = `Filters: --source quarantine|failed|all, --stage receive|write|derive|job, --delivery <id>, --vehicle <vehicleno>,
  --since <date>, --until <date> (ISO 8601, epoch s or ms, or "now"), --limit N (of each source, default 1000)
`;

const SETTINGS_HELP = `${TOOL_SETTINGS}
  QUEUE_NAME and QUEUE_PARTITIONS (as for the service); replay judges records by TIME_MAX_AHEAD, TIME_MAX_AGE
  and PLAUSIBLE_RANGES (widen a rule for the replay of what it refused). Failed jobs are named job:<id>, or job:<partition>:<id>
  with several partitions.\n`;

const STAGES = ['receive', 'write', 'derive', 'job'] as const;

function selection(
  values: { source?: string | undefined; limit?: string | undefined; stage?: string | undefined; delivery?: string | undefined; vehicle?: string | undefined; since?: string | undefined; until?: string | undefined },
  command: string,
): ListFilter {
  const source = (values.source ?? 'all') as Source;
  if (!SOURCES.includes(source)) throw new UsageError(`--source must be quarantine, failed or all, not "${values.source}"`, command);
  const limit = values.limit === undefined ? 1000 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a whole number above 0', command);
  const stage = values.stage as ListFilter['stage'];
  if (stage !== undefined && !STAGES.includes(stage)) throw new UsageError(`--stage must be receive, write, derive or job, not "${values.stage}"`, command);
  const now = Date.now();
  return {
    source,
    limit,
    ...(stage ? { stage } : {}),
    ...(values.delivery ? { deliveryId: values.delivery } : {}),
    ...(values.vehicle ? { vehicle: values.vehicle } : {}),
    ...(values.since ? { since: parseTime(values.since, '--since', command, now) } : {}),
    ...(values.until ? { until: parseTime(values.until, '--until', command, now) } : {}),
  };
}

/** `12 item(s): 10 quarantined (receive 9, write 1), 2 failed job(s)`. */
function totals(items: readonly DeadLetterItem[]): string {
  const count = (f: (i: DeadLetterItem) => boolean) => items.filter(f).length;
  return `${items.length} item(s): ${count((i) => i.source === 'quarantine')} quarantined (receive ${count((i) => i.stage === 'receive')}, write ${count((i) => i.stage === 'write')}${count((i) => i.stage === 'derive') > 0 ? `, derive ${count((i) => i.stage === 'derive')}` : ''}), ${count((i) => i.source === 'failed-job')} failed job(s)`;
}

/** The dead letter of the Redis the environment names; closed when `use` settles. */
function withDeadLetters<T>(io: CliIO, use: (dl: DeadLetters) => Promise<T>): Promise<T> {
  return withServiceRedis(io, async (redis, cfg) => {
    // A replay is written in a format every live worker reads, as a receiver's pushes are.
    const formats = formatWatchFor(cfg, redis);
    await formats.read().catch(() => undefined);
    // Sealed as a receiver's jobs are: the replay checked its records with the rules this tool was given
    // (widened on purpose, perhaps), which a worker re-checking an unsealed job with its own would undo.
    const seal = jobSealFor(cfg, redis);
    await seal.load();
    const producer = producerFor(cfg, redis, undefined, undefined, () => formats.current, seal);
    const dl = new DeadLetters(redis, keysOf(cfg), producer, { skipVersionCheck: cfg.REDIS_SKIP_VERSION_CHECK }, plausibilityFor(cfg));
    try {
      return await use(dl);
    } finally {
      await producer.close().catch(() => {});
      await dl.close().catch(() => {});
    }
  });
}

/** Ids given, or every listed item with --all. */
async function targets(dl: DeadLetters, ids: string[], values: { all?: boolean | undefined }, sel: ListFilter, command: string): Promise<string[]> {
  if (values.all) return (await dl.list(sel)).map((i) => i.id);
  if (ids.length === 0) throw new UsageError(`${command} needs ids, or --all`, command);
  return ids;
}

const line = (io: CliIO, s: string) => io.stdout.write(`${s}\n`);

const list: Command = {
  name: 'list',
  summary: 'what did not land, oldest first',
  help: `Usage: telematics-deadletter list [filters] [--json]\n\nLists quarantined records and failed jobs: id, stage, time, records, reason; then the totals.\n${FILTER_HELP}${SETTINGS_HELP}`,
  async run(args, io) {
    const { values } = parse(this.name, args, SELECT_OPTIONS);
    if (values.help) return showHelp(io, this.help);
    const sel = selection(values, this.name);
    const items = await withDeadLetters(io, (dl) => dl.list(sel));
    if (values.json) line(io, JSON.stringify(items));
    else if (items.length === 0) line(io, 'nothing in the dead letter');
    else {
      io.stdout.write(
        table<DeadLetterItem>(items, [
          { header: 'ID', value: (i) => i.id },
          { header: 'STAGE', value: (i) => i.stage },
          { header: 'AT', value: (i) => new Date(i.at).toISOString() },
          { header: 'RECORDS', value: (i) => String(i.records) },
          { header: 'REASON', value: (i) => i.reason.replace(/\s+/g, ' ').slice(0, 100) },
        ]),
      );
      line(io, totals(items));
    }
    return EXIT.ok;
  },
};

const show: Command = {
  name: 'show',
  summary: 'one item with its records and reason',
  help: `Usage: telematics-deadletter show <id> [--json]\n\nThe record as received (or the failed job's records), the reason and the delivery id.\n${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { json: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    if (positionals.length !== 1) throw new UsageError('show takes one id', this.name);
    const id = positionals[0]!;
    const found = await withDeadLetters(io, (dl) => dl.show(id));
    if (!found) {
      io.stderr.write(`no item ${id}\n`);
      return EXIT.failure;
    }
    line(io, JSON.stringify(found, null, values.json ? 0 : 2));
    return EXIT.ok;
  },
};

const replay: Command = {
  name: 'replay',
  summary: 'validate again and queue what passes',
  help: `Usage: telematics-deadletter replay <id>... | --all [filters] [--json]\n\nIdempotent: replayed records rewrite the same points; an item is removed only once its records are queued again.\nExit 1 when an item is kept (still invalid).\n${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, SELECT_OPTIONS);
    if (values.help) return showHelp(io, this.help);
    const sel = selection(values, this.name);
    const kept = await withDeadLetters(io, async (dl) => {
      let n = 0;
      let done = 0;
      const ids = await targets(dl, positionals, values, sel, this.name);
      const shown = values.all ? progress(io.stderr, () => `replay: ${done} of ${ids.length} (${n} kept)`) : undefined;
      try {
        for (const id of ids) {
          const r = await dl.replay(id);
          done++;
          if (!r.ok) n++;
          line(io, values.json ? JSON.stringify(r) : `${r.ok ? 'replayed' : 'kept    '}  ${id}  ${r.detail}`);
        }
      } finally {
        shown?.stop();
      }
      return n;
    });
    return kept > 0 ? EXIT.failure : EXIT.ok;
  },
};

const purge: Command = {
  name: 'purge',
  summary: 'delete for good (needs --yes)',
  help: `Usage: telematics-deadletter purge <id>... | --all [filters] --yes\n\nExit 1 when an item was not found.\n${SETTINGS_HELP}`,
  async run(args, io) {
    const { values, positionals } = parse(this.name, args, { ...SELECT_OPTIONS, yes: { type: 'boolean' } });
    if (values.help) return showHelp(io, this.help);
    const sel = selection(values, this.name);
    if (!values.yes) throw new UsageError('purge deletes for good; add --yes', this.name);
    const missing = await withDeadLetters(io, async (dl) => {
      let n = 0;
      for (const id of await targets(dl, positionals, values, sel, this.name)) {
        const gone = await dl.purge(id);
        if (!gone) n++;
        line(io, `${gone ? 'purged   ' : 'not found'}  ${id}`);
      }
      return n;
    });
    return missing > 0 ? EXIT.failure : EXIT.ok;
  },
};

export const DEADLETTER: Program = {
  name: 'telematics-deadletter',
  commands: [list, show, replay, purge],
  classify: classifyToolError,
  help: (commands) => `Usage: telematics-deadletter <command> [options]

What did not land: records the receiver or InfluxDB refused (the quarantine) and jobs that failed for good.

Commands:
${commands}

Ids: quarantine entries by stream id (1763700000000-0), failed jobs as job:<id>.
Replay is idempotent: replayed records rewrite the same points.
${SETTINGS_HELP}
Exit status:
  0  done
  1  some item kept (still invalid) or not found
  2  usage or configuration error (REDIS_URL unset, bad flags)
  3  Redis unreachable or refused a command
`,
};
