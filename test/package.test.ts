/** What `npm pack` ships: the built service, its commands and the typed library, nothing of the tests or the dev stack. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

it('packs only what users need, and its entry point exports the client, the feed and the sender’s schemas', async () => {
  // prepack builds dist/ first.
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const files = (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string>; exports: Record<string, unknown> };
  for (const bin of Object.values(pkg.bin)) expect(files).toContain(bin);
  expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'docs/openapi.json', 'docs/push-record.schema.json', 'README.md', 'package.json']));
  expect(files.filter((f) => /(^|\/)(test|devstack)\/|\.test\.|\.map$|^src\//.test(f))).toEqual([]);
  // The Lua scripts, which the build copies beside the modules that load them.
  expect(files).toEqual(expect.arrayContaining(readdirSync('src/redis/scripts').map((f) => `dist/redis/scripts/${f}`)));

  // Not a literal: dist/ exists only once built, and the type check runs before.
  const entry = new URL('../dist/index.js', import.meta.url).href;
  const lib = (await import(entry)) as Record<string, unknown>;
  for (const name of ['UpstreamClient', 'UpstreamError', 'requestSchemas', 'runFeed', 'startEmulator', 'envelopeSchema', 'pushRecordSchema', 'signDelivery', 'verifyDelivery']) {
    expect(lib[name], name).toBeDefined();
  }
}, 120_000);
