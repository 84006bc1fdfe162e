/**
 * The CLI as users run it: a child process (`node --import tsx src/cmd/telematics.ts ...`) with its
 * stdin piped (so never a terminal), against an emulator started here on 127.0.0.1.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../emulator/app.js';
import { Readable } from 'node:stream';
import type { CliIO } from '../../cli/io.js';
import { main, TELEMATICS } from './main.js';
import { PROVIDER_LIMITS } from '../emulator/limits.js';
import { tokenExpiry } from '../client/token.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'cli-test-token-5f2b';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function start(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/cmd/telematics.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', UPSTREAM_URL: emu.url, UPSTREAM_TOKEN: TOKEN, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

function run(args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  const child = start(args, opts.env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin?.end(opts.input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The same CLI in this process, for the many cases where a process adds nothing but time. */
async function runHere(args: string[], opts: { env?: Record<string, string>; input?: string; tty?: boolean; stderrTty?: boolean } = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s), isTTY: opts.stderrTty === true },
    stdin: Object.assign(Readable.from([opts.input ?? '']), { isTTY: opts.tty === true }),
    env: { UPSTREAM_URL: emu.url, UPSTREAM_TOKEN: TOKEN, ...opts.env },
    interrupted: () => new Promise(() => {}),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

let emu: RunningEmulator;
let v: string[];

beforeAll(async () => {
  emu = await startEmulator({ seed: 4, vehicles: 3, token: TOKEN });
  v = emu.fleet.vehicles.map((x) => x.vehicleno);
});
afterAll(async () => {
  await emu.close();
});

