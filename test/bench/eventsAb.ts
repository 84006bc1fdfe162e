/**
 * The vehicle events' derive + write of two builds in one process, interleaved a push at a time:
 * `npx tsx test/bench/eventsAb.ts <git ref> [rounds]`. The stages A/B (stagesAb.ts) runs each build in a
 * process of its own, seconds apart; on a machine whose speed drifts by tens of percent from one second
 * to the next (a shared VM), its rounds say more about the machine than the code. Here both builds derive
 * the same pushes, alternating push by push, so the drift falls on both alike: each round's ratio is
 * this tree's CPU time over the ref's for the same 20 pushes, and the median of the rounds is the claim.
 * What each build derives is its own code on its own reading of the same records (state cached, as
 * `stages.ts`'s "derive + write" row): this tree's emulator makes them for both, so that a change of the
 * emulator's fleet is not taken for a change of the derivation's cost.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median, refTree, ROOT } from './ab.js';

const [ref = 'HEAD', roundsArg = '15'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const { dir: other, sha } = refTree(ref);

interface Build {
  job(i: number): void;
}

/** A build's derivation over the bench's pushes, as stages.ts measures it (its own modules, loaded from `dir`). */
async function build(dir: string, data: { mixed(i: number): unknown }): Promise<Build & { pushes: number }> {
  const load = (p: string) => import(pathToFileURL(join(dir, p)).href);
  const { loadConfig } = await load('src/config/index.ts');
  const { plausibilityFor } = await load('src/ingest/service/components.ts');
  const { validateRecord } = await load('src/ingest/validate/record.ts');
  const { encodePointsJob, jobRows } = await load('src/ingest/queue/codec.ts');
  const { readRows, rowsOf } = await load('src/ingest/flatten/points.ts');
  const { DEFAULT_DERIVE_OPTIONS, DERIVE_PICK, ingest, newState } = await load('src/ingest/events/derive.ts');
  // Before the store was split by concern (issue #48), one module, whose caller gave derivation a list to
  // report the records it added into; since, derivation returns them (`Derived.added`).
  const split = existsSync(join(dir, 'src/ingest/events/store/commit.ts'));
  const joined = split ? undefined : await load('src/ingest/events/store.ts');
  const { CommitArgs } = joined ?? (await load('src/ingest/events/store/commit.ts'));
  const { inputsByVehicle } = joined ?? (await load('src/ingest/events/store/eventsStore.ts'));
  const { FLATTEN } = await load('test/bench/options.ts');
  void plausibilityFor(loadConfig({ PUSH_AUTH: 'none' }));
  const now = Date.now();
  const PUSHES = 20;
  const pushes = Array.from({ length: PUSHES }, (_, p) => Array.from({ length: 1000 }, (_, i) => data.mixed(p * 1000 + i)));
  const written = pushes.map((rs) => {
    const valid = rs.map((r: unknown) => validateRecord(JSON.parse(JSON.stringify(r)), now)).flatMap((v: { ok: boolean; record?: unknown }) => (v.ok ? [v.record] : []));
    const rows = rowsOf(valid, FLATTEN);
    const read = readRows(jobRows(encodePointsJob([{ rows, from: 0, to: rows.records }]))!, DERIVE_PICK);
    // (Named `sightings` before this tree's rename.)
    return read.writtenRecords ?? read.sightings;
  });
  const added: number[] = [];
  let cache = new Map<string, unknown>();
  return {
    pushes: PUSHES,
    job(i: number) {
      if (i === 0) cache = new Map();
      const byVehicle = inputsByVehicle(written[i]);
      const args = new CommitArgs(byVehicle.size);
      for (const [v, inputs] of byVehicle as Map<string, unknown[]>) {
        const state = cache.get(v) ?? newState();
        if (joined !== undefined) {
          // (Releases before ebc26dd took the state too.)
          const a = joined.addedFor(added, state);
          const d = ingest(v, state, inputs, now, DEFAULT_DERIVE_OPTIONS, a);
          // (Releases before 45's corrections took neither what was derived nor the options.)
          args.vehicle(v, 1, state, a, d, DEFAULT_DERIVE_OPTIONS);
        } else args.vehicle(v, 1, state, ingest(v, state, inputs, now, DEFAULT_DERIVE_OPTIONS), DEFAULT_DERIVE_OPTIONS);
        cache.set(v, state);
      }
      args.finish([]);
      args.release();
    },
  };
}

const { BenchData } = await import(pathToFileURL(join(ROOT, 'test/bench/data.ts')).href);
const data = new BenchData(500);
const a = await build(other, data);
const b = await build(ROOT, data);
const cpu = (f: () => void): number => {
  const t = process.cpuUsage();
  f();
  const u = process.cpuUsage(t);
  return u.user + u.system;
};
const runAll = (x: Build, n: number) => cpu(() => {
  for (let i = 0; i < n; i++) x.job(i);
});
// Warm both (their JIT and their caches), then interleave.
for (let w = 0; w < 3; w++) {
  runAll(a, a.pushes);
  runAll(b, b.pushes);
}
const ratios: number[] = [];
const records = a.pushes * 1000;
process.stdout.write(`events A/B in one process: this tree against ${ref} (${sha.slice(0, 12)}), ${rounds} rounds of ${a.pushes} pushes a build, interleaved push by push; core-µs per record\n`);
for (let r = 0; r < rounds; r++) {
  let ta = 0;
  let tb = 0;
  // Push by push, alternating which build goes first.
  for (let i = 0; i < a.pushes; i++) {
    if ((i + r) % 2 === 0) {
      ta += cpu(() => a.job(i));
      tb += cpu(() => b.job(i));
    } else {
      tb += cpu(() => b.job(i));
      ta += cpu(() => a.job(i));
    }
  }
  ratios.push(tb / ta);
  process.stdout.write(`  round ${String(r + 1).padStart(2)}  ref ${(ta / records).toFixed(3)}  this ${(tb / records).toFixed(3)}  ratio ${(tb / ta).toFixed(3)}\n`);
}
process.stdout.write(`median of the per-round ratios (this / ref): ${median(ratios).toFixed(3)}\n`);
