import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { freePort } from '../../src/devstack/process.js';
import { waitUntil } from '../harness/wait.js';

it('the quick start brings everything up, pushes a sample, shows it read back from InfluxDB, and stops cleanly', async () => {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), ADMIN_PORT: '0' };
  for (const k of ['REDIS_URL', 'INFLUX_URL', 'INFLUX_TOKEN', 'PUSH_TOKENS']) delete env[k];
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/up.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise((r) => child.once('exit', r));
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  try {
    await waitUntil(async () => {
      if (child.exitCode !== null) throw new Error(`up exited with ${child.exitCode}:\n${out}`);
      return out.includes('Running; Ctrl-C stops');
    }, 60_000, 'up to finish starting').catch((e: Error) => {
      throw new Error(`${e.message}; output:\n${out}`);
    });
    expect(out).toContain(`telematics-ingest (receiver + worker) at http://127.0.0.1:${port}`);
    expect(out).toMatch(/pushed a sample bulk of 4 records: HTTP 202 .*"accepted":4,"rejected":\[\]/);
    const shown = out.slice(out.indexOf('queried back from InfluxDB'));
    expect(shown).toMatch(/DEMO-001\s+alti=920 ignstatus=1 lat=12.9716 lng=77.5946 speed=38.5/);
    expect(shown).toMatch(/DEMO-001\s+battery_voltage=51.2 cell_temperature_01=31 current=-12.4 soc=81.5/);
    // The unused sensor (beyond no_of_temperature_sensors) is not stored.
    expect(shown).toMatch(/DEMO-002\s+cell_temperature_01=29.5 no_of_temperature_sensors=1 soc=44\n/);
    const token = /push token for this run: (\S+)/.exec(out)![1]!;
    const res = await fetch(`http://127.0.0.1:${port}/push/realtime`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vehicleno: 'DEMO-003', type: 'can', data: { soc: 55 } }),
    });
    expect(res.status).toBe(202);
  } finally {
    child.kill('SIGINT');
    await exited;
  }
  expect(child.exitCode).toBe(0);
}, 90_000);
