#!/usr/bin/env node
/**
 * telematics-deadletter: list, show, replay and purge what did not land (quarantined records and
 * failed jobs). Uses REDIS_URL and QUEUE_NAME like the service.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ConfigError, loadConfig } from '../config/index.js';
import { DeadLetters, type DeadLetterItem } from '../ingest/deadletter/index.js';
import { Producer } from '../ingest/queue/producer.js';
import { keysOf, producerOptions } from '../ingest/service/components.js';

const HELP = `usage: telematics-deadletter <command> [options]

commands:
  list [--source quarantine|failed|all] [--limit N] [--json]   what did not land, oldest first
  show <id> [--json]                                            one item with its records and reason
  replay <id>... | --all [--source ...]                         validate again and queue what passes
  purge <id>... | --all [--source ...] --yes                    delete for good

Ids: quarantine entries by stream id (1763700000000-0), failed jobs as job:<id>.
Replay is idempotent: replayed records rewrite the same points.
Exit codes: 0 done, 1 some item not replayed or not found, 2 usage or configuration error.
Settings: REDIS_URL, QUEUE_NAME (as for the service).
`;

class Usage extends Error {}

function table(items: DeadLetterItem[]): string {
  const rows = items.map((i) => [i.id, i.stage, new Date(i.at).toISOString(), String(i.records), i.reason.replace(/\s+/g, ' ').slice(0, 100)]);
  const head = ['ID', 'STAGE', 'AT', 'RECORDS', 'REASON'];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  return [head, ...rows].map((r) => r.map((v, c) => (c === r.length - 1 ? v : v.padEnd(widths[c]!))).join('  ')).join('\n');
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      source: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      all: { type: 'boolean' },
      yes: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...ids] = positionals;
  if (values.help || !command) {
    process.stdout.write(HELP);
    return command || values.help ? 0 : 2;
  }
  const source = (values.source ?? 'all') as 'quarantine' | 'failed' | 'all';
  if (!['quarantine', 'failed', 'all'].includes(source)) throw new Usage(`--source must be quarantine, failed or all, not "${values.source}"`);
  const limit = values.limit === undefined ? 1000 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new Usage('--limit must be a whole number above 0');

  const cfg = loadConfig(process.env, 'tool');
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2, connectTimeout: 5_000 });
  redis.on('error', () => {});
  const producer = new Producer(redis, producerOptions(cfg));
  const dl = new DeadLetters(redis, keysOf(cfg), producer);
  const out = (s: string) => process.stdout.write(`${s}\n`);
  try {
    await redis.ping();
    const targets = async () => {
      if (values.all) return (await dl.list({ source, limit })).map((i) => i.id);
      if (ids.length === 0) throw new Usage(`${command} needs ids, or --all`);
      return ids;
    };
    switch (command) {
      case 'list': {
        const items = await dl.list({ source, limit });
        out(values.json ? JSON.stringify(items) : items.length ? table(items) : 'nothing in the dead letter');
        return 0;
      }
      case 'show': {
        if (ids.length !== 1) throw new Usage('show takes one id');
        const found = await dl.show(ids[0]!);
        if (!found) {
          process.stderr.write(`no item ${ids[0]}\n`);
          return 1;
        }
        out(JSON.stringify(found, null, values.json ? 0 : 2));
        return 0;
      }
      case 'replay': {
        let failed = 0;
        for (const id of await targets()) {
          const r = await dl.replay(id);
          if (!r.ok) failed++;
          out(values.json ? JSON.stringify(r) : `${r.ok ? 'replayed' : 'kept    '}  ${id}  ${r.detail}`);
        }
        return failed ? 1 : 0;
      }
      case 'purge': {
        if (!values.yes) throw new Usage('purge deletes for good; add --yes');
        let missing = 0;
        for (const id of await targets()) {
          const gone = await dl.purge(id);
          if (!gone) missing++;
          out(`${gone ? 'purged   ' : 'not found'}  ${id}`);
        }
        return missing ? 1 : 0;
      }
      default:
        throw new Usage(`unknown command "${command}"`);
    }
  } finally {
    await producer.close().catch(() => {});
    await dl.close().catch(() => {});
    redis.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof Usage || err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`${(err as Error).message}\n\n${HELP}`);
      process.exit(2);
    }
    process.stderr.write(`telematics-deadletter: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
