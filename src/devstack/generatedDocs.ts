import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plausibilityTable } from '../ingest/plausibility/table.js';
import { openApiJson } from '../ingest/receive/openapi.js';
import { pushRecordSchema } from '../telemetry/schema.js';
import { derivedTables, fieldTables, unitsTable } from '../telemetry/tables.js';
import { commitTable } from '../ingest/events/store/commit.js';
import { DETECTORS, EVENTS_OUTPUTS } from '../ingest/events/kinds.js';
import { FUEL_ROW } from '../ingest/events/detectors/fuel.js';
import { fieldsOf, influxName, OUTPUT_COMMON_FIELDS, PHASES, runOrder, type Detector, type Output, type OutputField } from '../ingest/events/detectors/detector.js';
import { FLEET_OUTPUTS } from '../ingest/fleet/changes.js';
import { envExample, renamedSettingsTable, settingTables } from '../config/settingDocs.js';

/**
 * What `npm run docs` writes, derived from the record's schema (src/telemetry/vehicleData.ts) and the
 * settings' declarations (src/config/index.ts): the marked regions of the Markdown documents, and whole
 * documents (JSON, `.env.example`). Shared by the script (docs.ts)
 * and the test that fails when a checked-in copy drifts (test/docs.test.ts).
 */

/** The repository's root: this file is src/devstack/generatedDocs.ts. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A part of a Markdown file between `<!-- generated: NAME (npm run docs) -->` and `<!-- /generated: NAME -->`. */
export interface Region {
  readonly file: string;
  readonly name: string;
  readonly render: () => string;
}

/** A file written whole. */
export interface Document {
  readonly file: string;
  readonly render: () => string;
}

/** The detectors' table of src/ingest/events/README.md, from their declarations (kinds.ts). */
export function detectorsTable(detectors: readonly Detector[] = DETECTORS): string {
  const rows = [...detectors.filter((d) => d.rules !== '').map((d) => ({ module: `${d.key}.ts`, reads: d.input, derives: d.derives, rules: d.rules })), FUEL_ROW];
  return ['| Detector | Reads | Derives | Rules |', '|---|---|---|---|', ...rows.map((r) => `| \`${r.module}\` | ${r.reads} | ${r.derives} | ${r.rules} |`)].join('\n');
}

/**
 * The order each phase runs its detectors in, of src/ingest/events/README.md: derived from their declarations
 * (detector.ts `runOrder`), with what each declared that placed it.
 */
export function runOrderTable(detectors: readonly Detector[] = DETECTORS): string {
  const order = runOrder(detectors);
  const why = (d: Detector): string =>
    [
      ...d.reads.map((k) => `reads \`${k}\``),
      ...d.readsBefore.map((k) => `reads \`${k}\` as the records before left it`),
      ...d.amends.map((k) => `amends \`${k}\``),
      ...d.after.map((k) => `after \`${k}\``),
      ...d.writesInto.map((k) => `writes into \`${k}\``),
      ...d.before.map((k) => `before \`${k}\``),
    ].join(', ');
  const rows = PHASES.map((p) => `| \`${p}\` | ${order.filter((d) => d.on[p] !== undefined).map((d) => `\`${d.key}\``).join(' → ')} |`);
  const relations = order.filter((d) => why(d) !== '').map((d) => `\`${d.key}\`: ${why(d)}`);
  return ['| Phase | Detectors, in the order they run |', '|---|---|', ...rows, '', `Declared: ${relations.join('; ')}.`].join('\n');
}

