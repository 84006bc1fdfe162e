import type { z } from 'zod';

/**
 * A setting is declared once, beside its schema entry (config/index.ts): its default as an operator
 * writes it, its unit, what it does, and where it is listed. docs/operating.md's tables, `.env.example`
 * and docs/upgrading.md's renamed settings are written from these (settingDocs.ts, `npm run docs`).
 */

/** The sections settings are listed in (docs/operating.md's tables, `.env.example`), in this order. */
export const SETTING_GROUPS = {
  service: { title: 'Run mode, admin listener and logs' },
  redis: { title: 'Redis and the queue', note: 'Redis needs `maxmemory-policy noeviction` and AOF persistence.' },
  influx: { title: 'InfluxDB', note: 'Which server takes which values: [Pointing it at InfluxDB](#pointing-it-at-influxdb).' },
  receiver: { title: 'Pushes: authentication and limits' },
  worker: { title: 'Workers and writes' },
  http: { title: 'What is stored, HTTP, TLS and stopping' },
  upstream: { title: 'The upstream API and fuel sync', note: 'Fuel is not pushed: workers pull it from the telematics service\'s request API when `UPSTREAM_URL` is set; the `telematics` CLI reads these too.' },
  quality: { title: 'Data quality and fleet status' },
  events: { title: 'Vehicle events', note: 'Derived per vehicle by the workers ([events.md](events.md)).' },
  webhook: { title: 'The events webhook' },
  commands: { title: 'The command ledger', note: 'Immobilise and mobilise, asked on the admin listener ([commands.md](commands.md)).' },
} as const satisfies Record<string, { title: string; note?: string }>;

export type SettingGroup = keyof typeof SETTING_GROUPS;

export interface SettingDeclaration {
  readonly group: SettingGroup;
  /**
   * As an operator writes it (`5s`, `10MiB`, `15m,1h,24h`; `''` for an empty list or text); the value the
   * service uses is this parsed by the setting's own rule. Undefined: the setting is unset unless given.
   */
  readonly default: string | undefined;
  /** Of a bare number: `m`, `km/h`, `A`, `%`, `percentage points`; durations and sizes carry their own. */
  readonly unit?: string;
  /** What it does, one Markdown line (docs/operating.md's table, `.env.example`'s comment). */
  readonly description: string;
  /** The name it had before, still read (with a warning) for one release: docs/upgrading.md. */
  readonly formerly?: string;
}

const DECLARED = new WeakMap<z.ZodType, SettingDeclaration>();

/**
 * `schema` as a setting: with its declared default (parsed by `schema` itself, so a default that its own
 * rule refuses fails at start) or optional, and its declaration kept for the documents.
 */
export function setting<T extends z.ZodType<unknown, string>>(schema: T, declared: SettingDeclaration & { default: string }): z.ZodDefault<T>;
export function setting<T extends z.ZodType<unknown, string>>(schema: T, declared: SettingDeclaration & { default: undefined }): z.ZodOptional<T>;
export function setting<T extends z.ZodType<unknown, string>>(schema: T, declared: SettingDeclaration): z.ZodDefault<T> | z.ZodOptional<T> {
  if (declared.description.trim() === '') throw new Error('a setting needs a description');
  const entry = declared.default === undefined ? schema.optional() : schema.default(schema.parse(declared.default) as never);
  DECLARED.set(entry, declared);
  return entry;
}

/** What `setting` declared of a schema entry; undefined for one declared without it. */
export const declarationOf = (entry: z.ZodType): SettingDeclaration | undefined => DECLARED.get(entry);
