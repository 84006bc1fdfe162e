/** The upstream connection of the service commands: flags override the environment. */
import { UpstreamClient } from '../client/client.js';
import type { TimeUnit } from '../client/time.js';
import { parseDurationFlag } from '../../cli/args.js';
import { UsageError } from '../../cli/exit.js';
import type { CliIO } from '../../cli/io.js';

export const UPSTREAM_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  timeout: { type: 'string' },
  'time-unit': { type: 'string' },
  json: { type: 'boolean' },
} as const;

export const UPSTREAM_HELP = `Connection (flags override the environment):
  --url <url>          service base URL                     [env UPSTREAM_URL]
  --token <token>      API token (never printed)            [env UPSTREAM_TOKEN]
  --timeout <d>        per-call timeout, e.g. 10s, 500ms    [default 10s]
  --time-unit <ms|s>   unit of starttime/endtime sent       [env UPSTREAM_TIME_UNIT, default ms]
  --json               machine-readable output on stdout
  -h, --help           this help
`;

export interface UpstreamFlags {
  url?: string | undefined;
  token?: string | undefined;
  timeout?: string | undefined;
  'time-unit'?: string | undefined;
}

export function clientFrom(flags: UpstreamFlags, io: CliIO, command: string): UpstreamClient {
  const url = flags.url ?? io.env.UPSTREAM_URL;
  const token = flags.token ?? io.env.UPSTREAM_TOKEN;
  if (!url) throw new UsageError('no service URL: set UPSTREAM_URL or pass --url', command);
  if (!token) throw new UsageError('no token: set UPSTREAM_TOKEN or pass --token', command);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`service URL "${url}" is not a URL`, command);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`service URL must be http or https, not ${parsed.protocol}`, command);
  }
  const unit = flags['time-unit'] ?? io.env.UPSTREAM_TIME_UNIT ?? 'ms';
  if (unit !== 'ms' && unit !== 's') throw new UsageError(`--time-unit must be ms or s, not "${unit}"`, command);
  return new UpstreamClient({
    baseUrl: url,
    token,
    timeUnit: unit satisfies TimeUnit,
    timeoutMs: flags.timeout === undefined ? 10_000 : parseDurationFlag(flags.timeout, '--timeout', command),
  });
}
