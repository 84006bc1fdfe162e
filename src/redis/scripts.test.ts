import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DIR = 'src/redis/scripts';
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [join(dir, e.name)] : []));

describe('the Lua scripts', () => {
  it.each(readdirSync(DIR))('%s documents its KEYS and ARGV in its header', (file) => {
    const text = readFileSync(join(DIR, file), 'utf8');
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(text)?.[1];
    expect(header, `${file} starts with a --[[ header ]]`).toBeDefined();
    const keys = /-(\d+)\.lua$/.exec(file);
    // A fixed count: each key by its index; a count the caller gives: the keys' pattern.
    if (keys !== null) for (let k = 1; k <= Number(keys[1]); k++) expect(header, `KEYS[${k}]`).toContain(`KEYS[${k}]`);
    else expect(header).toMatch(/KEYS\[/);
    for (const [, i] of text.slice(header!.length).matchAll(/ARGV\[(\d+)\]/g)) expect(header, `ARGV[${i}]`).toMatch(new RegExp(`ARGV(\\[${i}\\]|\\s)`));
  });

  it('are files, loaded by name: no Lua inside the TypeScript', () => {
    const withLua = sources('src').filter((f) => /redis\.call\(/.test(readFileSync(f, 'utf8')));
    expect(withLua).toEqual([]);
  });
});