describe.concurrent('telematics as a child process', () => {
  it('vehicles --json prints the fleet', async () => {
    const r = await run(['vehicles', '--json']);
    expect(r).toEqual({ code: 0, stdout: `${JSON.stringify(v.map((vehicleno) => ({ vehicleno })), null, 2)}\n`, stderr: '' });
  });


  it('fuel-history takes ISO and epoch seconds, and prints readings', async () => {
    const vehicle = emu.fleet.vehicles[0];
    if (!vehicle) throw new Error('no vehicle');
    const from = Date.UTC(2025, 5, 1, 12, 0, 0);
    const expected = emu.fleet.fuelReadings(vehicle, from, from + 900_000, false);
    const args = ['fuel-history', vehicle.vehicleno, '--from', '2025-06-01T12:00:00Z', '--to', String((from + 900_000) / 1000)];
    const json = await run([...args, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(expected.map((r) => ({ time: r.time, value: r.value, unit: 'percent' })));
    const text = await runHere(args);
    expect(text.stdout.split('\n')).toEqual([
      'TIME                  VALUE  UNIT',
      ...expected.map((r) => `${new Date(r.time).toISOString().replace('.000Z', 'Z')}  ${r.value.toFixed(2).padStart(5)}  percent`),
      '',
    ]);
  });

  it('fuel-used prints the litres used', async () => {
    const vehicle = emu.fleet.vehicles[1];
    if (!vehicle) throw new Error('no vehicle');
    const from = Date.UTC(2025, 5, 1);
    const to = Date.UTC(2025, 5, 3);
    const r = await run(['fuel-used', vehicle.vehicleno, '--from', String(from), '--to', '2025-06-03T00:00:00Z', '--json']);
    const litres = emu.fleet.fuelReadings(vehicle, from, to, true);
    const percent = emu.fleet.fuelReadings(vehicle, from, to, false);
    expect(JSON.parse(r.stdout)).toEqual({
      vehicleno: vehicle.vehicleno,
      from,
      to,
      value: emu.fleet.fuelUsedLitres(vehicle, from, to),
      unit: 'litres',
      startPercent: percent[0]!.value,
      endPercent: percent.at(-1)!.value,
      startLitres: litres[0]!.value,
      endLitres: litres.at(-1)!.value,
      lastIgnitionOn: expect.any(Number),
      lastIgnitionOff: expect.any(Number),
      refuels: expect.any(Array),
    });
  });

  it('fuel-used prints the documented fields as a table, and the refuels', async () => {
    const vehicle = emu.fleet.vehicles[1]!;
    const from = Date.UTC(2025, 5, 1);
    const to = Date.UTC(2025, 5, 3);
    const json = JSON.parse((await run(['fuel-used', vehicle.vehicleno, '--from', String(from), '--to', String(to), '--json'])).stdout) as {
      value: number; startPercent: number; endPercent: number; startLitres: number; endLitres: number; lastIgnitionOn: number; lastIgnitionOff: number; refuels: Array<{ time: number; litres: number }>;
    };
    expect(json.refuels.length).toBeGreaterThan(0);
    const r = await run(['fuel-used', vehicle.vehicleno, '--from', String(from), '--to', String(to)]);
    const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');
    const [head, row, refuelsLine, refuelsHead, ...refuelRows] = r.stdout.trimEnd().split('\n');
    expect(head!.split(/\s{2,}/)).toEqual(['VEHICLENO', 'FROM', 'TO', 'FUEL USED', 'UNIT', 'START %', 'END %', 'START L', 'END L', 'LAST IGNITION ON', 'LAST IGNITION OFF']);
    expect(row!.trim().split(/\s+/)).toEqual([
      vehicle.vehicleno, iso(from), iso(to), json.value.toFixed(2), 'litres',
      json.startPercent.toFixed(2), json.endPercent.toFixed(2), json.startLitres.toFixed(2), json.endLitres.toFixed(2), iso(json.lastIgnitionOn), iso(json.lastIgnitionOff),
    ]);
    expect(refuelsLine).toBe(`refuels: ${json.refuels.length}`);
    expect(refuelsHead!.split(/\s+/)).toEqual(['TIME', 'LITRES']);
    expect(refuelRows.map((l) => l.trim().split(/\s+/))).toEqual(json.refuels.map((e) => [iso(e.time), e.litres.toFixed(2)]));
  });

  it('immobilize --yes sends the command', async () => {
    const r = await run(['immobilize', v[0] ?? '', '--type', 'crank', '--immediate', '--yes']);
    expect(r).toEqual({ code: 0, stdout: `crank Immobilize command sent for Vehicle ${v[0]}\n`, stderr: '' });
    expect(emu.state.commands).toContainEqual(expect.objectContaining({ op: 'immobilize', vehicleno: v[0], type: 'crank', immediate: true }));
  });

  it('immobilize without --yes and without a terminal refuses with exit 2 and sends nothing', async () => {
    const r = await run(['immobilize', v[2] ?? '', '--type', 'movement']);
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: refusing to immobilize without confirmation: stdin is not a terminal; pass --yes\n(see telematics immobilize --help)\n',
    });
    expect(emu.state.commands.filter((c) => c.vehicleno === v[2] && c.type === 'movement')).toEqual([]);
  });


  it('exits 1 on a FAILURE answer, with err and msg on stderr', async () => {
    const r = await run(['immobilize', 'XX00XX0000', '--type', 'can', '--yes']);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'error: immobilize failed: unknown_vehicle: vehicle XX00XX0000 is not in your fleet\n' });
  });


  it('change-password reads the new password from piped stdin', async () => {
    const r = await run(['change-password', '--username', 'demo'], { input: 'piped-secret-1\nignored\n' });
    expect(r).toEqual({ code: 0, stdout: 'Password changed for user demo\n', stderr: '' });
    expect(emu.state.users[0]?.password).toBe('piped-secret-1');
  });




  it('emulate serves the operations until SIGTERM', async () => {
    const child = start(['emulate', '--port', '0', '--vehicles', '2', '--seed', '9', '--json'], { EMULATOR_TOKEN: 'e-tok' });
    const line = await new Promise<string>((resolve) => {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.trimEnd().endsWith('}')) resolve(out);
      });
    });
    const { url, limits } = JSON.parse(line) as { url: string; limits: string };
    expect(limits).toBe('provider');
    const res = await fetch(`${url}/api/standard/listvehicles`, { method: 'POST', body: JSON.stringify({ token: 'e-tok' }) });
    const body = (await res.json()) as { status: string; data: unknown[] };
    expect(body.status).toBe('SUCCESS');
    expect(body.data).toHaveLength(2);
    // The provider's limits, by default: a second call at once is refused.
    const again = await fetch(`${url}/api/standard/listvehicles`, { method: 'POST', body: JSON.stringify({ token: 'e-tok' }) });
    expect(again.status).toBe(429);
    expect(again.headers.get('retry-after')).toBe('1');
    expect(((await again.json()) as { err: string }).err).toBe('rate_limited');
    const code = new Promise((resolve) => child.on('close', resolve));
    child.kill('SIGTERM');
    expect(await code).toBe(0);
  });

  it('feed sends records to a receiver and reports them acknowledged (exit 0), or refused (exit 1)', async () => {
    const received: unknown[] = [];
    const app = new Hono();
    app.post('/push/bulk', async (c) => {
      if (c.req.header('authorization') !== 'Bearer push-tok') return c.json({ status: 'FAILURE', data: null, err: 'unauthorized', msg: 'no' }, 401);
      const { bulkData } = await c.req.json<{ bulkData: unknown[] }>();
      received.push(...bulkData);
      return c.json({ status: 'SUCCESS', data: { deliveryId: 'x', accepted: bulkData.length, rejected: [] }, err: '', msg: '' }, 202);
    });
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const ok = await run(['feed', '--url', url, '--count', '30', '--bulk-size', '10', '--rate', 'inf', '--json'], { env: { PUSH_TOKEN: 'push-tok' } });
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ sent: 30, deliveries: 3, acknowledged: 30, rejected: 0, failed: 0, errors: [] });
      expect(received).toHaveLength(30);
      // On a terminal, progress is drawn in place on stderr while the feed runs; the summary stays on stdout.
      const live = await runHere(['feed', '--url', url, '--count', '60', '--bulk-size', '10', '--rate', '100', '--json'], { env: { PUSH_TOKEN: 'push-tok' }, stderrTty: true });
      expect(live.code).toBe(0);
      expect(live.stderr).toMatch(/\r\x1b\[Kfeed \ds: \d+ acknowledged of \d+ sent \(\d+ records\/s\), 0 retries, 0 rejected, 0 failed/);
      expect(JSON.parse(live.stdout)).toMatchObject({ acknowledged: 60 });
      const refused = await run(['feed', '--url', url, '--count', '5', '--rate', 'inf', '--token', 'bad', '--json']);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout)).toMatchObject({ acknowledged: 0, rejected: 5, errors: ['unauthorized: no'] });
    } finally {
      server.close();
    }
  });
});

