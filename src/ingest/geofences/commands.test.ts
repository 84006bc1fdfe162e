import { describe, expect, it } from 'vitest';
import { printable, printableJson } from './commands.js';

describe('names as the CLI prints them', () => {
  it('prints a plain name as it is', () => {
    for (const name of ['Depot A', 'C:\\yards', 'Dépôt "Nord"', 'شارع']) expect(printable(name)).toBe(name);
  });

  it('quotes a name holding control or bidirectional characters (stored by an older release) and escapes them: none reaches the terminal', () => {
    expect(printable('Depot\u001b[2J\u001b]0;owned\u0007')).toBe('"Depot\\u001b[2J\\u001b]0;owned\\u0007"');
    expect(printable('Depot North\ngps')).toBe('"Depot North\\ngps"');
    expect(printable('a\u009b31m')).toBe('"a\\u009b31m"');
    expect(printable('a\u007f')).toBe('"a\\u007f"');
    expect(printable('Zone \u202eA"B')).toBe('"Zone \\u202eA\\"B"');
    expect(printable('x\u2066y\u2069')).toBe('"x\\u2066y\\u2069"');
    for (const name of ['\u001b[31m', '\u0085', '\u202e', '\u2028']) expect(printable(name)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2028]/);
  });

  it('--json: the same value, with what JSON.stringify leaves raw escaped too', () => {
    const value = { name: 'a\u009b\u202e\u001bb', kind: 'depot' };
    const text = printableJson(value);
    expect(text).toBe('{"name":"a\\u009b\\u202e\\u001bb","kind":"depot"}');
    expect(JSON.parse(text)).toEqual(value);
  });
});
