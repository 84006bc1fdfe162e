/**
 * The command ledger through the whole service, on the run's Redis and influxd, with the emulator as the
 * upstream: a command asked for on the admin listener (as a named credential) waits until the vehicle
 * the records describe is safe, is sent by a worker to the emulator (whose fleet then obeys it), is
 * confirmed from the vehicle's own records, and each state change is in Redis, in InfluxDB (`commands`),
 * on the webhook (signed) and counted; a command never safe expires unsent; `immediate` needs its second
 * confirmation and its right; an idempotent retry is one command; a read-only credential is refused; a
 * vehicle that moves while immobilised raises `moved_while_immobilised` (moved by a late record as in order); an automation rule's command is
 * in the ledger with the rule as its author.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { Redis } from 'ioredis';
import { redisKeys } from '../../src/ingest/queue/keys.js';
import { startEmulator } from '../../src/upstream/emulator/index.js';
import { runProgram } from '../../src/cli/program.js';
import { TELEMATICS_FLEET } from '../../src/cmd/fleetProgram.js';
import type { CommandEntry } from '../../src/ingest/commands/model.js';
import { captureIO } from '../harness/io.js';
import { startTestService, waitUntil, type TestService } from '../harness/service.js';

const SECRET = `whsec_${Buffer.from('commands-test-secret-0123456789').toString('base64')}`;
const OPS = { name: 'ops', password: 'ops-password-0123456789' };
const DISPATCH = { name: 'dispatch', password: 'dispatch-password-0123456789' };
const VIEWER = { name: 'viewer', password: 'viewer-password-0123456789' };
const basic = (c: { name: string; password: string }) => `Basic ${Buffer.from(`${c.name}:${c.password}`).toString('base64')}`;

let emulator: Awaited<ReturnType<typeof startEmulator>>;
let svc: TestService;
let hook: Server;
/** Webhook deliveries by webhook-id, verified. */
const received = new Map<string, { type: string; data: Record<string, unknown> }>();

beforeAll(async () => {
  emulator = await startEmulator({ seed: 5, vehicles: 12 });
  const wh = new Webhook(SECRET);
  hook = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const payload = wh.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>) as { type: string; data: Record<string, unknown> };
      received.set(String(req.headers['webhook-id']), payload);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'commands-'));
  const rules = join(dir, 'rules.json');
  writeFileSync(rules, JSON.stringify({ rules: [{ name: 'towed-block-discharge', event: 'moved_while_off', command: 'immobilize', type: 'discharge', reason: 'moved while off: block discharge when safe' }] }));
  svc = await startTestService({
    COMMANDS: 'on',
    UPSTREAM_URL: emulator.url,
    UPSTREAM_TOKEN: emulator.token,
    ADMIN_CREDENTIALS: `${OPS.name}:${OPS.password}:commands,immediate;${DISPATCH.name}:${DISPATCH.password}:commands;${VIEWER.name}:${VIEWER.password}`,
    COMMANDS_SWEEP_INTERVAL: '200ms',
    // Long enough for a loaded machine to take the parked fix before the first command expires; the expiry test waits it out.
    COMMANDS_WAIT_MAX: '10s',
    COMMANDS_CONFIRM_WINDOW: '20s',
    COMMANDS_SAFE_FIX_AGE: '1m',
    COMMANDS_AUTOMATION_FILE: rules,
    EVENTS_WINDOW: '1s',
    EVENTS_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks`,
    EVENTS_WEBHOOK_SECRET: SECRET,
    FUEL_SYNC_INTERVAL: '1h',
  });
}, 60_000);

afterAll(async () => {
  redis?.disconnect();
  await svc?.close();
  await emulator?.close();
  await new Promise((r) => hook?.close(r));
});

const plate = (i: number) => emulator.fleet.vehicles[i]!.vehicleno;

function ask(body: Record<string, unknown>, who: { name: string; password: string } = OPS, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${svc.adminUrl}/fleet/commands`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: basic(who), ...headers }, body: JSON.stringify(body) });
}

async function command(id: string): Promise<CommandEntry> {
  const res = await fetch(`${svc.adminUrl}/fleet/commands/${id}`, { headers: { authorization: basic(VIEWER) } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: CommandEntry }).data;
}

