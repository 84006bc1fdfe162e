import { markdownTable } from '../telemetry/tables.js';
import { RENAMED_SETTINGS, SETTINGS } from './index.js';
import { SECRET_SETTINGS } from './secrets.js';
import { SETTING_GROUPS, type SettingDeclaration, type SettingGroup } from './settings.js';

/**
 * What `npm run docs` writes from the settings' declarations (config/index.ts): docs/operating.md's
 * tables, `.env.example` whole, and docs/upgrading.md's renamed settings.
 */

const byGroup = (): Map<SettingGroup, Array<readonly [string, SettingDeclaration]>> => {
  const groups = new Map<SettingGroup, Array<readonly [string, SettingDeclaration]>>(Object.keys(SETTING_GROUPS).map((g) => [g as SettingGroup, []]));
  for (const s of SETTINGS) groups.get(s[1].group)!.push(s);
  return groups;
};

const UPGRADING = 'upgrading.md#renamed-settings';

/** A setting's meaning, with its former name where it has one. */
const meaning = (d: SettingDeclaration): string => (d.formerly === undefined ? d.description : `${d.description}. Formerly \`${d.formerly}\`, still read this release ([upgrading.md](${UPGRADING}))`);

/** docs/operating.md's settings: a table a group, under its heading. */
export function settingTables(): string {
  const parts: string[] = [];
  for (const [group, settings] of byGroup()) {
    const { title, note } = SETTING_GROUPS[group] as { title: string; note?: string };
    parts.push(`### ${title}`);
    if (note !== undefined) parts.push(note);
    const rows = settings.map(([name, d]) => [`\`${name}\``, d.default ? `\`${d.default}\`${d.unit === undefined ? '' : ` ${d.unit}`}` : '(unset)', meaning(d)]);
    parts.push(markdownTable(['Variable', 'Default', 'Meaning'], rows));
  }
  return parts.join('\n\n');
}

/** docs/upgrading.md's renamed settings: each former name and its name now. */
export function renamedSettingsTable(): string {
  return markdownTable(
    ['Former name', 'Name now'],
    RENAMED_SETTINGS.map((r) => [`\`${r.formerly}\``, `\`${r.name}\``]),
  );
}

/** Markdown as a comment reads it: links as where they lead (after their text, unless it is the file's name), no bold. */
const plain = (markdown: string): string =>
  markdown.replaceAll('**', '').replace(/\[([^\]]+)\]\(([^)]+)\)/g, (_, text: string, href: string) => {
    const target = `docs/${href.startsWith('#') ? `operating.md${href}` : href}`;
    return href.split('#')[0] === text ? target : `${text} (${target})`;
  });

/** `text` as comment lines of at most `width` characters (a word longer than that alone on its line). */
function comment(text: string, width = 110): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.split(/\s+/).filter((w) => w !== '')) {
    if (line !== '#' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  if (line !== '#') lines.push(line);
  return lines;
}

const HEADER = `# telematics-ingest settings, written by npm run docs from their declarations in src/config/index.ts (edit
# them there); docs/operating.md has the same in tables. Every variable is optional, except that a receiver
# needs PUSH_TOKENS (or PUSH_SIGNING_SECRETS, or PUSH_AUTH=none).
# (docker-compose.yml reads variables of its own, not settings of the service, from a .env beside it:
# INFLUX_ADMIN_PASSWORD, INFLUX_ADMIN_TOKEN, GRAFANA_ADMIN_PASSWORD, PUSH_TOKENS, and RECEIVER_BIND_ADDRESS /
# BIND_ADDRESS. Its header makes that .env.)
# Values shown are the defaults; an empty value is unset. Durations take a unit: 500ms, 30s, 5m, 6h, 1d
# (0 alone needs none). Sizes: 512KiB, 10MiB, 1MB or plain bytes.`;

/** `.env.example`: every setting at its default (secrets empty), its meaning above it, by group. */
export function envExample(): string {
  const secrets: readonly string[] = SECRET_SETTINGS;
  const out: string[] = [HEADER];
  for (const [group, settings] of byGroup()) {
    const { title, note } = SETTING_GROUPS[group] as { title: string; note?: string };
    out.push('', `# --- ${title} ---`);
    if (note !== undefined) out.push(...comment(plain(note)));
    for (const [name, d] of settings) {
      if (secrets.includes(name) && d.default) throw new Error(`setting ${name}: a secret has no default to show`);
      out.push(...comment(plain(`${meaning(d)}${d.unit === undefined ? '' : ` (unit: ${d.unit})`}`)), `${name}=${d.default ?? ''}`);
    }
  }
  return `${out.join('\n')}\n`;
}