/** A declared text in a table's cell (a `|` would end it). */
const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** `on` as a reader meets it: the events, or for many of one ending (every alarm's raise) `…_raised`. */
function eventsShown(on: readonly string[]): string {
  if (on.length <= 3) return on.map((e) => `\`${e}\``).join(' / ');
  const end = on[0]!.slice(on[0]!.lastIndexOf('_'));
  return on.every((e) => e.endsWith(end)) ? `\`…${end}\`` : on.map((e) => `\`${e}\``).join(' / ');
}

const isTag = (o: Output, f: OutputField): boolean => o.measurement.tags.some((t) => t.name === influxName(f.name));

/** Where an output is written and what it carries there (InfluxDB's names): docs/events.md's "Where". */
export function whereOf(o: Output): string {
  const all = fieldsOf(o).filter((f) => f.on === undefined);
  const some = fieldsOf(o).filter((f) => f.on !== undefined);
  const names = (fs: readonly OutputField[]) => fs.map((f) => `${isTag(o, f) ? 'tag ' : ''}\`${influxName(f.name)}\``).join(', ');
  const ons = [...new Set(some.map((f) => eventsShown(f.on!)))].map((on) => `${on}: ${names(some.filter((f) => eventsShown(f.on!) === on))}`);
  const time = o.kind === undefined ? [] : [`time: ${o.measurement.time}`];
  const carried = [...time, ...(all.length > 0 ? [names(all)] : []), ...ons].join('; ');
  return `\`${o.measurement.name}\`${carried === '' ? '' : ` (${carried})`}`;
}

/** The outputs' table of docs/events.md: every kind the vehicle events and the fleet status write, from their declarations. */
export function eventOutputsTable(outputs: readonly Output[] = [...EVENTS_OUTPUTS, ...FLEET_OUTPUTS]): string {
  const rows = outputs.map((o) => `| ${o.shown} | ${whereOf(o)} | ${o.what} |`);
  const late = '| any of them with `late` 1, a `revision`, or retracted | every measurement above (and the webhook: `….corrected`, `….retracted`) | what records that came late changed: see [Corrections](#corrections) |';
  return ['| Output | Where | What |', '|---|---|---|', ...rows, late].join('\n');
}

/** The webhook's `data` of each output, from their declarations (docs/events.md, "The webhook"). */
export function webhookDataTable(outputs: readonly Output[] = [...EVENTS_OUTPUTS, ...FLEET_OUTPUTS]): string {
  const list = (names: readonly string[]) => names.map((n) => `\`${n}\``).join(', ');
  const unitOf = (o: Output, f: OutputField): string | undefined => [...o.measurement.fields, ...o.measurement.tags].find((d) => d.name === influxName(f.name))?.unit;
  const field = (o: Output, f: OutputField): string => {
    const unit = isTag(o, f) ? 'text' : unitOf(o, f);
    return `\`${f.name}\`${unit === undefined ? '' : ` (${unit})`}: ${cell(f.meaning)}${f.on === undefined ? '' : ` (${eventsShown(f.on)})`}`;
  };
  const type = (o: Output): string => (o.kind === undefined ? o.shown.replace(/\u0060([^\u0060]+)\u0060/g, '`vehicle.$1`') : `\`vehicle.${o.kind}\` (${o.shown})`);
  const rows = outputs.map((o) => `| ${type(o)} | ${o.fields.map((f) => field(o, f)).join('; ')} |`);
  const { event, row, marks } = OUTPUT_COMMON_FIELDS;
  return [
    `Every event's \`data\` holds ${list(event)}; every trip's, stop's and charging session's ${list(row)}; a late or corrected one also ${list(marks)} ([Corrections](#corrections)). Besides, each carries these when known (a name in camelCase is the same field in InfluxDB in snake_case, \`durationS\` \`duration_s\`; text is a tag there):`,
    '',
    '| `type` | `data` |',
    '|---|---|',
    ...rows,
  ].join('\n');
}

export const REGIONS: readonly Region[] = [
  { file: 'src/ingest/events/README.md', name: 'detectors', render: () => detectorsTable() },
  { file: 'src/ingest/events/README.md', name: 'run-order', render: () => runOrderTable() },
  { file: 'docs/events.md', name: 'event-kinds', render: () => eventOutputsTable() },
  { file: 'docs/events.md', name: 'webhook-data', render: () => webhookDataTable() },
  { file: 'docs/fields.md', name: 'fields', render: () => fieldTables() },
  { file: 'docs/sending.md', name: 'plausibility', render: () => plausibilityTable() },
  { file: 'docs/analysts.md', name: 'derived', render: () => derivedTables() },
  { file: 'src/formats/README.md', name: 'commit', render: () => commitTable() },
  { file: 'docs/operating.md', name: 'settings', render: settingTables },
  { file: 'docs/upgrading.md', name: 'renamed-settings', render: renamedSettingsTable },
  {
    file: 'docs/analysts.md',
    name: 'units',
    // can_pack and fuel are not the record's fields: their names and units are written here.
    render: () =>
      unitsTable(undefined, {
        also: {
          V: ['`cell_voltage_*` of `can_pack`'],
          '°C': ['`cell_temperature_*` of `can_pack`'],
          count: ['`cells_reported`, `temperature_sensors_reported`, `alerts_raised` of `can_pack`'],
        },
        rows: [['`fuel` `value`', 'litres or percent, by the `unit` tag']],
      }),
  },
];

export const DOCUMENTS: readonly Document[] = [
  // Byte for byte what /openapi.json serves (test/e2e/openapi.test.ts compares the two).
  { file: 'docs/openapi.json', render: openApiJson },
  { file: 'docs/push-record.schema.json', render: () => `${JSON.stringify(pushRecordSchema, null, 2)}\n` },
  { file: '.env.example', render: envExample },
];

export const startMarker = (name: string): string => `<!-- generated: ${name} (npm run docs) -->`;
export const endMarker = (name: string): string => `<!-- /generated: ${name} -->`;

/** `text` with region `name` holding `content`; blank lines around it keep the Markdown blocks apart. */
export function replaceRegion(text: string, name: string, content: string): string {
  const start = text.indexOf(startMarker(name));
  const end = text.indexOf(endMarker(name));
  if (start < 0 || end < start) throw new Error(`no region ${JSON.stringify(name)}: expected ${startMarker(name)} … ${endMarker(name)}`);
  if (text.indexOf(startMarker(name), start + 1) >= 0) throw new Error(`region ${JSON.stringify(name)} is marked twice`);
  return `${text.slice(0, start)}${startMarker(name)}\n\n${content.trim()}\n\n${text.slice(end)}`;
}

/** What is between a region's markers, trimmed; undefined when the file has no such region. */
export function regionOf(text: string, name: string): string | undefined {
  const start = text.indexOf(startMarker(name));
  const end = text.indexOf(endMarker(name));
  return start < 0 || end < start ? undefined : text.slice(start + startMarker(name).length, end).trim();
}

/** Every generated file as it should read, by path relative to `root`. */
export function expectedFiles(root: string = REPO_ROOT, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): Map<string, string> {
  const files = new Map<string, string>();
  for (const r of REGIONS) {
    const text = files.get(r.file) ?? read(join(root, r.file));
    files.set(r.file, replaceRegion(text, r.name, r.render()));
  }
  for (const d of DOCUMENTS) files.set(d.file, d.render());
  return files;
}