describe('telematics against the limits', () => {
  it('emulate --token-expires-in prints a token that carries its expiry', async () => {
    const child = start(['emulate', '--port', '0', '--vehicles', '1', '--limits', 'none', '--token-expires-in', '15d', '--json']);
    const line = await new Promise<string>((resolve) => {
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.trimEnd().endsWith('}')) resolve(out);
      });
    });
    const { url, limits, expiringToken } = JSON.parse(line) as { url: string; limits: string; expiringToken: { token: string; expiresAt: string } };
    expect(limits).toBe('none');
    const expiry = tokenExpiry(expiringToken.token);
    expect(expiry).toEqual({ known: true, expiresAt: Date.parse(expiringToken.expiresAt) });
    expect(Date.parse(expiringToken.expiresAt) - Date.now()).toBeGreaterThan(15 * 86_400_000 - 60_000);
    const res = await fetch(`${url}/api/standard/listvehicles`, { method: 'POST', body: JSON.stringify({ token: expiringToken.token }) });
    expect(((await res.json()) as { status: string }).status).toBe('SUCCESS');
    const code = new Promise((resolve) => child.on('close', resolve));
    child.kill('SIGTERM');
    expect(await code).toBe(0);
  });

  it('immobilize answered 429 exits 1, saying it was not carried out and when to send it again', async () => {
    const limited = await startEmulator({ seed: 4, vehicles: 1, token: TOKEN, limits: PROVIDER_LIMITS });
    try {
      const vehicleno = limited.fleet.vehicles[0]!.vehicleno;
      // Another caller of the account, just before.
      await fetch(`${limited.url}/api/standard/listvehicles`, { method: 'POST', body: JSON.stringify({ token: TOKEN }) });
      const r = await runHere(['immobilize', vehicleno, '--type', 'charge', '--yes'], { env: { UPSTREAM_URL: limited.url } });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^error: immobilize not carried out: the service answered 429 Too Many Requests \(rate_limited: too many calls: calls must be at least 400 ms apart; this one came \d+ ms after the last\); it was sent once and refused, and this client does not send a command twice: retry after 1 s\n$/,
      );
      expect(limited.state.commands).toEqual([]);
      expect(limited.state.calls.get('immobilize')).toBe(1);
    } finally {
      await limited.close();
    }
  });
});