async function until(id: string, state: string, timeoutMs = 15_000): Promise<CommandEntry> {
  let last: CommandEntry | undefined;
  await waitUntil(async () => (last = await command(id)).state === state, timeoutMs, `command ${id} ${state} (is ${last?.state})`);
  return last!;
}

/** A GPS record of `vehicleno` now (or at `time`). */
const fix = (vehicleno: string, speed: number, ignstatus: 0 | 1, time = Date.now(), lat = 12.97, lng = 77.59) => ({ vehicleno, type: 'gps', data: { lat, lng, alti: 900, speed, ignstatus, time } });

async function push(records: unknown[]): Promise<void> {
  expect((await svc.post('/push/bulk', { bulkData: records })).status).toBe(202);
}

let redis: Redis;
/** A vehicle's latest values as the workers keep them (FleetKeys.latest), raw. */
const latestOf = (vehicleno: string) => {
  redis ??= new Redis(svc.cfg.REDIS_URL);
  return redis.hget(redisKeys(svc.cfg.QUEUE_NAME).fleet(0).latest, vehicleno);
};

const upstreamCommands = (vehicleno: string) => emulator.state.commands.filter((c) => c.vehicleno === vehicleno);

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const c = captureIO({ REDIS_URL: svc.cfg.REDIS_URL, QUEUE_NAME: svc.cfg.QUEUE_NAME, INFLUX_URL: svc.cfg.INFLUX_URL, INFLUX_TOKEN: svc.cfg.INFLUX_TOKEN, INFLUX_BUCKET: svc.cfg.INFLUX_BUCKET, ADMIN_URL: svc.adminUrl, ...env });
  const code = await runProgram(TELEMATICS_FLEET, args, c.io);
  return { code, out: c.out(), err: c.err() };
}

