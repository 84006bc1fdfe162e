import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * Two tiers, as Telegraf has its `-short` loop:
 * - `unit` (`npm run test:unit`, seconds): every test that needs no server and starts no process, with no
 *   global setup;
 * - `integration`: the rest, on the private redis-server and influxd the global setup starts (and the
 *   other real binaries they spawn: prometheus, chromium, haproxy…).
 * `npm test` runs both. A test file is integration when it, or a module of this repository it imports
 * (followed through its imports), takes a server from the global setup (`inject`) or starts a process;
 * everything else is a unit test, so a new pure test lands in the fast loop by itself.
 */
const NEEDS_SERVICES = /\binject\(|from 'node:child_process'/;
const LOCAL_IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFiles(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const verdicts = new Map<string, boolean>();
/** Whether `file` or what it imports of this repository needs a server or a process. */
function needsServices(file: string): boolean {
  const known = verdicts.get(file);
  if (known !== undefined) return known;
  verdicts.set(file, false); // (an import cycle ends here)
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const needs = NEEDS_SERVICES.test(text) || [...text.matchAll(LOCAL_IMPORT)].some(([, spec]) => needsServices(join(dirname(file), spec!.replace(/\.js$/, '.ts'))));
  verdicts.set(file, needs);
  return needs;
}

const all = [...testFiles('src'), ...testFiles('test')];
const integration = all.filter(needsServices);
const unit = all.filter((f) => !integration.includes(f));

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration files start their own processes; two cores do not gain from more.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: unit } },
      { extends: true, test: { name: 'integration', include: integration, globalSetup: ['test/harness/globalSetup.ts'] } },
    ],
  },
});
