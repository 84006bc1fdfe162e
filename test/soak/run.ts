/**
 * npm run soak -- [--duration 5m] [--rate 2000] [--workers 3] [--vehicles 200] [--kill-every 10s] [--seed 1]
 * Exits 0 on zero loss, 1 otherwise.
 */
import { parseArgs } from 'node:util';
import { DURATION_HINT, parseDuration } from '../../src/config/duration.js';
import { runSoak } from './soak.js';

const ms = (v: string): number => {
  const d = parseDuration(v);
  if (d === undefined) throw new Error(`not a duration: ${v}; ${DURATION_HINT}`);
  return d;
};

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5m' },
    rate: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '3' },
    vehicles: { type: 'string', default: '200' },
    'kill-every': { type: 'string', default: '10s' },
    seed: { type: 'string', default: '1' },
  },
});

const report = await runSoak({
  durationMs: ms(values.duration),
  rate: Number(values.rate),
  workers: Number(values.workers),
  vehicles: Number(values.vehicles),
  killEveryMs: ms(values['kill-every']),
  seed: Number(values.seed),
  log: (l) => process.stdout.write(`${new Date().toISOString()} ${l}\n`),
});
process.stdout.write(`${JSON.stringify(report, null, 2)}\n${report.ok ? 'zero loss' : 'LOSS DETECTED'}\n`);
process.exit(report.ok ? 0 : 1);