const metric = async (name: string, labels: string): Promise<number> => {
  const text = await (await fetch(`${svc.adminUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line ? Number(line.split(' ').at(-1)) : 0;
};

describe('an immobilise of a moving vehicle', () => {
  let id: string;
  const V = () => plate(0);

  /** Where the emulator has the vehicle: the records pushed by hand agree with those its fleet makes after the command (else the vehicle would seem towed). */
  const at = () => emulator.fleet.gpsAt(emulator.fleet.vehicle(V())!, Date.now());

  it('waits while the vehicle moves, and says why', async () => {
    const { lat, lng } = at();
    await push([fix(V(), 42, 1, Date.now() - 2_000, lat, lng), fix(V(), 40, 1, Date.now(), lat, lng)]);
    await waitUntil(async () => (await latestOf(V()))?.includes('"speed":[') === true, 10_000, 'the vehicle’s latest values');
    const res = await ask({ vehicleno: V(), command: 'immobilize', type: 'movement', reason: 'lease unpaid: 3 notices sent' });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { data: CommandEntry };
    id = body.data.id;
    expect(body.data).toMatchObject({ vehicleno: V(), op: 'immobilize', type: 'movement', immediate: false, author: { kind: 'credential', name: 'ops' }, reason: 'lease unpaid: 3 notices sent', state: 'requested' });
    // The vehicle's state when asked: its newest fix, moving with the ignition on.
    expect(body.data.vehicle).toMatchObject({ speed: 40, ignition: 1, lat, lng });
    const waiting = await until(id, 'waiting');
    expect(waiting.history.at(-1)!.note).toBe('until safe: moving at 40 km/h');
    // Still waiting a second later: nothing was sent to the upstream.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await command(id)).state).toBe('waiting');
    expect(upstreamCommands(V())).toEqual([]);
  });

  it('is sent once the vehicle parks (standing, ignition off), by one worker, once', async () => {
    const { lat, lng } = at();
    await push([fix(V(), 0, 0, Date.now(), lat, lng)]);
    const sent = await until(id, 'sent', 10_000).catch(() => command(id));
    expect(['sent', 'confirmed']).toContain(sent.state);
    expect(sent.answer).toBe(`movement Immobilize command sent for Vehicle ${V()}`);
    expect(upstreamCommands(V())).toMatchObject([{ op: 'immobilize', type: 'movement', immediate: false }]);
  });

  it('is confirmed by the records the emulator’s fleet pushes now it obeys', async () => {
    const v = emulator.fleet.vehicle(V())!;
    // The feed's records of the vehicle (fleet.gpsAt / canStateAt), from now on: standing, the ignition off, whatever its plan.
    const t = Date.now();
    const records = [0, 1_000, 2_000].map((d) => ({ vehicleno: V(), type: 'gps', data: emulator.fleet.gpsAt(v, t + d) }));
    for (const r of records) expect(r.data).toMatchObject({ speed: 0, ignstatus: 0 });
    await push(records);
    const confirmed = await until(id, 'confirmed');
    expect(confirmed.history.map((h) => h.state)).toEqual(['requested', 'waiting', 'sending', 'sent', 'confirmed']);
    expect(confirmed.history.at(-1)!.note).toMatch(/^standing with the ignition off at /);
  });

  it('stores, counts, tells and lists each state change', async () => {
    const rows = await svc.waitForRows(`SELECT * FROM commands WHERE "id" = '${id}'`, 5);
    expect(rows.map((r) => r.state).sort()).toEqual(['confirmed', 'requested', 'sending', 'sent', 'waiting']);
    expect(rows[0]).toMatchObject({ vehicleno: V(), command: 'immobilize', type: 'movement', author: 'ops', author_kind: 'credential', reason: 'lease unpaid: 3 notices sent', speed: 40, ignition: 1 });
    await waitUntil(async () => received.has(`${id}.confirmed`), 15_000, 'webhook command.confirmed');
    expect(received.get(`${id}.requested`)).toMatchObject({ type: 'command.requested', data: { id, vehicleno: V(), reason: 'lease unpaid: 3 notices sent', author: { kind: 'credential', name: 'ops' } } });
    expect(received.get(`${id}.waiting`)).toMatchObject({ type: 'command.waiting', data: { note: 'until safe: moving at 40 km/h' } });
    expect(received.get(`${id}.confirmed`)?.type).toBe('command.confirmed');
    expect(await metric('telematics_commands_total', 'type="movement",outcome="confirmed"')).toBe(1);
    const listed = await cli(['commands', '--vehicle', V()]);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(new RegExp(`${id} .* ${V()} +immobilize movement +confirmed +ops +lease unpaid: 3 notices sent +standing with the ignition off at`));
    const json = JSON.parse((await cli(['commands', '--vehicle', V(), '--json'])).out) as CommandEntry[];
    expect(json.map((c) => c.id)).toEqual([id]);
  });

  it('a vehicle that moves while immobilised raises moved_while_immobilised: vehicle_events, the webhook, the CLI', async () => {
    const t = Date.now();
    await push([fix(V(), 25, 1, t, 12.98, 77.6)]);
    const rows = await svc.waitForRows(`SELECT * FROM vehicle_events WHERE "event" = 'moved_while_immobilised' AND "vehicleno" = '${V()}'`, 1);
    expect(rows).toEqual([expect.objectContaining({ time: t, value: 1, speed: 25, ignition: 1, lat: 12.98, lng: 77.6, command_type: 'movement' })]);
    await waitUntil(async () => [...received.values()].some((p) => p.type === 'vehicle.moved_while_immobilised'), 15_000, 'webhook vehicle.moved_while_immobilised');
    const listed = await cli(['events', '--event', 'moved_while_immobilised', '--since', String(t - 60_000)]);
    expect(listed.code).toBe(0);
    expect(listed.out).toContain(V());
    expect(listed.out).toContain('moved_while_immobilised');
    // Once an immobilisation: more movement tells nothing more.
    await push([fix(V(), 30, 1, t + 2_000, 12.99, 77.6)]);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await svc.query(`SELECT * FROM vehicle_events WHERE "event" = 'moved_while_immobilised' AND "vehicleno" = '${V()}'`)).toHaveLength(1);
  });

  it('a record that comes late, earlier in the immobilisation, moves the event there as in order: the first retracted under its id, the earlier told late', async () => {
    const confirmedAt = (await command(id)).history.find((h) => h.state === 'confirmed')!.at;
    const [told] = await svc.query(`SELECT * FROM vehicle_events WHERE "event" = 'moved_while_immobilised' AND "vehicleno" = '${V()}'`);
    const toldAt = Number(told!.time);
    const early = Math.floor((confirmedAt + toldAt) / 2);
    expect(early).toBeGreaterThan(confirmedAt);
    // A buffered record (lost coverage), past the window: the ignition on between the confirmation and the event told.
    await push([fix(V(), 12, 1, early, 12.975, 77.6)]);
    const rows = await svc.waitForRows(`SELECT "value", "late", "retracted", "speed" FROM vehicle_events WHERE "event" = 'moved_while_immobilised' AND "vehicleno" = '${V()}' AND time = ${early * 1e6}`, 1, 30_000);
    expect(rows).toEqual([{ time: early, value: 1, late: 1, retracted: null, speed: 12 }]);
    const [old] = await svc.query(`SELECT "value", "retracted" FROM vehicle_events WHERE "event" = 'moved_while_immobilised' AND "vehicleno" = '${V()}' AND time = ${toldAt * 1e6}`);
    expect(old).toEqual({ time: toldAt, value: -1, retracted: 1 });
    await waitUntil(async () => [...received.values()].some((p) => p.type === 'vehicle.moved_while_immobilised.retracted'), 15_000, 'webhook vehicle.moved_while_immobilised.retracted');
  });
});

it('an immobilise never safe expires, unsent, and is told', async () => {
  const V = plate(1);
  await push([fix(V, 55, 1)]);
  const res = await ask({ vehicleno: V, command: 'immobilize', type: 'ignition', reason: 'stolen, reported by the owner' });
  expect(res.status).toBe(201);
  const { id } = ((await res.json()) as { data: CommandEntry }).data;
  const expired = await until(id, 'expired', 20_000);
  expect(expired.history.map((h) => h.state)).toEqual(['requested', 'waiting', 'expired']);
  expect(expired.history.at(-1)!.note).toMatch(/not safe to send within COMMANDS_WAIT_MAX .*never sent/);
  expect(upstreamCommands(V)).toEqual([]);
  await waitUntil(async () => received.has(`${id}.expired`), 15_000, 'webhook command.expired');
  expect(received.get(`${id}.expired`)).toMatchObject({ type: 'command.expired', data: { id, vehicleno: V } });
  expect(await metric('telematics_commands_total', 'type="ignition",outcome="expired"')).toBe(1);
});

describe('immediate', () => {
  it('is refused without its second confirmation, and to a credential without the immediate right', async () => {
    const V = plate(2);
    const unconfirmed = await ask({ vehicleno: V, command: 'immobilize', type: 'crank', reason: 'driver threatened', immediate: true });
    expect(unconfirmed.status).toBe(400);
    expect(await unconfirmed.json()).toMatchObject({ err: 'immediate_not_confirmed', msg: expect.stringContaining('confirmImmediate: true') });
    const byDispatch = await ask({ vehicleno: V, command: 'immobilize', type: 'crank', reason: 'driver threatened', immediate: true, confirmImmediate: true }, DISPATCH);
    expect(byDispatch.status).toBe(403);
    expect(await byDispatch.json()).toMatchObject({ err: 'forbidden', msg: expect.stringContaining('credential "dispatch" may not send immediate commands') });
    const cli1 = await cli(['command', 'immobilize', '--vehicle', V, '--type', 'crank', '--reason', 'driver threatened', '--immediate'], { ADMIN_USER: OPS.name, ADMIN_PASSWORD: OPS.password });
    expect(cli1.code).toBe(1);
    expect(cli1.err).toContain('immediate_not_confirmed');
    expect((await svc.query(`SELECT * FROM commands WHERE "vehicleno" = '${V}'`)).length).toBe(0);
  });

  it('confirmed twice by a credential allowed to, goes at once while the vehicle moves', async () => {
    const V = plate(2);
    await push([fix(V, 60, 1)]);
    const out = await cli(['command', 'immobilize', '--vehicle', V, '--type', 'crank', '--reason', 'driver threatened', '--immediate', '--confirm-immediate', '--json'], { ADMIN_USER: OPS.name, ADMIN_PASSWORD: OPS.password });
    expect(out.code).toBe(0);
    const c = JSON.parse(out.out) as CommandEntry;
    expect(c).toMatchObject({ immediate: true, author: { name: 'ops' } });
    const sent = await until(c.id, 'sent', 10_000).catch(() => command(c.id));
    expect(sent.history.map((h) => h.state).slice(0, 3)).toEqual(['requested', 'sending', 'sent']);
    expect(upstreamCommands(V)).toMatchObject([{ op: 'immobilize', type: 'crank', immediate: true }]);
  });
});

it('an idempotent retry makes one command; the same key for another request is a conflict', async () => {
  const V = plate(3);
  const body = { vehicleno: V, command: 'immobilize', type: 'charge', reason: 'battery lease overdue', idempotencyKey: 'ticket-4711' };
  const first = await ask(body);
  expect(first.status).toBe(201);
  const again = await ask(body);
  expect(again.status).toBe(200);
  const a = ((await first.json()) as { data: CommandEntry }).data;
  const b = ((await again.json()) as { data: CommandEntry; msg: string }).data;
  expect(b.id).toBe(a.id);
  const other = await ask({ ...body, reason: 'another reason' });
  expect(other.status).toBe(409);
  expect(await other.json()).toMatchObject({ err: 'idempotency_conflict', msg: expect.stringContaining(a.id) });
  // Through the CLI with the same key: the same command again.
  const viaCli = await cli(['command', 'immobilize', '--vehicle', V, '--type', 'charge', '--reason', 'battery lease overdue', '--idempotency-key', 'ticket-4711'], { ADMIN_USER: OPS.name, ADMIN_PASSWORD: OPS.password });
  expect(viaCli.code).toBe(0);
  expect(viaCli.out).toContain(`the same request as command ${a.id}`);
  const list = JSON.parse((await cli(['commands', '--vehicle', V, '--json'])).out) as CommandEntry[];
  expect(list.map((c) => c.id)).toEqual([a.id]);
  // charge goes at once: no road risk.
  const sent = await until(a.id, 'sent', 10_000).catch(() => command(a.id));
  expect(sent.history.map((h) => h.state).slice(0, 3)).toEqual(['requested', 'sending', 'sent']);
  expect(upstreamCommands(V)).toHaveLength(1);
});

it('a read-only credential is refused, by name; it still reads the ledger', async () => {
  const V = plate(4);
  const res = await ask({ vehicleno: V, command: 'mobilize', type: 'movement', reason: 'paid' }, VIEWER);
  expect(res.status).toBe(403);
  expect(await res.json()).toMatchObject({ err: 'forbidden', msg: expect.stringContaining('credential "viewer" may not send commands') });
  const viaCli = await cli(['command', 'mobilize', '--vehicle', V, '--type', 'movement', '--reason', 'paid'], { ADMIN_USER: VIEWER.name, ADMIN_PASSWORD: VIEWER.password });
  expect(viaCli.code).toBe(1);
  expect(viaCli.err).toContain('403 forbidden: credential "viewer" may not send commands');
  const list = await fetch(`${svc.adminUrl}/fleet/commands`, { headers: { authorization: basic(VIEWER) } });
  expect(list.status).toBe(200);
  const wrong = await fetch(`${svc.adminUrl}/fleet/commands`, { headers: { authorization: basic({ name: 'viewer', password: 'wrong-password-000000' }) } });
  expect(wrong.status).toBe(401);
});

it('a mobilise cancels a waiting immobilise of its vehicle, and says what it replaced', async () => {
  const V = plate(5);
  await push([fix(V, 30, 1)]);
  const first = ((await (await ask({ vehicleno: V, command: 'immobilize', type: 'discharge', reason: 'overdue' })).json()) as { data: CommandEntry }).data;
  await until(first.id, 'waiting');
  const res = await ask({ vehicleno: V, command: 'mobilize', type: 'discharge', reason: 'paid after all' }, DISPATCH);
  expect(res.status).toBe(201);
  const second = (await res.json()) as { data: CommandEntry; msg: string };
  expect(second.data.replaces).toBe(first.id);
  expect(second.msg).toContain(`replaces ${first.id} (immobilize discharge), cancelled`);
  const cancelled = await command(first.id);
  expect(cancelled).toMatchObject({ state: 'cancelled', replacedBy: second.data.id });
  expect(cancelled.history.at(-1)!.note).toBe(`replaced by ${second.data.id}`);
  await waitUntil(async () => received.has(`${first.id}.cancelled`), 15_000, 'webhook command.cancelled');
  await until(second.data.id, 'sent', 10_000).catch(() => undefined);
  expect(upstreamCommands(V)).toMatchObject([{ op: 'mobilize', type: 'discharge' }]);
});

it('an automation rule’s command is in the ledger with the rule as its author', async () => {
  const V = plate(6);
  // A drive, parked with the ignition off, then towed 1 km with the ignition still off: moved_while_off.
  const base = Date.now() - 15 * 60_000;
  const rs: unknown[] = [];
  for (let s = 0; s <= 300; s += 10) rs.push(fix(V, 36, 1, base + s * 1000, 12.9 + s * 0.00009, 77.5));
  const parkedLat = 12.9 + 300 * 0.00009;
  for (let s = 310; s <= 600; s += 10) rs.push(fix(V, 0, 0, base + s * 1000, parkedLat, 77.5));
  for (let s = 610; s <= 790; s += 10) rs.push(fix(V, 20, 0, base + s * 1000, parkedLat + ((s - 600) / 10) * 0.0005, 77.5));
  await push(rs);
  await svc.waitForRows(`SELECT * FROM vehicle_events WHERE "event" = 'moved_while_off' AND "vehicleno" = '${V}'`, 1, 30_000);
  let auto: CommandEntry | undefined;
  await waitUntil(async () => (auto = (JSON.parse((await cli(['commands', '--vehicle', V, '--json'])).out) as CommandEntry[])[0]) !== undefined, 15_000, 'the rule’s command');
  expect(auto).toMatchObject({ op: 'immobilize', type: 'discharge', immediate: false, author: { kind: 'rule', name: 'towed-block-discharge' }, reason: expect.stringMatching(/^moved while off: block discharge when safe \(event moved_while_off /) });
  const table = await cli(['commands', '--vehicle', V]);
  expect(table.out).toContain('rule towed-block-discharge');
  const rows = await svc.waitForRows(`SELECT * FROM commands WHERE "vehicleno" = '${V}' AND "state" = 'requested'`, 1);
  expect(rows[0]).toMatchObject({ author: 'towed-block-discharge', author_kind: 'rule' });
});

describe('a send that fails', () => {
  it('with a server error (503) is failed as "may have been carried out", and never sent again', async () => {
    const V = plate(7);
    const before = emulator.state.calls.get('immobilize') ?? 0;
    emulator.state.injectFault({ op: 'immobilize', times: 1, status: 503 });
    const res = await ask({ vehicleno: V, command: 'immobilize', type: 'charge', reason: 'battery lease overdue' });
    const { id } = ((await res.json()) as { data: CommandEntry }).data;
    const failed = await until(id, 'failed');
    expect(failed.history.map((h) => h.state)).toEqual(['requested', 'sending', 'failed']);
    expect(failed.history.at(-1)!.note).toBe('immobilize failed: service_unavailable: injected fault: it may have been carried out; check the vehicle before asking again (never re-sent by the service)');
    // Sweeps go on; the upstream was asked once.
    await new Promise((r) => setTimeout(r, 1_000));
    expect((emulator.state.calls.get('immobilize') ?? 0) - before).toBe(1);
    expect((await command(id)).state).toBe('failed');
  });

  it('answered 429 (the account’s rate limit) is not carried out: it waits again and is sent at its next turn', async () => {
    const V = plate(8);
    const before = emulator.state.calls.get('immobilize') ?? 0;
    emulator.state.injectFault({ op: 'immobilize', times: 1, status: 429, retryAfterSeconds: 1 });
    const res = await ask({ vehicleno: V, command: 'immobilize', type: 'charge', reason: 'battery lease overdue' });
    const { id } = ((await res.json()) as { data: CommandEntry }).data;
    const sent = await until(id, 'sent');
    expect(sent.history.map((h) => h.state)).toEqual(['requested', 'sending', 'waiting', 'sending', 'sent']);
    expect(sent.history[2]!.note).toBe("the service answered 429 (Retry-After 1 s): not carried out; sent again at the account's next turn");
    expect((emulator.state.calls.get('immobilize') ?? 0) - before).toBe(2);
    expect(upstreamCommands(V).filter((c) => c.type === 'charge')).toHaveLength(1);
  });

  it('refused by the upstream (a FAILURE answer) is failed as not carried out', async () => {
    const res = await ask({ vehicleno: 'XX00XX0000', command: 'mobilize', type: 'charge', reason: 'paid' });
    expect(res.status).toBe(201);
    const { id } = ((await res.json()) as { data: CommandEntry }).data;
    const failed = await until(id, 'failed');
    expect(failed.history.at(-1)!.note).toBe('the service refused it (unknown_vehicle: vehicle XX00XX0000 is not in your fleet): not carried out');
    expect(await metric('telematics_commands_total', 'type="charge",outcome="failed"')).toBeGreaterThanOrEqual(1);
  });
});
