/**
 * `npm run docs`: rewrites what is derived from the record's schema (src/telemetry/vehicleData.ts) and the
 * settings' declarations (src/config/index.ts): every file and region `generatedDocs.ts` lists (docs/fields.md's
 * field tables, docs/operating.md's settings, `.env.example`, docs/openapi.json and the rest). `--check`
 * writes nothing and exits 1 naming each file that would change (test/docs.test.ts fails the same way).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectedFiles, REPO_ROOT } from './generatedDocs.js';

const args = process.argv.slice(2);
if (args.some((a) => a !== '--check')) {
  process.stderr.write('usage: npm run docs [-- --check]\n');
  process.exit(2);
}
const check = args.includes('--check');
const stale: string[] = [];
for (const [file, want] of expectedFiles()) {
  const path = join(REPO_ROOT, file);
  if (readFileSync(path, 'utf8') === want) continue;
  stale.push(file);
  if (!check) writeFileSync(path, want);
}
if (check) {
  for (const f of stale) process.stderr.write(`${f} is out of date: run npm run docs\n`);
  process.exitCode = stale.length > 0 ? 1 : 0;
} else {
  process.stdout.write(stale.length > 0 ? `rewrote ${stale.join(', ')}\n` : 'up to date\n');
}