describe.concurrent('telematics in process', () => {
  it('has --help at top level', async () => {
    const top = await runHere(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^Usage: telematics <command> \[options\]\n/);
    expect(top.stdout).toContain('  2    usage error');
  });

  it('has --help on every command', async () => {
    for (const c of TELEMATICS.commands) {
      const h = await runHere([c.name, '--help']);
      expect(h.code).toBe(0);
      expect(h.stdout.startsWith(`Usage: telematics ${c.name} `)).toBe(true);
    }
  });

  it('vehicles prints a table', async () => {
    expect((await runHere(['vehicles'])).stdout).toBe(`VEHICLENO\n${v.join('\n')}\n`);
  });

  it('mobilize sends the command', async () => {
    const r = await runHere(['mobilize', v[1] ?? '', '--type', 'charge', '--json']);
    expect(JSON.parse(r.stdout)).toEqual({ vehicleno: v[1], type: 'charge', message: `charge Mobilize command sent for Vehicle ${v[1]}` });
  });

  it('exits 1 on a bad token and never prints the token', async () => {
    const r = await runHere(['vehicles', '--token', 'wrong-token-9c1d']);
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'error: listvehicles failed: invalid_token: token is not valid\n' });
  });

  it('change-password refuses a password in argv', async () => {
    const r = await runHere(['change-password', '--username', 'demo', '--password', 'x'], { input: 'y\n' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Unknown option '--password'");
  });

  it('exits 2 on usage errors', async () => {
    const [noType, badDate, noUrl, unknown] = await Promise.all([
      runHere(['mobilize', v[0] ?? '']),
      runHere(['fuel-used', v[0] ?? '', '--from', 'last tuesday']),
      runHere(['vehicles'], { env: { UPSTREAM_URL: '' } }),
      runHere(['frobnicate']),
    ]);
    expect(noType).toMatchObject({ code: 2, stderr: 'error: --type is required: one of ignition, crank, movement, can, charge, discharge, chargendischarge\n(see telematics mobilize --help)\n' });
    expect(badDate.code).toBe(2);
    expect(noUrl).toMatchObject({ code: 2, stderr: 'error: no service URL: set UPSTREAM_URL or pass --url\n(see telematics vehicles --help)\n' });
    expect(unknown).toMatchObject({ code: 2, stderr: 'error: unknown command "frobnicate"\n(see telematics --help)\n' });
  });

  it('exits 3 when the service cannot be reached', async () => {
    const closed = await startEmulator();
    await closed.close();
    const r = await runHere(['fuel-used', 'X', '--url', closed.url, '--timeout', '2s']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error: getfuelused failed: network error/);
  });

  it('immobilize on a terminal asks, and sends only on yes', async () => {
    const no = await runHere(['immobilize', v[1] ?? '', '--type', 'discharge'], { input: 'n\n', tty: true });
    expect(no.code).toBe(5);
    expect(no.stderr).toContain(`Immobilize vehicle ${v[1]} (type discharge)? [y/N] `);
    expect(no.stderr.endsWith('cancelled: nothing was sent\n')).toBe(true);
    expect(emu.state.commands.filter((c) => c.vehicleno === v[1] && c.type === 'discharge')).toEqual([]);
    const yes = await runHere(['immobilize', v[1] ?? '', '--type', 'discharge'], { input: 'yes\n', tty: true });
    expect(yes).toMatchObject({ code: 0, stdout: `discharge Immobilize command sent for Vehicle ${v[1]}\n` });
    expect(emu.state.commands.filter((c) => c.vehicleno === v[1] && c.type === 'discharge')).toHaveLength(1);
  });
});
