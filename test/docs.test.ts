/** What `npm run docs` derives from the record's schema is checked in as derived: the tables and documents never drift from it. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CONFIG_KEYS } from '../src/config/index.js';
import { Metrics, PREFIX } from '../src/metrics/index.js';
import { describe, expect, it } from 'vitest';
import { DOCUMENTS, expectedFiles, regionOf, REGIONS, replaceRegion, REPO_ROOT } from '../src/devstack/generatedDocs.js';
import { RANGE_RULES } from '../src/ingest/plausibility/rules.js';
import { FIELD_DICTIONARY, TYPES } from '../src/telemetry/fields.js';
import { collapseNames, markdownTable } from '../src/telemetry/tables.js';

const read = (file: string) => readFileSync(join(REPO_ROOT, file), 'utf8');
const region = (file: string, name: string) => {
  const text = regionOf(read(file), name);
  expect(text, `${file} has the region ${name}`).toBeDefined();
  return text!;
};

describe('generated documents', () => {
  it.each([...expectedFiles()])('%s is as npm run docs writes it', (file, want) => {
    // On failure: run `npm run docs` and commit what it rewrites.
    expect(read(file), `${file} drifted from src/telemetry/vehicleData.ts: run npm run docs`).toBe(want);
  });

  it('covers every marked region and document', () => {
    // Every region marked in a Markdown file of the repository is one `npm run docs` writes, and back.
    const marked: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(join(REPO_ROOT, dir), { withFileTypes: true })) {
        const rel = dir === '' ? e.name : `${dir}/${e.name}`;
        if (e.isDirectory() && !['node_modules', '.git', '.bench', 'dist'].includes(e.name)) walk(rel);
        else if (e.isFile() && e.name.endsWith('.md')) for (const m of read(rel).matchAll(/<!-- generated: (\S+) \(npm run docs\) -->/g)) marked.push(`${rel}#${m[1]}`);
      }
    };
    walk('');
    expect(REGIONS.map((r) => `${r.file}#${r.name}`).sort()).toEqual(marked.sort());
    expect(marked).toContain('src/formats/README.md#commit');
    expect(DOCUMENTS.map((d) => d.file)).toEqual(['docs/openapi.json', 'docs/push-record.schema.json', '.env.example']);
  });
});

describe('the field tables', () => {
  it('name every field of the row dictionary (time included), so a new schema entry appears', () => {
    const text = region('docs/fields.md', 'fields');
    for (const name of FIELD_DICTIONARY) expect(text, name).toContain(`\`${name}\``);
  });

  it('hold one row per field of each type, with its wire id', () => {
    const text = region('docs/fields.md', 'fields');
    for (const t of TYPES) {
      expect(text).toContain(`**\`${t.name}\`**`);
      for (const f of t.spec.fields) expect(text, `${t.name}.${f.name}`).toMatch(new RegExp(`^\\| \`${f.name}\` \\|.*\\| ${f.id} \\| [^|]+ \\|$`, 'm'));
    }
  });
});

describe('the Data quality table', () => {
  it('has a row for each range rule and type, with its bounds', () => {
    const text = region('docs/sending.md', 'plausibility');
    for (const r of RANGE_RULES) {
      const row = text.split('\n').find((l) => l.startsWith(`| \`${r.rule}\` |`) && l.includes(`(${r.type})`));
      expect(row, `${r.rule} (${r.type})`).toBeDefined();
      expect(row).toContain(r.why);
    }
  });
});

describe('the analysts units table', () => {
  it('covers every field of every type', () => {
    const text = region('docs/analysts.md', 'units');
    const covers = [...text.matchAll(/`([a-z0-9_]+?)(N+|\*)?`/g)].map(([, head, tail]) =>
      tail === undefined ? new RegExp(`^${head}$`) : tail === '*' ? new RegExp(`^${head}`) : new RegExp(`^${head}\\d{${tail.length === 1 ? '1,' : tail.length}}$`),
    );
    for (const t of TYPES) for (const f of t.spec.fields) expect(covers.some((re) => re.test(f.name)), f.name).toBe(true);
  });
});

describe('the renderers', () => {
  it('collapse numbered series and whole prefixes only', () => {
    const all = ['a_1', 'a_2', 'a_10', 'cell_voltage_01', 'cell_voltage_02', 'alert', 'alert_x', 'alert_y', 'alert_z', 'one_2'];
    expect(collapseNames(all, all).map((t) => t.text)).toEqual(['a_N', 'cell_voltage_NN', 'alert', 'alert_*', 'one_2']);
    // A prefix some of whose names are left out is not claimed whole.
    expect(collapseNames(['alert_x', 'alert_y', 'alert_z'], [...all, 'alert_w']).map((t) => t.text)).toEqual(['alert_x', 'alert_y', 'alert_z']);
  });

  it('escape a pipe in a cell', () => {
    expect(markdownTable(['A'], [['x | y']])).toBe('| A |\n|---|\n| x \\| y |');
  });

  it('replace a region and nothing else, and refuse a file without it', () => {
    const text = 'before\n<!-- generated: x (npm run docs) -->\nold\n<!-- /generated: x -->\nafter\n';
    expect(replaceRegion(text, 'x', 'new')).toBe('before\n<!-- generated: x (npm run docs) -->\n\nnew\n\n<!-- /generated: x -->\nafter\n');
    expect(() => replaceRegion('no markers', 'x', 'new')).toThrow(/no region/);
  });
});

describe('the documents a newcomer reads', () => {
  const pages = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const folderReadmes = (dir: string): string[] =>
    readdirSync(join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? folderReadmes(`${dir}/${e.name}`) : e.name === 'README.md' ? [`${dir}/README.md`] : []));
  const anchorsOf = (text: string) => new Set([...text.matchAll(/^#+ (.+)$/gm)].map(([, h]) => h!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));

  it.each([...pages, ...folderReadmes('src')])('%s links only to files and headings that exist', (page) => {
    const text = read(page).replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, anchor] = target!.split('#');
      const file = path === '' ? page : join(dirname(page), path!);
      expect(existsSync(join(REPO_ROOT, file)), `${page} links to ${target}`).toBe(true);
      if (anchor !== undefined && file.endsWith('.md')) expect([...anchorsOf(read(file))], `${page} links to ${target}`).toContain(anchor);
    }
  });

  it('the README stays short: what it is, the quick start, pushing, who reads what where, the map, the tests', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('every folder the README maps has a README', () => {
    const map = read('README.md').split('## Where things live')[1]!.split('\n## ')[0]!;
    const folders = [...map.matchAll(/`((?:src|test)\/[a-z/]+\/)`/g)].map(([, f]) => f!);
    expect(folders.length).toBeGreaterThan(15);
    for (const f of folders) expect(existsSync(join(REPO_ROOT, f, 'README.md')), `${f}README.md`).toBe(true);
  });

  it('docs/operating.md names every setting and every metric', () => {
    const text = read('docs/operating.md');
    for (const key of CONFIG_KEYS) expect(text, key).toContain(key);
    for (const m of new Metrics({ version: 'test', mode: 'all' }).registry.getMetricsAsArray()) if (m.name.startsWith(PREFIX)) expect(text, m.name).toContain(m.name);
  });
});
