import { EXIT } from '../../cli/exit.js';
import type { Config } from '../../config/index.js';

/**
 * Reading back what the service wrote, in InfluxQL (the one query language every InfluxDB it writes to
 * answers: 1.x, 2.x through its compatibility API, 3.x and Cloud): quoting, where to read, one statement's
 * rows. Shared by the CLI's history (fleet/), the vehicle events' corrections and the fuel sync.
 */

/** An InfluxQL string literal: `\` and `'` escaped, and a newline written as `\n` (a raw one ends the statement). */
export function quoteString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

/** An InfluxQL identifier, always quoted (`end` is a keyword, and a quoted name is never one). */
export function quoteIdent(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** A time bound as an RFC 3339 literal, which every InfluxQL version compares `time` with. */
export const timeLiteral = (ms: number): string => quoteString(new Date(ms).toISOString());

/** Where the history is read: the InfluxDB the service writes to. */
export interface InfluxTarget {
  url: string;
  token: string;
  db: string;
  rp?: string;
  timeoutMs: number;
}

/** Where a service process reads back what it wrote. */
export function influxTargetOf(cfg: Pick<Config, 'INFLUX_URL' | 'INFLUX_TOKEN' | 'INFLUX_BUCKET' | 'INFLUX_TIMEOUT'>): InfluxTarget {
  // A bucket may name a retention policy (`db/rp`), as the service's writes through /api/v2/write take it.
  const [db, rp] = cfg.INFLUX_BUCKET.split('/', 2);
  return { url: cfg.INFLUX_URL.replace(/\/+$/, ''), token: cfg.INFLUX_TOKEN, db: db!, ...(rp ? { rp } : {}), timeoutMs: cfg.INFLUX_TIMEOUT };
}

/** InfluxDB unreachable, refusing, or answering what is no query result; `code` is the exit status. */
export class InfluxError extends Error {
  override readonly name = 'InfluxError';
  constructor(
    message: string,
    readonly code: number = EXIT.network,
  ) {
    super(message);
  }
}

export type InfluxRow = Record<string, string | number | boolean | null>;

interface Series {
  columns?: string[];
  values?: unknown[][];
  /** A `GROUP BY <tag>` query's series: the group's tag values. */
  tags?: Record<string, unknown>;
}
interface QueryBody {
  results?: Array<{ series?: Series[]; error?: string }>;
  error?: string;
  message?: string;
}

/** One InfluxQL statement's rows (time in epoch ms), its series merged in the order they came. */
export async function influxSelect(target: InfluxTarget, q: string): Promise<InfluxRow[]> {
  const params = new URLSearchParams({ db: target.db, q, epoch: 'ms' });
  if (target.rp) params.set('rp', target.rp);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (target.token) headers.authorization = `Token ${target.token}`;
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${target.url}/query?${params}`, { headers, signal: AbortSignal.timeout(target.timeoutMs) });
    text = await res.text();
  } catch (err) {
    const e = err as Error & { cause?: { message?: string; code?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${target.timeoutMs} ms (INFLUX_TIMEOUT)` : (e.cause?.code ?? e.cause?.message ?? e.message);
    throw new InfluxError(`cannot reach ${target.url}: ${why}`);
  }
  let body: QueryBody | undefined;
  try {
    body = JSON.parse(text) as QueryBody;
  } catch {
    // Left undefined: told apart below, by the status.
  }
  // 1.x answers {error}, 2.x and 3.x {code, message}.
  const refused = body?.error ?? body?.message ?? body?.results?.find((r) => r.error)?.error;
  if (!res.ok) throw new InfluxError(`${target.url} answered ${res.status}${refused ? `: ${refused}` : ''}`);
  if (refused) throw new InfluxError(refused);
  if (!body || !Array.isArray(body.results)) throw new InfluxError(`${target.url}/query answered what is no InfluxQL result: ${text.slice(0, 200)}`, EXIT.protocol);
  const rows: InfluxRow[] = [];
  for (const s of body.results[0]?.series ?? []) {
    const columns = s.columns ?? [];
    for (const values of s.values ?? []) {
      const row: InfluxRow = {};
      // A grouped series' tags on each of its rows (`GROUP BY "pack"`: which pack a sum is of).
      for (const [k, v] of Object.entries(s.tags ?? {})) if (typeof v === 'string') row[k] = v;
      columns.forEach((c, i) => {
        const v = values[i];
        row[c] = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : null;
      });
      rows.push(row);
    }
  }
  return rows;
}

